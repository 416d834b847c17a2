import { describe, expect, test } from 'vitest';
import { Breaker } from '../src/breaker.js';

const opts = { threshold: 3, cooldownMs: 1000, maxCooldownMs: 4000 };

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
    b.recordSuccess();
    expect(failN(b, 2)).toEqual([false, false]);
    expect(b.state(0)).toBe('closed');
  });

  test('reachable keeps the run: transient, permanent, transient, permanent, transient opens at 3', () => {
    const b = new Breaker(opts);
    const seq: boolean[] = [];
    seq.push(b.recordFailure(b.generation, 0, 0));
    b.recordReachable();
    seq.push(b.recordFailure(b.generation, 0, 0));
    b.recordReachable();
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
    expect(b.recordSuccess()).toBe(true);
    expect(b.state(now)).toBe('closed');
    expect(b.cooldownMs).toBe(1000);
    expect(p).toBeGreaterThan(0);
  });

  test('reachable probe closes the breaker but keeps the failure run', () => {
    const b = new Breaker(opts);
    failN(b, 3, 0);
    b.enter(1000);
    expect(b.recordReachable()).toBe(true);
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
    expect(b.recordSuccess()).toBe(true);
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
