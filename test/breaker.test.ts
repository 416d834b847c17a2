import { describe, expect, test } from 'vitest';
import { Breaker } from '../src/health/breaker.js';
import { resolveBreaker } from './helpers/breaker-options.js';

const opts = resolveBreaker({ threshold: 3, cooldownMs: 1000, maxCooldownMs: 4000 });

function failN(b: Breaker, n: number, now = 0): boolean[] {
  const out: boolean[] = [];
  for (let i = 0; i < n; i++) out.push(b.recordFailure(b.generation, 0, now));
  return out;
}

describe('Breaker', () => {
  test.each([
    [1, [true]],
    [2, [false, true]],
    [3, [false, false, true]],
    [5, [false, false, false, false, true]],
  ])('threshold %i opens on exactly that failure', (threshold, expected) => {
    const b = new Breaker({ ...opts, threshold });
    expect(failN(b, threshold)).toEqual(expected);
    expect(b.state(0)).toEqual({ state: 'open', untilMs: 1000 });
  });

  test('failures past the threshold do not re-trip an open breaker', () => {
    const b = new Breaker(opts);
    const gen = b.generation;
    failN(b, 3);
    // Attempts that started before the opening report late: not counted, not transitions.
    expect(b.recordFailure(gen, 0, 10)).toBe(false);
    expect(b.recordFailure(b.generation, 0, 10)).toBe(false);
  });

  test('a success resets the run', () => {
    const b = new Breaker(opts);
    failN(b, 2);
    b.recordSuccess(0);
    expect(failN(b, 2)).toEqual([false, false]);
    expect(b.state(0)).toBe('closed');
  });

  test('reachable keeps the run: transient, permanent, transient, permanent, transient opens at 3', () => {
    const b = new Breaker(opts);
    const seq: boolean[] = [];
    seq.push(b.recordFailure(b.generation, 0, 0));
    b.recordReachable(0);
    seq.push(b.recordFailure(b.generation, 0, 0));
    b.recordReachable(0);
    seq.push(b.recordFailure(b.generation, 0, 0));
    expect(seq).toEqual([false, false, true]);
  });

  test('admits nothing while open, one probe once the cooldown has passed', () => {
    const b = new Breaker(opts);
    failN(b, 3, 0);
    expect(b.admits(999)).toBe(false);
    expect(b.isStrictlyOpen(999)).toBe(true);
    expect(b.admits(1000)).toBe(true);
    expect(b.state(1000)).toBe('half-open');
    const probe = b.enter(1000);
    expect(probe).toBeGreaterThan(0);
    // A second caller is turned away while the probe is out.
    expect(b.admits(1000)).toBe(false);
    expect(b.probing).toBe(true);
  });

  test('a failed probe doubles the cooldown up to the maximum; a success resets it', () => {
    const b = new Breaker(opts);
    failN(b, 3, 0);
    let now = 1000;
    const cooldowns: number[] = [];
    for (let i = 0; i < 4; i++) {
      const p = b.enter(now);
      expect(b.recordFailure(b.generation, p, now)).toBe(true);
      cooldowns.push(b.cooldownMs);
      now = b.openUntil;
    }
    expect(cooldowns).toEqual([2000, 4000, 4000, 4000]);
    const p = b.enter(now);
    expect(b.recordSuccess(0)).toBe(true);
    expect(b.state(now)).toBe('closed');
    expect(b.cooldownMs).toBe(1000);
    expect(p).toBeGreaterThan(0);
  });

  test('reachable probe closes the breaker but keeps the failure run', () => {
    const b = new Breaker(opts);
    failN(b, 3, 0);
    b.enter(1000);
    expect(b.recordReachable(0)).toBe(true);
    expect(b.state(1000)).toBe('closed');
    // The run was kept, so the next failure re-opens at once.
    expect(b.recordFailure(b.generation, 0, 1000)).toBe(true);
  });

  test('a released probe frees the slot; a stale release does not free a newer grant', () => {
    const b = new Breaker(opts);
    failN(b, 3, 0);
    const first = b.enter(1000);
    b.release(first);
    expect(b.admits(1000)).toBe(true);
    const second = b.enter(1000);
    expect(second).not.toBe(first);
    b.release(first); // stale
    expect(b.admits(1000)).toBe(false);
    b.release(second);
    expect(b.admits(1000)).toBe(true);
  });

  test('a failure from an attempt that started before the opening is not taken for a failed probe', () => {
    const b = new Breaker(opts);
    const oldGen = b.generation;
    failN(b, 3, 0);
    const probe = b.enter(1000);
    // The old attempt reports now, during the probe.
    expect(b.recordFailure(oldGen, 0, 1000)).toBe(false);
    expect(b.cooldownMs).toBe(1000);
    expect(b.probing).toBe(true);
    expect(b.recordSuccess(0)).toBe(true);
    expect(probe).toBeGreaterThan(0);
  });

  test('a stale probe epoch cannot fail a newer probe', () => {
    const b = new Breaker(opts);
    failN(b, 3, 0);
    const first = b.enter(1000);
    b.release(first);
    const second = b.enter(1000);
    expect(b.recordFailure(b.generation, first, 1000)).toBe(false);
    expect(b.probing).toBe(true);
    expect(b.recordFailure(b.generation, second, 1000)).toBe(true);
    expect(b.cooldownMs).toBe(2000);
  });

  test('waitMs reports the time left in the cooldown', () => {
    const b = new Breaker(opts);
    expect(b.waitMs(0)).toBe(0);
    failN(b, 3, 100);
    expect(b.waitMs(600)).toBe(500);
    expect(b.waitMs(1100)).toBe(0);
  });
});

