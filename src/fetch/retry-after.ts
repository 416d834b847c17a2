/**
 * `Retry-After` parsing: delta-seconds (`"120"`) or an HTTP date
 * (`"Wed, 21 Oct 2015 07:28:00 GMT"`), turned into milliseconds from `nowMs` and clamped
 * to `[0, maxMs]`. Anything unreadable, and a date in the past, yields `undefined` (no
 * hint), so the pool falls back to its own cooldown instead of trusting garbage. A
 * positive wait under one second counts as one second, the header's unit: a hint of
 * `"0.001"` (or a date within the current second) replaced the backoff with 1 ms, and a
 * call retrying until its deadline sent a thousand requests a second to a server that
 * had just said "too many". `"0"` stays 0 (no wait asked: the pool's own backoff applies).
 */

/** The longest `Retry-After` honoured by default: a server asking for an hour is not waited on. @default 60000 */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

export function parseRetryAfter(value: string | null | undefined, nowMs: number, maxMs: number = DEFAULT_MAX_RETRY_AFTER_MS): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(text)) {
    ms = Number(text) * 1000;
  } else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
    if (ms <= 0) return undefined;
  }
  if (!Number.isFinite(ms)) return maxMs;
  if (ms > 0 && ms < 1000) ms = 1000;
  return ms > maxMs ? maxMs : ms;
}
