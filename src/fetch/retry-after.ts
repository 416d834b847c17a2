/**
 * `Retry-After` parsing: delta-seconds (`"120"`) or an HTTP date
 * (`"Wed, 21 Oct 2015 07:28:00 GMT"`, or RFC 9110's two obsolete forms: `parseHttpDate`), turned into milliseconds from `nowMs` and clamped
 * to `[0, maxMs]`. Anything unreadable, and a date in the past, yields `undefined` (no
 * hint), so the pool falls back to its own cooldown instead of trusting garbage. A
 * positive wait under one second counts as one second, the header's unit: a hint of
 * `"0.001"` (or a date within the current second) replaced the backoff with 1 ms, and a
 * call retrying until its deadline sent a thousand requests a second to a server that
 * had just said "too many". `"0"` stays 0 (no wait asked: the pool's own backoff applies).
 *
 * A 429 without `Retry-After` may still say when its window resets, in the headers of the
 * API's own convention (`waitAskedMs`): `RateLimit-Reset` (IETF draft, seconds),
 * `X-RateLimit-Reset-After` (seconds), `X-RateLimit-Reset` (seconds, or a Unix time: GitHub and
 * others send one in seconds, some in milliseconds).
 */

/** The longest `Retry-After` honoured by default: a server asking for an hour is not waited on. @default 60000 */
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

/** A non-negative decimal number of seconds (or, in a reset header, a Unix time). */
const NUMBER = /^\d+(\.\d+)?$/;

export function parseRetryAfter(value: string | null | undefined, nowMs: number, maxMs: number = DEFAULT_MAX_RETRY_AFTER_MS): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  let ms: number;
  if (NUMBER.test(text)) {
    ms = Number(text) * 1000;
  } else {
    const at = parseHttpDate(text, nowMs);
    if (at === undefined) return undefined;
    ms = at - nowMs;
    if (ms <= 0) return undefined;
  }
  return clampWait(ms, maxMs);
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MONTH = 'jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = new RegExp(`^(?:mon|tue|wed|thu|fri|sat|sun), (\\d{2}) (${MONTH}) (\\d{4}) ${TIME} GMT$`, 'i');
/** Obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`. */
const RFC_850 = new RegExp(`^(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday), (\\d{2})-(${MONTH})-(\\d{2}) ${TIME} GMT$`, 'i');
/** Obsolete asctime: `Sun Nov  6 08:49:37 1994` (a one-digit day after a space). */
const ASCTIME = new RegExp(`^(?:mon|tue|wed|thu|fri|sat|sun) (${MONTH}) ( \\d|\\d{2}) ${TIME} (\\d{4})$`, 'i');

/**
 * An HTTP-date (RFC 9110 5.6.7) in milliseconds since the epoch: IMF-fixdate, or the obsolete
 * RFC 850 and asctime forms, which recipients must accept; anything else is `undefined`.
 * `Date.parse` is not used: it reads almost anything as a date ("abc 2049" is 1 January 2049,
 * which made garbage a wait of `maxMs`). A two-digit RFC 850 year more than 50 years ahead of
 * `nowMs` is the last such year in the past, as RFC 9110 says.
 */
export function parseHttpDate(text: string, nowMs: number = 0): number | undefined {
  // Each form's fields as [day, month, year, hour, minute, second].
  let f: (string | undefined)[];
  let m = IMF_FIXDATE.exec(text);
  if (m !== null) f = m.slice(1);
  else if ((m = RFC_850.exec(text)) !== null) f = m.slice(1);
  else if ((m = ASCTIME.exec(text)) !== null) f = [m[2], m[1], m[6], m[3], m[4], m[5]];
  else return undefined;
  const [day, month, yearText, h, min, sec] = [Number(f[0]), String(f[1]).toLowerCase(), String(f[2]), Number(f[3]), Number(f[4]), Number(f[5])];
  let year = Number(yearText);
  if (yearText.length === 2) {
    const nowYear = new Date(nowMs).getUTCFullYear();
    year += Math.floor(nowYear / 100) * 100;
    if (year > nowYear + 50) year -= 100;
  }
  if (h > 23 || min > 59 || sec > 60) return undefined; // 60: a leap second
  const at = Date.UTC(year, MONTHS.indexOf(month), day, h, min, sec);
  // Not a day of that month (31 Feb would roll over into March).
  return new Date(Date.UTC(year, MONTHS.indexOf(month), day)).getUTCDate() === day ? at : undefined;
}

/** A wait asked for, in the header's unit at least (a positive wait under one second is one second), at most `maxMs`. */
function clampWait(ms: number, maxMs: number): number {
  if (!Number.isFinite(ms)) return maxMs;
  if (ms > 0 && ms < 1000) ms = 1000;
  return ms > maxMs ? maxMs : ms;
}

/** Reset headers read, in order, when a 429 has no `Retry-After`. */
const RESET_HEADERS = ['ratelimit-reset', 'x-ratelimit-reset-after', 'x-ratelimit-reset'] as const;
/** A reset past this is a Unix time in seconds (2001-09-09), past the next in milliseconds. */
const UNIX_SECONDS = 1e9;
const UNIX_MS = 1e12;

/**
 * The wait an answer asks for, in milliseconds, clamped like `parseRetryAfter`: its
 * `Retry-After`; else, for a 429, the first rate-limit reset header that reads as a time
 * ahead (a reset in the past, or of zero, is no hint).
 */
export function waitAskedMs(get: (name: string) => string | null | undefined, status: number | undefined, nowMs: number, maxMs: number = DEFAULT_MAX_RETRY_AFTER_MS): number | undefined {
  const asked = parseRetryAfter(get('retry-after'), nowMs, maxMs);
  if (asked !== undefined || status !== 429) return asked;
  for (const name of RESET_HEADERS) {
    const text = get(name)?.trim();
    if (text === undefined || !NUMBER.test(text)) continue;
    const n = Number(text);
    const ms = n >= UNIX_MS ? n - nowMs : n >= UNIX_SECONDS ? n * 1000 - nowMs : n * 1000;
    if (ms > 0) return clampWait(ms, maxMs);
  }
  return undefined;
}
