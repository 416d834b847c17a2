/**
 * Issue 15, mutation rerun: limiter arithmetic, number by number (Stryker on src/limits/*).
 * Pure: plain numbers for time.
 */
import { describe, expect, test } from 'vitest';
import { TokenBucket } from '../../src/limits/bucket.js';
import { RetryBudget } from '../../src/limits/budget.js';
import { LEARNED_MAX_PER_SECOND, LEARNED_MIN_PER_SECOND, LearnedCeiling, clampLearned } from '../../src/limits/ceiling.js';
import { DailyCounter, nextDailyReset } from '../../src/limits/daily.js';
import { MAX_SLOTS, PacedLimiter } from '../../src/limits/paced.js';
import { Quota, keyLevel, type ResolvedRateLimit } from '../../src/limits/quota.js';
import { RollingCounter } from '../../src/limits/window.js';

const DAY = 86_400_000;

function limit(over: Partial<ResolvedRateLimit>): ResolvedRateLimit {
  return { perSecond: 2, burst: undefined, mode: 'bucket', marginMs: 25, perDay: undefined, dailyStopFraction: 0.95, ...over };
}

describe('TokenBucket', () => {
  test('tryTake takes only when a token is there', () => {
    const b = new TokenBucket(1, 1, 0);
    expect(b.tryTake(0)).toBe(true);
    expect(b.tryTake(0)).toBe(false);
    expect(b.tokens(0)).toBe(0);
    expect(b.tryTake(999)).toBe(false);
    expect(b.tryTake(1000)).toBe(true);
  });

  test('waitMs rounds up and is at least 1 ms; intervalMs is 1000 / rate', () => {
    const b = new TokenBucket(3, 1, 0);
    b.take(0);
    expect(b.waitMs(0)).toBe(334);
    expect(b.waitMs(333)).toBe(1);
    expect(b.waitMs(334)).toBe(0);
    expect(b.intervalMs).toBeCloseTo(333.333, 3);
    const fast = new TokenBucket(1_000_000, 1, 0);
    fast.take(0);
    fast.take(0);
    expect(fast.waitMs(0)).toBe(1);
  });

  test('an initial fill above the burst is capped; a rescaled bucket keeps the fraction', () => {
    expect(new TokenBucket(1, 4, 0, 10).tokens(0)).toBe(4);
    expect(new TokenBucket(1, 4, 0, 2).tokens(0)).toBe(2);
    const b = new TokenBucket(10, 4, 0);
    b.take(0); // 3 of 4
    const r = b.rescaled(20, 8, 0);
    expect(r.tokens(0)).toBe(6);
    expect([r.perSecond, r.burst]).toEqual([20, 8]);
  });

  test('refill is by elapsed time, from the last update', () => {
    const b = new TokenBucket(10, 5, 0);
    for (let i = 0; i < 5; i++) b.take(0);
    expect(b.tokens(100)).toBeCloseTo(1, 9);
    expect(b.tokens(300)).toBeCloseTo(3, 9);
    expect(b.tokens(10_000)).toBe(5);
  });
});

