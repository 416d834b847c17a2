/**
 * cockatiel's `wrap(retry, circuitBreaker, timeout)` over a random endpoint, with its
 * semantics reimplemented on the simulation clock. Real cockatiel cannot run here: its
 * retry delays and timeout call the global `setTimeout` and its breaker reads
 * `Date.now()`. What is reproduced, from cockatiel 3.2.1's source:
 * - retry (outermost): `maxAttempts` retries after the first try, delays from
 *   `ExponentialBackoff` with its default decorrelated-jitter generator (128 ms initial,
 *   30 s max, exponent 2); every error is handled, including a broken circuit;
 * - circuitBreaker: one breaker for the whole policy, `ConsecutiveBreaker(threshold)`;
 *   open for `halfOpenAfter`, then one test call while the others wait for its verdict
 *   and re-run; a failure of a call that started while closed re-opens it;
 * - timeout (innermost): aggressive, `timeoutMs` per attempt;
 * - the operation picks an endpoint uniformly at random on every attempt.
 */
import { attemptWithTimeout } from './timeout.mjs';

const P_FACTOR = 4.0;
const RP_SCALING = 1 / 1.4;

/** cockatiel's BrokenCircuitError (a plain object here, like the other simulated errors). */
export class BrokenCircuitError {
  constructor() {
    this.kind = 'broken-circuit';
  }
}

export function cockatielContender({ maxAttempts = 3, threshold = 5, halfOpenAfterMs = 5000, timeoutMs = 1000 } = {}) {
  return {
    name: 'cockatiel',
    create({ sched, rng, upstreams }) {
      const breaker = { state: 'closed', failures: 0, openedAt: 0, test: undefined };

      const attempt = () => {
        const u = upstreams[Math.floor(rng.next() * upstreams.length)];
        return attemptWithTimeout(sched, u.request(), timeoutMs);
      };

      const open = () => {
        breaker.state = 'open';
        breaker.openedAt = sched.now();
      };

      async function throughBreaker() {
        switch (breaker.state) {
          case 'closed':
            try {
              const value = await attempt();
              breaker.failures = 0;
              return value;
            } catch (error) {
              if (++breaker.failures >= threshold) open();
              throw error;
            }
          case 'half-open':
            await breaker.test.catch(() => undefined);
            return throughBreaker();
          default:
            if (sched.now() - breaker.openedAt < halfOpenAfterMs) throw new BrokenCircuitError();
            breaker.state = 'half-open';
            breaker.test = (async () => {
              try {
                const value = await attempt();
                breaker.failures = 0;
                breaker.state = 'closed';
                return value;
              } catch (error) {
                open();
                throw error;
              }
            })();
            return breaker.test;
        }
      }

      /** One delay of cockatiel's decorrelatedJitterGenerator; returns [delay, nextState]. */
      const jitter = ([n, prev]) => {
        const t = n + rng.next();
        const next = 2 ** t * Math.tanh(Math.sqrt(P_FACTOR * t));
        const intrinsic = Number.isFinite(next) ? Math.max(0, next - prev) : Number.POSITIVE_INFINITY;
        return [Math.min(intrinsic * RP_SCALING * 128, 30_000), [n + 1, next]];
      };

      async function call() {
        let state = [0, 0];
        for (let retries = 0; ; retries++) {
          try {
            return await throughBreaker();
          } catch (error) {
            if (retries >= maxAttempts) throw error;
            const [delay, next] = jitter(state);
            state = next;
            await sched.sleep(delay);
          }
        }
      }
      return { call, close() {} };
    },
  };
}
