/**
 * Issue 15, mutation rerun: rules of the breaker that a mutant survived (Stryker on
 * src/health/breaker.ts). Pure state over `now`: no clock needed.
 */
import { describe, expect, test, vi } from 'vitest';
import { PoolError } from '../../src/base/errors.js';
import { Breaker } from '../../src/health/breaker.js';
import { resolveBreaker } from '../helpers/breaker-options.js';

const opts = resolveBreaker({ threshold: 2, cooldownMs: 1000, maxCooldownMs: 8000 });

function trip(b: Breaker, now = 0): void {
  while (!b.recordFailure(b.generation, 0, now));
}

describe('breaker state', () => {
  test('the generation counts openings: 0, then 1, then 2 after a failed probe', () => {
    const b = new Breaker(opts);
    expect(b.generation).toBe(0);
    trip(b);
    expect(b.generation).toBe(1);
    const probe = b.enter(1000);
    b.recordFailure(b.generation, probe, 1000);
    expect(b.generation).toBe(2);
  });

  test('probing is true only while the probe is out', () => {
    const b = new Breaker(opts);
    expect(b.probing).toBe(false);
    trip(b);
    expect(b.probing).toBe(false);
    const probe = b.enter(1000);
    expect(b.probing).toBe(true);
    b.release(probe);
    expect(b.probing).toBe(false);
  });

  test('enter() hands out no probe while strictly open, nor a second one while the first is out', () => {
    const b = new Breaker(opts);
    expect(b.enter(0)).toBe(0); // closed: an ordinary attempt
    trip(b);
    expect(b.enter(999)).toBe(0); // still cooling down (panic mode sends ordinary attempts)
    expect(b.probing).toBe(false);
    const probe = b.enter(1000);
    expect(probe).toBeGreaterThan(0);
    expect(b.enter(1000)).toBe(0);
    expect(b.enter(1999)).toBe(0);
    // Out for a whole open period (the pool's bound on an attempt is 0 here): presumed lost, its slot goes to the next.
    expect(b.admits(2000)).toBe(true);
    const next = b.enter(2000);
    expect(next).toBeGreaterThan(probe);
    expect(b.enter(2000)).toBe(0);
    // The lost probe's late verdict judges nothing: the newer probe still holds the slot.
    expect(b.recordFailure(b.generation, probe, 2500)).toBe(false);
    expect(b.admits(2500)).toBe(false);
    b.release(probe);
    expect(b.admits(2500)).toBe(false);
  });

  test("a half-open probe is presumed lost only past both the open period and the pool's bound on an attempt (forty-first session: a probe that never settled turned every call away for good)", () => {
    const b = new Breaker(resolveBreaker({ threshold: 1, cooldownMs: 1000 }, undefined, 10_000));
    b.recordFailure(b.generation, 0, 0);
    const probe = b.enter(1000);
    expect(probe).toBeGreaterThan(0);
    expect([b.admits(2000), b.admits(10_999)]).toEqual([false, false]);
    expect(b.enter(10_999)).toBe(0);
    expect(b.admits(11_000)).toBe(true);
    expect(b.lostProbeMs).toBe(-1); // the first probe replaced none
    const next = b.enter(11_000);
    expect(next).toBeGreaterThan(probe);
    expect(b.lostProbeMs).toBe(10_000); // how long the one it replaced was out (the pool reports it: probe-lost)
    expect(b.recordFailure(b.generation, next, 11_000)).toBe(true); // the newer probe fails: open again, no probe out
    expect(b.enter(40_000)).toBeGreaterThan(next);
    expect(b.lostProbeMs).toBe(-1);
  });

  test('release() frees the slot only for the probe that holds it', () => {
    const b = new Breaker(opts);
    trip(b);
    const probe = b.enter(1000);
    b.release(0);
    expect(b.probing).toBe(true);
    b.release(probe + 1);
    expect(b.probing).toBe(true);
    expect(b.admits(1000)).toBe(false);
    b.release(probe);
    expect(b.admits(1000)).toBe(true);
  });

  test('recordReachable on a closed breaker reports no transition and keeps the failure run', () => {
    const b = new Breaker(opts);
    b.recordFailure(b.generation, 0, 0);
    expect(b.recordReachable(0)).toBe(false);
    expect(b.failures).toBe(1);
    trip(b);
    expect(b.recordReachable(10)).toBe(true);
    expect(b.state(10)).toBe('closed');
  });

  test('a failure from an attempt that started before an opening is not counted after the breaker closed again', () => {
    const b = new Breaker(opts);
    const stale = b.generation;
    trip(b);
    const probe = b.enter(1000);
    expect(b.recordSuccess(1000)).toBe(true);
    expect(probe).toBeGreaterThan(0);
    expect(b.recordFailure(stale, 0, 1001)).toBe(false);
    expect(b.failures).toBe(0);
    // One fresh failure is one, not two.
    expect(b.recordFailure(b.generation, 0, 1002)).toBe(false);
    expect(b.failures).toBe(1);
  });

  test('waitMs: the time left while strictly open, 0 when closed, half-open or closed early', () => {
    const b = new Breaker(opts);
    expect(b.waitMs(5)).toBe(0);
    trip(b, 0);
    expect(b.waitMs(250)).toBe(750);
    expect(b.waitMs(1000)).toBe(0);
    expect(b.waitMs(1500)).toBe(0);
    // A late success closes it before its cooldown ended: nothing to wait for.
    const c = new Breaker(opts);
    trip(c, 0);
    c.recordSuccess(300);
    expect(c.waitMs(400)).toBe(0);
  });
});