describe('PacedLimiter', () => {
  test('spacing with the margin, then the window of the last perSecond starts', () => {
    const p = new PacedLimiter(2, 0);
    expect(p.waitMs(0)).toBe(0);
    p.take(0);
    expect(p.waitMs(0)).toBe(500);
    expect(p.waitMs(499.5)).toBe(1);
    p.take(500);
    // Two in the window [0, 1000): the third waits for the first to leave.
    expect(p.waitMs(1000)).toBe(0);
    expect(p.intervalMs).toBe(500);
    expect(p.perSecond).toBe(2);
  });

  test('a rate below 1: one slot, spaced 1000 / rate', () => {
    const p = new PacedLimiter(0.5, 25);
    p.take(0);
    expect(p.waitMs(0)).toBe(2050);
    expect(p.intervalMs).toBeCloseTo(2050, 9);
  });

  test('above MAX_SLOTS a second, the window covers MAX_SLOTS spacings', () => {
    const p = new PacedLimiter(1000, 0);
    for (let i = 0; i < MAX_SLOTS; i++) p.take(i);
    // The 65th call: the ring's oldest (t=0) must leave a window of 64 × 1 ms.
    expect(p.waitMs(MAX_SLOTS - 1 + 1)).toBe(0);
    expect(p.intervalMs).toBe(1);
    const q = new PacedLimiter(64, 0);
    expect(q.intervalMs).toBe(1000 / 64);
  });

  test('recalibrate keeps the newest starts that fit the new ring', () => {
    const p = new PacedLimiter(4, 0);
    p.take(0);
    p.take(250);
    p.take(500);
    p.recalibrate(2);
    expect(p.perSecond).toBe(2);
    // Newest two kept (250, 500): next at max(500 + 500, 250 + 1000).
    expect(p.waitMs(500)).toBe(750);
    const fresh = new PacedLimiter(4, 0);
    fresh.recalibrate(1);
    expect(fresh.waitMs(0)).toBe(0);
  });
});

describe('RollingCounter', () => {
  test('rate over a young counter is over its age, at least a second', () => {
    const c = new RollingCounter(15, 60_000);
    expect(c.rate(0, 2)).toBe(0);
    for (let i = 0; i < 6; i++) c.add(10_000);
    expect(c.rate(10_000, 2)).toBe(6);
    expect(c.rate(13_000, 2)).toBe(2);
    // Older than two buckets: the span starts at the older of the two buckets.
    c.add(200_000);
    expect(c.rate(200_000, 2)).toBeCloseTo(1 / 80, 9); // one event over the 80 s since bucket 2 began
  });

  test('sum rounds the span up to whole buckets and skips what a gap cleared', () => {
    const c = new RollingCounter(3, 1000);
    c.add(0);
    c.add(1000, 2);
    c.add(2000, 4);
    expect(c.sum(2000, 1)).toBe(4);
    expect(c.sum(2000, 1001)).toBe(6);
    expect(c.sum(2000, 100_000)).toBe(7);
    expect(c.sum(3000, 3000)).toBe(6);
    expect(c.sum(4500, 3000)).toBe(4);
    expect(c.sum(10_000, 3000)).toBe(0);
  });
});

describe('RetryBudget', () => {
  test('allowed = max(ratio × calls, floor × window); exactly that many', () => {
    const b = new RetryBudget(0.5, 0.1, 10_000); // floor: 1 per window
    expect(b.tryWithdraw(0)).toBe(true);
    expect(b.tryWithdraw(0)).toBe(false);
    for (let i = 0; i < 6; i++) b.deposit(0); // 3 allowed
    expect(b.tryWithdraw(0)).toBe(true);
    expect(b.tryWithdraw(0)).toBe(true);
    expect(b.tryWithdraw(0)).toBe(false);
    // Ten seconds later everything has aged out: the floor again.
    expect(b.tryWithdraw(10_000)).toBe(true);
    expect(b.tryWithdraw(10_000)).toBe(false);
  });
});

