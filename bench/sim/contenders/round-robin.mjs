/**
 * The naive baseline: rotate over the endpoints, give each attempt a timeout, and on any
 * failure try the next endpoint at once, up to `tries` attempts. No breaker, no backoff,
 * no notion of a rate limit.
 */
import { attemptWithTimeout } from './timeout.mjs';

export function roundRobinContender({ tries = 3, attemptTimeoutMs = 1000 } = {}) {
  return {
    name: 'round-robin',
    create({ sched, upstreams }) {
      let cursor = 0;
      async function call() {
        let lastError;
        for (let i = 0; i < tries; i++) {
          const u = upstreams[cursor];
          cursor = (cursor + 1) % upstreams.length;
          try {
            return await attemptWithTimeout(sched, u.request(), attemptTimeoutMs);
          } catch (error) {
            lastError = error;
          }
        }
        throw lastError;
      }
      return { call, close() {} };
    },
  };
}
