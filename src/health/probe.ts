/**
 * Health probing: one caller-supplied probe per endpoint, all at once.
 *
 * Endpoints whose breaker is strictly open are left out of the report ("recovering, no
 * data"), not reported as failures. Probes bypass the concurrency permit and every rate
 * limiter on purpose, so liveness checks are never starved by the quota they observe,
 * and their results never feed the breakers: passive health comes from real traffic,
 * probing only observes it.
 */
import { LazyContext, type Operation } from '../call/context.js';
import type { EndpointState } from '../selection/endpoint.js';
import { PoolError } from '../base/errors.js';
import { METRICS } from '../base/metrics.js';
import type { PoolState } from '../state.js';
import { durationOrInfinity, plainObject } from '../options/validate.js';
import { ownWorkBound } from '../options/defaults.js';

export type ProbeResult =
  | { readonly endpoint: string; readonly ok: true; readonly durationMs: number }
  | { readonly endpoint: string; readonly ok: false; readonly durationMs: number; readonly error: unknown; readonly timedOut: boolean };

/** `pool.probeHealth(probe, options)`: checks `options` (a rejection, not a throw), then probes. */
export function probeEndpoints<C>(s: PoolState<C>, probe: Operation<C, unknown>, options: unknown): Promise<ProbeResult[]> {
  // A probe with no bound at all (a pool with no attempt timeout) kept its round, and whoever awaited it, waiting for good.
  let timeoutMs = ownWorkBound(s.opts.attemptTimeoutMs, s.opts.deadlineMs);
  try {
    if (options !== undefined) timeoutMs = durationOrInfinity('timeoutMs', plainObject('options', options)?.['timeoutMs'], timeoutMs);
  } catch (error) {
    return Promise.reject(error);
  }
  const now = s.clock.now();
  const runs: Promise<ProbeResult>[] = [];
  for (const ep of s.endpoints) {
    if (!ep.breaker.isStrictlyOpen(now)) runs.push(probeOne(s, ep, probe, timeoutMs));
  }
  return Promise.all(runs);
}

function probeOne<C>(s: PoolState<C>, ep: EndpointState<C>, probe: Operation<C, unknown>, timeoutMs: number): Promise<ProbeResult> {
  const startedAt = s.clock.now();
  const ctx = new LazyContext(ep.name, 1, timeoutMs === Infinity ? timeoutMs : startedAt + timeoutMs, s.features.signals);
  return new Promise<ProbeResult>((resolve) => {
    let done = false;
    let timer: unknown;
    const finish = (ok: boolean, error: unknown, timedOut: boolean): void => {
      if (done) return;
      done = true;
      s.probes.delete(cut);
      if (timer !== undefined) s.clock.clearTimeout(timer);
      const durationMs = s.clock.now() - startedAt;
      if (ok) return resolve({ endpoint: ep.name, ok: true, durationMs });
      s.count(METRICS.probeFailures, ep.labels);
      resolve({ endpoint: ep.name, ok: false, durationMs, error, timedOut });
    };
    // close() ends a probe still running, as it ends the calls that wait: its signal aborts, its timer goes.
    const cut = (error: PoolError): void => {
      ctx.abort(error);
      finish(false, error, false);
    };
    s.probes.add(cut);
    // An earlier probe of this round closed the pool, synchronously: this one is not sent.
    if (s.closed) return cut(new PoolError('CLOSED', 'the pool was closed while probing'));
    if (timeoutMs !== Infinity) {
      timer = s.clock.setTimeout(() => {
        timer = undefined;
        const error = new PoolError('ATTEMPT_TIMEOUT', `probe of endpoint ${JSON.stringify(ep.name)} timed out after ${timeoutMs} ms`, { endpoint: ep.name });
        ctx.abort(error);
        finish(false, error, true);
      }, timeoutMs);
    }
    try {
      Promise.resolve(probe(ep.conn, ctx)).then(
        () => finish(true, undefined, false),
        (error: unknown) => finish(false, error, false),
      );
    } catch (error) {
      finish(false, error, false);
    }
  });
}