describe('cooldowns', () => {
  test('ejectionGrowth: ejected again exactly maxCooldownMs after closing still doubles the cooldown', () => {
    const b = new Breaker(resolveBreaker({ threshold: 1, cooldownMs: 1000, maxCooldownMs: 8000, ejectionGrowth: true }));
    trip(b, 0);
    b.enter(1000);
    b.recordSuccess(1000); // closed at 1000
    trip(b, 9000); // 8000 ms later: still "soon"
    expect(b.state(9000)).toEqual({ state: 'open', untilMs: 11_000 });
    b.enter(11_000);
    b.recordSuccess(11_000);
    trip(b, 19_001); // 8001 ms later: a fresh start
    expect(b.state(19_001)).toEqual({ state: 'open', untilMs: 20_001 });
  });

  test('without jitter the random source is never drawn and the period is the cooldown', () => {
    const random = vi.fn(() => 0.9);
    const b = new Breaker(resolveBreaker({ threshold: 1, cooldownMs: 1000 }), random);
    trip(b, 0);
    expect(b.openPeriodMs).toBe(1000);
    expect(random).not.toHaveBeenCalled();
  });

  test('with jitter and no random source given, the draw is 0.5: the period is the cooldown', () => {
    const b = new Breaker(resolveBreaker({ threshold: 1, cooldownMs: 1000, jitter: 0.2 }));
    trip(b, 0);
    expect(b.openPeriodMs).toBe(1000);
    expect(b.state(0)).toEqual({ state: 'open', untilMs: 1000 });
  });

  test("failure-rate: an opening clears the window, so the failures that opened it do not re-open it after it closed", () => {
    const b = new Breaker(resolveBreaker({ mode: 'failure-rate', failureRate: 0.5, minThroughput: 4, windowMs: 10_000, cooldownMs: 1000 }));
    expect([0, 1, 2, 3].map(() => b.recordFailure(b.generation, 0, 0))).toEqual([false, false, false, true]);
    const probe = b.enter(1000);
    b.recordSuccess(1000);
    expect(probe).toBeGreaterThan(0);
    // In the fresh window: 1 success, then failures; it takes 3 more (3 of 4) to reach minThroughput.
    expect(b.recordFailure(b.generation, 0, 1001)).toBe(false);
    expect(b.recordFailure(b.generation, 0, 1002)).toBe(false);
    expect(b.recordFailure(b.generation, 0, 1003)).toBe(true);
  });
});

describe('resolveBreaker', () => {
  function invalid(value: unknown): PoolError {
    try {
      resolveBreaker(value);
    } catch (e) {
      expect(e).toBeInstanceOf(PoolError);
      return e as PoolError;
    }
    throw new Error('expected INVALID_OPTIONS');
  }

  test.each([
    [{ maxCooldownMs: 'x' }, 'breaker.maxCooldownMs: expected a finite number > 0, got "x"'],
    [{ maxCooldownMs: 0, cooldownMs: 0.5 }, 'breaker.maxCooldownMs: expected a finite number > 0, got 0'],
    [{ mode: 'x' }, "breaker.mode: expected one of 'consecutive', 'failure-rate', got \"x\""],
    [{ failureRate: 'x' }, 'breaker.failureRate: expected a finite number > 0, got "x"'],
    [{ failureRate: 0 }, 'breaker.failureRate: expected a finite number > 0, got 0'],
    [{ failureRate: 1.5 }, 'breaker.failureRate: expected a fraction in (0, 1], got 1.5'],
    [{ windowMs: 'x' }, 'breaker.windowMs: expected a finite number > 0, got "x"'],
    [{ windowMs: 0 }, 'breaker.windowMs: expected a finite number > 0, got 0'],
    [{ minThroughput: 0 }, 'breaker.minThroughput: expected a positive integer, got 0'],
    [{ slowCallMs: 0 }, 'breaker.slowCallMs: expected a number of milliseconds > 0, or Infinity, got 0'],
    [{ ejectionGrowth: 'yes' }, 'breaker.ejectionGrowth: expected a boolean, got "yes"'],
    [{ jitter: 'x' }, 'breaker.jitter: expected a finite number >= 0, got "x"'],
    [{ jitter: 1 }, 'breaker.jitter: expected a fraction in [0, 1), got 1'],
    [{ failures: 3 }, "breaker.failures: unknown option; did you mean 'threshold'?"],
    [{ timeoutMs: 3 }, "breaker.timeoutMs: unknown option; did you mean 'cooldownMs'?"],
    [{ resetTimeoutMs: 3 }, "breaker.resetTimeoutMs: unknown option; did you mean 'cooldownMs'?"],
  ])('%j: %s', (value, message) => {
    expect(invalid(value).message).toBe(message);
  });

  test('the edges that are allowed: failureRate 1, jitter just under 1, ejectionGrowth false', () => {
    expect(resolveBreaker({ failureRate: 1 }).failureRate).toBe(1);
    expect(resolveBreaker({ jitter: 0.99 }).jitter).toBe(0.99);
    expect(resolveBreaker({ ejectionGrowth: false }).ejectionGrowth).toBe(false);
    expect(resolveBreaker({ ejectionGrowth: true }).ejectionGrowth).toBe(true);
  });

  test('maxCooldownMs defaults to the larger of 60 s and cooldownMs', () => {
    expect(resolveBreaker({ cooldownMs: 1000 }).maxCooldownMs).toBe(60_000);
    expect(resolveBreaker({ cooldownMs: 120_000 }).maxCooldownMs).toBe(120_000);
  });
});