describe('DailyCounter', () => {
  test('the next reset is strictly after now, at the reset hour', () => {
    expect(nextDailyReset(0, 0)).toBe(DAY);
    expect(nextDailyReset(DAY - 1, 0)).toBe(DAY);
    expect(nextDailyReset(DAY, 0)).toBe(2 * DAY);
    expect(nextDailyReset(0, 6)).toBe(6 * 3_600_000);
    expect(nextDailyReset(7 * 3_600_000, 6)).toBe(DAY + 6 * 3_600_000);
  });

  test('stops at floor(perDay × fraction), at least 1; counts roll over at the reset', () => {
    expect(new DailyCounter(100, 0.95, 0, 0).stopAt).toBe(95);
    expect(new DailyCounter(1, 0.5, 0, 0).stopAt).toBe(1);
    const d = new DailyCounter(2, 1, 0, 0);
    d.take(0);
    expect(d.waitMs(0)).toBe(0);
    d.take(10);
    expect(d.count(10)).toBe(2);
    expect(d.waitMs(10)).toBe(DAY - 10);
    expect(d.waitMs(DAY)).toBe(0);
    expect(d.count(DAY)).toBe(0);
  });

  test('exhaust parks until the reset; on the wall clock when one is given', () => {
    let wall = 5 * 3_600_000;
    const d = new DailyCounter(10, 1, 0, 0, () => wall);
    expect(d.exhaust(100)).toBe(100 + DAY - 5 * 3_600_000);
    expect(d.waitMs(100)).toBe(DAY - 5 * 3_600_000);
    wall = DAY;
    expect(d.waitMs(200)).toBe(0);
  });
});

describe('LearnedCeiling', () => {
  const R = { quietMs: 30_000, stepMs: 10_000, stepFraction: 0.1 };

  test('clamps into the learned range', () => {
    expect(clampLearned(0)).toBe(LEARNED_MIN_PER_SECOND);
    expect(clampLearned(1e12)).toBe(LEARNED_MAX_PER_SECOND);
    expect(clampLearned(7)).toBe(7);
    expect(clampLearned(LEARNED_MIN_PER_SECOND)).toBe(LEARNED_MIN_PER_SECOND);
  });

  test('recovers after the quiet period by steps of 10 %, then 20 %, 40 % … of the target, landing on the target', () => {
    const c = new LearnedCeiling(5, 20, 0);
    expect(c.recover(29_999, R)).toBe(false);
    expect(c.recover(30_000, R)).toBe(true);
    expect([c.value, c.run, c.changedAt]).toEqual([7, 1, 30_000]);
    expect(c.recover(39_999, R)).toBe(false);
    // Two steps due at once (40 s and 50 s): +4, +8.
    expect(c.recover(55_000, R)).toBe(true);
    expect([c.value, c.run, c.changedAt]).toEqual([19, 3, 50_000]);
    expect(c.recover(59_999, R)).toBe(false);
    expect(c.recover(60_000, R)).toBe(true);
    expect(c.value).toBe(20);
    expect(c.recover(1e9, R)).toBe(false);
  });

  test('under pressure: a quarter of the quiet period, steps twice as often; once begun, a recovery goes on without it', () => {
    const c = new LearnedCeiling(5, 20, 0);
    expect(c.recover(7_499, R, true)).toBe(false);
    expect(c.recover(7_500, R, true)).toBe(true);
    expect([c.value, c.changedAt]).toEqual([7, 7_500]);
    expect(c.recover(12_499, R, true)).toBe(false);
    expect(c.recover(12_500, R, true)).toBe(true);
    expect(c.value).toBe(11);
    // Pressure gone: the next step comes one whole stepMs after the last one.
    expect(c.recover(22_499, R)).toBe(false);
    expect(c.recover(22_500, R)).toBe(true);
    expect(c.value).toBe(19);
  });

  test('a hint that takes a recovery back doubles the quiet period (up to × 8); reaching the target resets it', () => {
    const c = new LearnedCeiling(5, 20, 0);
    let t = 0;
    for (const [k, quiet] of [[1, 60_000], [2, 120_000], [3, 240_000], [3, 240_000]] as const) {
      const due = t + c.quietMs(R, false);
      expect(c.recover(due - 1, R)).toBe(false);
      expect(c.recover(due, R)).toBe(true);
      t = due + 1;
      c.set(5, t, 20);
      expect(c.fails).toBe(k);
      expect(c.quietMs(R, false)).toBe(quiet);
      expect(c.quietMs(R, true)).toBe(quiet / 4);
    }
    // A recovery taken back by a lower number than the last one is a limit that fell again,
    // not a failed recovery: the quiet period stays; taken back at that new number, it doubles.
    const e = new LearnedCeiling(5, 20, 0);
    expect(e.recover(e.quietMs(R, false), R)).toBe(true);
    e.set(2, 100_000, 20);
    expect([e.fails, e.quietMs(R, false)]).toEqual([0, R.quietMs]);
    expect(e.recover(100_000 + R.quietMs, R)).toBe(true);
    e.set(2, 200_000, 20);
    expect([e.fails, e.quietMs(R, false)]).toEqual([1, 2 * R.quietMs]);
    // A hint with no recovery step before it is not a failed recovery.
    const d = new LearnedCeiling(5, 20, 0);
    d.set(4, 100, 20);
    expect(d.fails).toBe(0);
    expect(c.recover(1e9, R)).toBe(true);
    expect([c.value, c.fails]).toEqual([20, 0]);
  });

  test('the same number again, for a call sent at the pace in force: 5 % under it each time, down to 80 % of it', () => {
    const c = new LearnedCeiling(3, 10, 0);
    c.set(3, 1000, 10, 500);
    expect(c.value).toBeCloseTo(2.85, 9);
    c.set(3, 2000, 10, 1500);
    expect(c.value).toBeCloseTo(2.7075, 9);
    for (let t = 3000; t < 20_000; t += 1000) c.set(3, t, 10, t - 500);
    expect(c.value).toBeCloseTo(2.4, 9);
    // A call sent before the last change was not paced by it: the number is taken as said.
    c.set(3, 30_000, 10, 18_000);
    expect(c.value).toBe(3);
    // Another number is news, not a repeat.
    c.set(2, 31_000, 10, 30_500);
    expect(c.value).toBe(2);
  });

  test('set: the configured target, else the highest ever said; limited restarts the quiet period', () => {
    const c = new LearnedCeiling(5, 3, 0);
    expect(c.target).toBe(5);
    c.set(8, 100, undefined);
    expect([c.value, c.target, c.changedAt, c.limitedAt]).toEqual([8, 8, 100, 100]);
    c.set(2, 200, undefined);
    expect(c.target).toBe(8);
    c.set(2, 300, 4);
    expect(c.target).toBe(4);
    c.limited(20_000);
    expect(c.recover(40_000, R)).toBe(false);
    expect(c.recover(50_000, R)).toBe(true);
  });
});