describe('failure-rate mode', () => {
  const rate = resolveBreaker({ mode: 'failure-rate', failureRate: 0.5, windowMs: 10_000, minThroughput: 4, cooldownMs: 1000 });

  test('opens when the failure share over the window reaches the rate, once the minimum throughput is met', () => {
    const b = new Breaker(rate);
    expect(b.recordFailure(b.generation, 0, 0)).toBe(false); // 1 of 1, below the minimum throughput
    b.recordSuccess(100);
    b.recordSuccess(200);
    expect(b.recordFailure(b.generation, 0, 300)).toBe(true); // 2 of 4 = 50 %
  });

  test.each([
    [3, 1, false], // 1 of 4 = 25 %
    [2, 2, true], // 2 of 4
    [6, 3, false], // 3 of 9 = 33 %
    [4, 4, true], // 4 of 8
  ])('%i successes then %i failures: opens = %s', (oks, fails, opens) => {
    const b = new Breaker(rate);
    for (let i = 0; i < oks; i++) b.recordSuccess(i);
    let opened = false;
    for (let i = 0; i < fails; i++) opened = b.recordFailure(b.generation, 0, 100 + i) || opened;
    expect(opened).toBe(opens);
  });

  test('old outcomes leave the window', () => {
    const b = new Breaker(rate);
    for (let i = 0; i < 3; i++) b.recordFailure(b.generation, 0, i);
    for (let i = 0; i < 20; i++) b.recordSuccess(1000 + i);
    // Twenty seconds later only the new failures count: 3 of 4 would open, but the successes are gone too.
    expect(b.recordFailure(b.generation, 0, 30_000)).toBe(false);
    expect(b.recordFailure(b.generation, 0, 30_001)).toBe(false);
    expect(b.recordFailure(b.generation, 0, 30_002)).toBe(false);
    expect(b.recordFailure(b.generation, 0, 30_003)).toBe(true);
  });
});

describe('ejection growth and jitter', () => {
  test('an endpoint ejected again soon after closing starts from a doubled cooldown; a quiet spell resets it', () => {
    const b = new Breaker(resolveBreaker({ threshold: 1, cooldownMs: 1000, maxCooldownMs: 8000, ejectionGrowth: true }));
    const periods: number[] = [];
    let now = 0;
    for (let i = 0; i < 5; i++) {
      b.recordFailure(b.generation, 0, now);
      periods.push(b.openPeriodMs);
      now = b.openUntil;
      b.enter(now);
      b.recordSuccess(now);
      now += 100;
    }
    expect(periods).toEqual([1000, 2000, 4000, 8000, 8000]);
    now += 8001;
    b.recordFailure(b.generation, 0, now);
    expect(b.openPeriodMs).toBe(1000);
  });

  test('without ejectionGrowth every ejection from closed starts at the base cooldown', () => {
    const b = new Breaker(resolveBreaker({ threshold: 1, cooldownMs: 1000 }));
    b.recordFailure(b.generation, 0, 0);
    b.enter(1000);
    b.recordSuccess(1000);
    b.recordFailure(b.generation, 0, 1100);
    expect(b.openPeriodMs).toBe(1000);
  });

  test.each([
    [0, 800],
    [0.5, 1000],
    [0.999, 1200],
  ])('jitter 0.2 with random %f gives an open period of %i ms', (r, period) => {
    const b = new Breaker(resolveBreaker({ threshold: 1, cooldownMs: 1000, jitter: 0.2 }), () => r);
    b.recordFailure(b.generation, 0, 0);
    expect(b.openPeriodMs).toBe(period);
    expect(b.openUntil).toBe(period);
  });
});
