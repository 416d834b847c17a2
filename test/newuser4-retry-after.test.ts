/**
 * Retry-After dates: only RFC 9110's HTTP-date forms (IMF-fixdate, RFC 850, asctime) are read.
 * `Date.parse` read nearly anything as a date: "abc 2049" was a wait of `maxRetryAfterMs`.
 */
import { describe, expect, test } from 'vitest';
import { parseRetryAfter } from '../src/fetch/index.js';

describe('8. Retry-After: HTTP dates only', () => {
  const now = Date.parse('2026-03-01T12:00:00Z');
  test.each([
    ['IMF-fixdate', 'Sun, 01 Mar 2026 12:00:30 GMT', 30_000],
    ['IMF-fixdate, lower case', 'sun, 01 mar 2026 12:00:30 gmt', 30_000],
    ['RFC 850', 'Sunday, 01-Mar-26 12:00:30 GMT', 30_000],
    ['asctime, one-digit day', 'Sun Mar  1 12:00:30 2026', 30_000],
    ['asctime, two-digit day', 'Sun Mar 01 12:00:30 2026', 30_000],
    ['Date#toUTCString()', new Date(now + 5_000).toUTCString(), 5_000],
    ['garbage with a year in it', 'abc 2049', undefined],
    ['a year alone', '2049', 60_000], // delta-seconds: 2,049 s, capped
    ['an ISO date', '2026-03-01T12:00:30Z', undefined],
    ['a date without its zone', 'Sun, 01 Mar 2026 12:00:30', undefined],
    ['another zone', 'Sun, 01 Mar 2026 13:00:30 +0100', undefined],
    ['a day the month lacks', 'Mon, 31 Feb 2026 12:00:30 GMT', undefined],
    ['an hour past 23', 'Sun, 01 Mar 2026 24:00:30 GMT', undefined],
    ['words around a date', 'at Sun, 01 Mar 2026 12:00:30 GMT', undefined],
    ['a single-digit IMF day', 'Sun, 1 Mar 2026 12:00:30 GMT', undefined],
  ])('%s: %j -> %j', (_, value, want) => {
    expect(parseRetryAfter(value, now)).toBe(want);
  });

  test('an RFC 850 year more than 50 years ahead is in the past century', () => {
    // "99" read from 2026 is 1999 (not 2099): in the past, no hint.
    expect(parseRetryAfter('Friday, 01-Jan-99 00:00:00 GMT', now)).toBeUndefined();
  });
});