describe('Quota', () => {
  test('waitMs is the longer of the cooldown and the rate; etaMs adds an interval per call ahead', () => {
    const q = new Quota(limit({ perSecond: 2 }), 0, 0);
    expect(q.waitMs(0)).toBe(0);
    q.coolDown(0, 300);
    expect(q.waitMs(100)).toBe(200);
    q.coolDown(0, 100); // a shorter cooldown does not cut the longer one
    expect(q.waitMs(100)).toBe(200);
    q.take(300);
    q.take(300);
    expect(q.waitMs(300)).toBe(500);
    expect(q.etaMs(300, 0)).toBe(500);
    expect(q.etaMs(300, 3)).toBe(2000);
    const free = new Quota(undefined, 0, 0);
    expect(free.etaMs(0, 5)).toBe(0);
    expect(free.perSecond).toBeUndefined();
  });

  test('a bucket defaults its burst to ceil(perSecond), at least 1; paced mode paces', () => {
    const q = new Quota(limit({ perSecond: 2.5 }), 0, 0);
    expect((q.rate as TokenBucket).burst).toBe(3);
    expect((new Quota(limit({ perSecond: 0.5 }), 0, 0).rate as TokenBucket).burst).toBe(1);
    expect((new Quota(limit({ perSecond: 2, burst: 7 }), 0, 0).rate as TokenBucket).burst).toBe(7);
    expect(new Quota(limit({ perSecond: 2, mode: 'paced' }), 0, 0).rate).toBeInstanceOf(PacedLimiter);
  });

  test('blockedMs: parked or the day spent, whichever is longer', () => {
    const q = new Quota(limit({ perSecond: undefined, perDay: 1, dailyStopFraction: 1 }), 0, 0);
    expect(q.blockedMs(0)).toBe(0);
    q.take(0);
    expect(q.blockedMs(1000)).toBe(DAY - 1000);
    q.parkedUntil = 2 * DAY;
    expect(q.blockedMs(1000)).toBe(2 * DAY - 1000);
    const p = new Quota(undefined, 0, 0);
    expect(p.park(1000)).toBe(DAY);
    expect(p.blockedMs(1000)).toBe(DAY - 1000);
  });

  test('degrade scales the ceiling and starts the bucket at most share full; restore brings both back', () => {
    const q = new Quota(limit({ perSecond: 10, burst: 10 }), 0, 0);
    q.degrade(0.5, 0);
    const b = q.rate as TokenBucket;
    expect([b.perSecond, b.burst, b.tokens(0)]).toEqual([5, 5, 2.5]);
    expect(q.ceilingPerSecond).toBe(10);
    q.degrade(0.25, 0); // already degraded: unchanged
    expect((q.rate as TokenBucket).perSecond).toBe(5);
    q.restore(0);
    const r = q.rate as TokenBucket;
    expect([r.perSecond, r.burst]).toEqual([10, 10]);
    expect(r.tokens(0)).toBeCloseTo(5, 9);
    expect(q.ceilingPerSecond).toBe(10);
    q.restore(0); // not degraded: nothing
    expect((q.rate as TokenBucket).perSecond).toBe(10);
  });

  test('degrade with a hold cools the quota down; a paced quota is recalibrated', () => {
    const q = new Quota(limit({ perSecond: 4, mode: 'paced' }), 0, 0);
    q.degrade(0.5, 0, 700);
    expect(q.waitMs(0)).toBe(700);
    expect(q.perSecond).toBe(2);
    q.recalibrate(8, 0); // while degraded: at the share
    expect(q.perSecond).toBe(4);
    expect(q.ceilingPerSecond).toBe(8);
    q.restore(0);
    expect(q.perSecond).toBe(8);
    const none = new Quota(undefined, 0, 0);
    none.degrade(0.5, 0, 700);
    expect(none.waitMs(0)).toBe(0);
  });

  test('learn clamps, installs a paced limiter when none, and recovers toward the configured rate', () => {
    const q = new Quota(undefined, 0, 0, 'endpoint:a');
    expect(q.learn(1e12, 0)).toBe(LEARNED_MAX_PER_SECOND);
    expect(q.rate).toBeInstanceOf(PacedLimiter);
    const c = new Quota(limit({ perSecond: 10 }), 0, 0);
    expect(c.learn(5, 0)).toBe(5);
    expect(c.perSecond).toBe(5);
    expect(c.recover(29_999, { quietMs: 30_000, stepMs: 10_000, stepFraction: 0.1 })).toBeUndefined();
    expect(c.recover(30_000, { quietMs: 30_000, stepMs: 10_000, stepFraction: 0.1 })).toBe(6);
    expect(c.perSecond).toBe(6);
    expect(new Quota(undefined, 0, 0).recover(0, { quietMs: 0, stepMs: 1, stepFraction: 1 })).toBeUndefined();
  });

  test('keys and groups', () => {
    expect(new Quota(undefined, 0, 0, 'group:a+b').grouped).toBe(true);
    expect(new Quota(undefined, 0, 0, 'endpoint:a').grouped).toBe(false);
    const group = new Quota(limit({ marginMs: 40 }), 0, 0, 'group:a+b');
    const key = keyLevel(group, 'a', 0, 0);
    expect(key.rate).toBeUndefined();
    expect(key.marginMs).toBe(40);
    expect(key.shared?.key).toBe('key:a');
    expect(key.shared?.mode).toBe('paced');
    expect(new Quota(undefined, 0, 0).marginMs).toBe(25);
  });
});
