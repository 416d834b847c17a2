/**
 * Issue 15, limiters mutation rerun: Quota parts added since the first rerun: the group's
 * ring of accepted start times (`acceptedMoreThan`), a key's own window-only level, and the
 * lower of an adaptive limit and a learned ceiling. Pure: plain numbers for time.
 */
import { describe, expect, test } from 'vitest';
import { TokenBucket } from '../../src/limits/bucket.js';
import { PacedLimiter } from '../../src/limits/paced.js';
import { ACCEPTED_KEPT, Quota, keyLevel, type ResolvedRateLimit } from '../../src/limits/quota.js';
import { ADAPTIVE_DEFAULTS } from '../../src/limits/adaptive.js';

function limit(over: Partial<ResolvedRateLimit>): ResolvedRateLimit {
  return { perSecond: 2, burst: undefined, mode: 'bucket', marginMs: 25, perDay: undefined, dailyStopFraction: 0.95, ...over };
}

const adaptive = (min: number, max: number) => ({ ...ADAPTIVE_DEFAULTS, min, max });

function group(): Quota {
  return new Quota(limit({ perSecond: 5, mode: 'paced' }), 0, 0, 'group:a+b');
}

describe('Quota.acceptedMoreThan (a group proves a key hint is not the group limit)', () => {
  test('more than n accepted starts within the span', () => {
    const g = group();
    for (const t of [0, 100, 200]) g.noteAccepted(t);
    expect(g.acceptedMoreThan(2, 1000, 0)).toBe(true);
    expect(g.acceptedMoreThan(1, 150, 0)).toBe(true);
    // Not three within 200 ms: the span is strict.
    expect(g.acceptedMoreThan(2, 200, 0)).toBe(false);
    expect(g.acceptedMoreThan(2, 201, 0)).toBe(true);
    // Fractional n: floor(n) + 1 starts are needed.
    expect(g.acceptedMoreThan(2.5, 1000, 0)).toBe(true);
    expect(g.acceptedMoreThan(3, 1000, 0)).toBe(false);
  });

  test('only starts since `since` count (inclusive)', () => {
    const g = group();
    for (const t of [0, 100, 200]) g.noteAccepted(t);
    expect(g.acceptedMoreThan(2, 1000, 0)).toBe(true);
    expect(g.acceptedMoreThan(2, 1000, 1)).toBe(false);
    expect(g.acceptedMoreThan(1, 1000, 100)).toBe(true);
    expect(g.acceptedMoreThan(1, 1000, 101)).toBe(false);
  });

  test('starts noted out of order are compared in time order', () => {
    const g = group();
    for (const t of [0, 5000, 4000]) g.noteAccepted(t);
    expect(g.acceptedMoreThan(1, 500, 0)).toBe(false);
    expect(g.acceptedMoreThan(1, 1001, 0)).toBe(true);
  });

  test('cannot tell: under 1, or n of ACCEPTED_KEPT or more, or nothing noted', () => {
    const g = group();
    expect(g.acceptedMoreThan(1, 1000, 0)).toBe(false);
    for (let i = 0; i < ACCEPTED_KEPT + 10; i++) g.noteAccepted(0);
    expect(g.acceptedMoreThan(0.5, 1000, 0)).toBe(false);
    expect(g.acceptedMoreThan(ACCEPTED_KEPT - 1, 1000, 0)).toBe(true);
    expect(g.acceptedMoreThan(ACCEPTED_KEPT, 1000, 0)).toBe(false);
  });

  test('the ring keeps the newest ACCEPTED_KEPT starts, replacing the oldest first', () => {
    const g = group();
    for (let i = 0; i < ACCEPTED_KEPT; i++) g.noteAccepted(i * 10_000); // one every 10 s
    expect(g.acceptedMoreThan(1, 5000, 0)).toBe(false);
    g.noteAccepted(10_000_000);
    g.noteAccepted(10_000_100);
    expect(g.acceptedMoreThan(1, 5000, 0)).toBe(true);
    // Those two replaced the starts at 0 and 10 s: the 62 left from 20 s on, plus the two.
    expect(g.acceptedMoreThan(ACCEPTED_KEPT - 1, 1e9, 20_000)).toBe(true);
  });

  test('outside a group nothing is noted', () => {
    const q = new Quota(limit({ perSecond: 5 }), 0, 0, 'endpoint:a');
    for (const t of [0, 1, 2]) q.noteAccepted(t);
    expect(q.acceptedMoreThan(1, 1000, 0)).toBe(false);
  });
});

describe("a key's own level", () => {
  test('a learned ceiling installs a window-only paced limiter (the group spaces the calls)', () => {
    const key = keyLevel(group(), 'a', 0, 0);
    key.learn(2, 0);
    const p = key.rate as PacedLimiter;
    expect(p).toBeInstanceOf(PacedLimiter);
    expect(p.spaced).toBe(false);
    key.take(0);
    expect(key.waitMs(0)).toBe(0);
    key.take(0);
    expect(key.waitMs(0)).toBe(1025);
  });

  test('a group or endpoint quota paces with spacing', () => {
    expect((group().rate as PacedLimiter).spaced).toBe(true);
    const e = new Quota(undefined, 0, 0, 'endpoint:a');
    e.learn(2, 0);
    expect((e.rate as PacedLimiter).spaced).toBe(true);
    e.take(0);
    expect(e.waitMs(0)).toBe(513);
  });
});

