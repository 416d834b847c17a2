import { describe, expect, test, vi } from 'vitest';
import { FakeClock } from '../src/testing/index.js';

describe('FakeClock', () => {
  test('fires due timers in order of due time, then creation, setting now() to each', async () => {
    const c = new FakeClock(1000);
    const log: string[] = [];
    c.setTimeout(() => log.push(`b@${c.now()}`), 20);
    c.setTimeout(() => log.push(`a@${c.now()}`), 10);
    c.setTimeout(() => log.push(`b2@${c.now()}`), 20);
    c.setTimeout(() => log.push(`late@${c.now()}`), 500);
    await c.advance(100);
    expect(log).toEqual(['a@1010', 'b@1020', 'b2@1020']);
    expect(c.now()).toBe(1100);
    expect(c.pendingTimers).toBe(1);
  });

  test('timers scheduled by a firing timer within the window fire too; promise continuations run between', async () => {
    const c = new FakeClock();
    const log: number[] = [];
    c.setTimeout(() => {
      void Promise.resolve().then(() => c.setTimeout(() => log.push(c.now()), 5));
    }, 10);
    await c.advance(15);
    expect(log).toEqual([15]);
  });

  test('cleared timers never fire, however many are cleared', async () => {
    const c = new FakeClock();
    let fired = 0;
    for (let i = 0; i < 1000; i++) {
      const h = c.setTimeout(() => fired++, i);
      if (i % 10 !== 0) c.clearTimeout(h);
    }
    expect(c.pendingTimers).toBe(100);
    await c.advance(1000);
    expect(fired).toBe(100);
    expect(c.pendingTimers).toBe(0);
  });

  test('setRef marks a timer as background; runAll stops at its limit', async () => {
    const c = new FakeClock();
    const h = c.setTimeout(() => undefined, 10);
    c.setRef(h, false);
    expect([c.pendingTimers, c.pendingForegroundTimers]).toEqual([1, 0]);
    const again = (): void => void c.setTimeout(again, 1);
    again();
    expect(await c.runAll(50)).toBe(50);
    expect(() => new FakeClock(Number.NaN)).toThrow(/startMs/);
    await expect(c.advance(-1)).rejects.toThrow(/advance/);
  });
});

describe('advance() runs a long chain of continuations before the next timer', () => {
  test('a chain of 80 awaits started by one timer ends before a timer 1 ms later fires (40 turns were too few for viem behind a permit queue)', async () => {
    const clock = new FakeClock(0);
    const order: string[] = [];
    clock.setTimeout(async () => {
      for (let i = 0; i < 80; i++) await Promise.resolve();
      order.push('chain done');
    }, 10);
    clock.setTimeout(() => order.push('next timer'), 11);
    await clock.advance(20);
    expect(order).toEqual(['chain done', 'next timer']);
  });
});

describe('FakeClock({ drain: true })', () => {
  /** Whether a chain of `n` awaits started by a timer ends before a timer 1 ms later fires. */
  async function chainFirst(clock: FakeClock, n: number): Promise<boolean> {
    const order: string[] = [];
    clock.setTimeout(async () => {
      for (let i = 0; i < n; i++) await Promise.resolve();
      order.push('chain');
    }, 10);
    clock.setTimeout(() => order.push('next'), 11);
    await clock.advance(20);
    return order[0] === 'chain';
  }

  test('a chain of 10,000 awaits ends before the next timer, as on a real event loop; by default one of 150 does not (100 turns)', async () => {
    expect(await chainFirst(new FakeClock(0, { drain: true }), 10_000)).toBe(true);
    expect(await chainFirst(new FakeClock(0), 150)).toBe(false);
    expect(await chainFirst(new FakeClock(0, { drain: false }), 150)).toBe(false);
  });

  test("under vitest's fake timers (which replace setImmediate) it falls back to 100 turns instead of waiting for ever", async () => {
    vi.useFakeTimers();
    try {
      const clock = new FakeClock(0, { drain: true });
      expect(await chainFirst(clock, 80)).toBe(true);
      expect(await chainFirst(clock, 150)).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  test('a drain that is not a boolean is a RangeError', () => {
    expect(() => new FakeClock(0, { drain: 'yes' as never })).toThrow(RangeError);
    expect(() => new FakeClock(0, { drain: 1 as never })).toThrow(/options.drain/);
  });
});
