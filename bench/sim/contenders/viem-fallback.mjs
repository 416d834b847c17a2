/**
 * viem's `fallback` transport semantics, reimplemented on the simulation clock (viem
 * itself reads the real clock):
 * - every call starts at the first transport and walks the list in order, moving on at
 *   the first error;
 * - when the whole pass fails, the call is retried from the first transport, up to
 *   `retryCount` (default 3) more times, after 150 ms × 2^n (n = 0, 1, 2), or after the
 *   server's Retry-After when the last error carried one;
 * - each attempt runs under the http transport's timeout (10 s by default);
 * - no breaker, no rate limit, no whole-call deadline. (`rank` is off by default.)
 */
import { attemptWithTimeout } from './timeout.mjs';

export function viemFallbackContender({ retryCount = 3, retryDelayMs = 150, timeoutMs = 10_000 } = {}) {
  return {
    name: 'viem-fallback',
    create({ sched, upstreams }) {
      async function pass() {
        let lastError;
        for (const u of upstreams) {
          try {
            return await attemptWithTimeout(sched, u.request(), timeoutMs);
          } catch (error) {
            lastError = error;
          }
        }
        throw lastError;
      }
      async function call() {
        for (let n = 0; ; n++) {
          try {
            return await pass();
          } catch (error) {
            if (n >= retryCount) throw error;
            const delay = error.retryAfterMs !== undefined ? error.retryAfterMs : retryDelayMs * 2 ** n;
            await sched.sleep(delay);
          }
        }
      }
      return { call, close() {} };
    },
  };
}