describe('adaptive limit and learned ceiling', () => {
  test('the lower of the two is in force, whichever changed', () => {
    const q = new Quota(limit({ perSecond: 10, mode: 'paced', adaptive: adaptive(1, 10) }), 0, 0);
    expect(q.perSecond).toBe(10);
    q.adaptive!.rate = 4;
    q.adapted(0);
    expect(q.perSecond).toBe(4);
    q.learn(6, 0); // above the adaptive rate: the adaptive rate stays in force
    expect(q.perSecond).toBe(4);
    q.learn(3, 0);
    expect(q.perSecond).toBe(3);
    q.adaptive!.rate = 5;
    q.adapted(0); // the learned 3 is lower
    expect(q.perSecond).toBe(3);
    q.adaptive!.rate = 2;
    q.adapted(0);
    expect(q.perSecond).toBe(2);
    q.adaptive!.rate = 3;
    q.adapted(0); // equal: either
    expect(q.perSecond).toBe(3);
  });

  test('an adaptive bucket keeps its fill when the rate moves; a fixed one starts full', () => {
    const a = new Quota(limit({ perSecond: 4, adaptive: adaptive(1, 4) }), 0, 0);
    for (let i = 0; i < 4; i++) a.take(0);
    a.adaptive!.rate = 2;
    a.adapted(0);
    const b = a.rate as TokenBucket;
    expect([b.perSecond, b.burst, b.tokens(0)]).toEqual([2, 2, 0]);
    const f = new Quota(limit({ perSecond: 4 }), 0, 0);
    for (let i = 0; i < 4; i++) f.take(0);
    f.recalibrate(2, 0);
    expect((f.rate as TokenBucket).tokens(0)).toBe(2);
  });

  test('take counts the attempt for the adaptive busy test', () => {
    const q = new Quota(limit({ perSecond: 2, mode: 'paced', adaptive: adaptive(1, 100) }), 0, 0);
    // Sending all the limiter allows for 10 s: busy, so the rate grows.
    for (let t = 0; t < 10_000; t += 500) q.take(t);
    expect(q.adaptive!.increase(10_000, 500)).toBeGreaterThan(2);
    const idle = new Quota(limit({ perSecond: 2, mode: 'paced', adaptive: adaptive(1, 100) }), 0, 0);
    expect(idle.adaptive!.increase(10_000, 500)).toBeUndefined();
  });
});

describe('Quota edges', () => {
  const DAY = 86_400_000;
  const HOUR = 3_600_000;

  test('no rate limit: nothing shared, no ceiling; a cooldown that passed is no wait', () => {
    const q = new Quota(undefined, 0, 0);
    expect(q.shared).toBeUndefined();
    expect(q.ceilingPerSecond).toBeUndefined();
    q.coolDown(0, 100);
    expect(q.waitMs(50)).toBe(50);
    expect(q.waitMs(500)).toBe(0);
    expect(new Quota(limit({}), 3, 0).shared).toEqual({ key: '', ...limit({}), dailyResetUtcHour: 3 });
  });

  test('park without a daily count: until the next reset on the wall clock', () => {
    const q = new Quota(undefined, 0, 10 * DAY, 'endpoint:a', () => DAY + HOUR);
    expect(q.park(10 * DAY)).toBe(10 * DAY + 23 * HOUR);
  });

  test('a fixed bucket recalibrated starts full, its burst ceil(perSecond)', () => {
    const q = new Quota(limit({ perSecond: 4 }), 0, 0);
    q.recalibrate(2.5, 0);
    const b = q.rate as TokenBucket;
    expect([b.perSecond, b.burst, b.tokens(0)]).toEqual([2.5, 3, 3]);
  });

  test('recalibrated while not degraded, then degraded: the share of the new ceiling', () => {
    const q = new Quota(limit({ perSecond: 10 }), 0, 0);
    q.recalibrate(4, 0);
    q.degrade(0.5, 0);
    expect(q.perSecond).toBe(2);
    expect(q.ceilingPerSecond).toBe(4);
  });

  test('degrading a bucket keeps its fill fraction (at most the share); recalibrating while degraded keeps the fill; restore gives ceil(perSecond) burst', () => {
    const q = new Quota(limit({ perSecond: 10, burst: 10 }), 0, 0);
    for (let i = 0; i < 8; i++) q.take(0); // 2 of 10 left
    q.degrade(0.5, 0);
    const d = q.rate as TokenBucket;
    expect([d.perSecond, d.burst, d.tokens(0)]).toEqual([5, 5, 1]);
    q.take(0); // empty
    q.recalibrate(4, 0);
    const r = q.rate as TokenBucket;
    expect([r.perSecond, r.burst, r.tokens(0)]).toEqual([2, 2, 0]);
    q.restore(0);
    const back = q.rate as TokenBucket;
    expect([back.perSecond, back.burst]).toEqual([4, 4]);
    expect(back.tokens(0)).toBe(0);
  });

  test('a tiny degraded ceiling still has a bucket of one', () => {
    const q = new Quota(limit({ perSecond: 1 }), 0, 0);
    q.degrade(0.25, 0);
    q.recalibrate(1, 0);
    expect((q.rate as TokenBucket).burst).toBe(1);
    expect(q.perSecond).toBe(0.25);
  });
});
