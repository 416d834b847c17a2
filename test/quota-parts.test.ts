import { describe, expect, test } from 'vitest';
import { DailyCounter, nextDailyReset } from '../src/limits/daily.js';
import { PacedLimiter } from '../src/limits/paced.js';
import { RollingCounter } from '../src/limits/window.js';

describe('PacedLimiter', () => {
  test('spaces calls by (1000/perSecond) × (1 + margin/1000): never a burst', () => {
    const p = new PacedLimiter(3, 25);
    expect(p.waitMs(0)).toBe(0);
    p.take(0);
    expect(p.waitMs(0)).toBe(342); // 333.3 × 1.025, rounded up
    expect(p.waitMs(341)).toBe(1);
    expect(p.waitMs(342)).toBe(0);
  });

  test('a start up to 1 ms after its slot keeps the next slot where it was, within the margin', () => {
    // 20/s with a 25 ms margin: slots 51.25 ms apart, 1.25 of them margin.
    const p = new PacedLimiter(20, 25);
    p.take(0);
    expect(p.waitMs(51)).toBe(1);
    // The timer fires on a whole millisecond: the call starts 0.75 ms after its slot.
    p.take(52);
    // Its successor's slot is 102.5, not 103.25.
    expect(p.waitMs(102)).toBe(1);
    expect(p.waitMs(102.5)).toBe(0);
    // A start 5 ms late came late (it is no timer's rounding): the next slot moves by 5.
    p.take(102.5 + 51.25 + 5);
    expect(p.waitMs(158.75)).toBe(52);
    expect(p.waitMs(210 - 0.01)).toBe(1);
    expect(p.waitMs(210)).toBe(0);
    // 64/s with a 25 ms margin: slots 16.02 ms apart, 0.39 of them margin: credit 0.39.
    const q = new PacedLimiter(64, 25);
    q.take(0);
    q.take(17);
    expect(q.waitMs(17 + 1000 / 64 - 0.01)).toBe(1);
    expect(q.waitMs(17 + 1000 / 64)).toBe(0);
    // With no margin, no credit.
    const z = new PacedLimiter(3, 0);
    z.take(0);
    z.take(334);
    expect(z.waitMs(334 + 1000 / 3 - 0.01)).toBe(1);
  });

  test('slots on a schedule: starts a fraction late stay 1000/perSecond apart or more, over any second, and keep the configured rate', () => {
    for (const [perSecond, margin] of [[3, 25], [20, 25], [20, 60], [64, 25], [100, 25], [0.5, 25], [7.5, 10], [1000, 25]] as const) {
      const p = new PacedLimiter(perSecond, margin);
      const times: number[] = [];
      // A call is seen on whole-millisecond wakes, often a fraction after its slot.
      for (let t = 0; t < 20_000; t++) {
        if (p.waitMs(t) === 0) {
          p.take(t);
          times.push(t);
        }
      }
      const unstretched = 1000 / perSecond;
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(unstretched - 1e-9);
      const perWindow = Math.max(1, Math.min(64, Math.floor(perSecond)));
      const span = perSecond >= 1 && perSecond <= 64 ? 1000 : perWindow * unstretched;
      for (let i = perWindow; i < times.length; i++) expect(times[i]! - times[i - perWindow]!).toBeGreaterThanOrEqual(span - 1e-9);
      // The rate the margin leaves, not less (rounding each wait up to whole milliseconds
      // no longer adds up), where the margin's share of a slot covers the rounding.
      const stretched = (1000 / perSecond) * (1 + margin / 1000);
      const slot = Math.max(stretched, (span * (1 + margin / 1000)) / perWindow);
      if (slot * (margin / (1000 + margin)) >= 1) expect(times.length, `${perSecond}/s`).toBeGreaterThanOrEqual(Math.floor(20_000 / slot));
    }
  });

  test('at most perSecond calls in any rolling second, even with a zero margin', () => {
    const p = new PacedLimiter(4, 0);
    const times: number[] = [];
    for (let t = 0; t < 5000; t++) {
      if (p.waitMs(t) === 0) {
        p.take(t);
        times.push(t);
      }
    }
    for (const start of times) expect(times.filter((x) => x >= start && x < start + 1000).length).toBeLessThanOrEqual(4);
    expect(times.slice(0, 3)).toEqual([0, 250, 500]);
  });

  test.each([
    [0.5, 2050],
    [1, 1025],
    [10, 103],
    [20, 52],
  ])('at %f/s the spacing is %i ms', (perSecond, spacing) => {
    const p = new PacedLimiter(perSecond, 25);
    p.take(0);
    expect(p.waitMs(0)).toBe(spacing);
  });

  test('recalibrate adopts a lower ceiling and keeps the recent history', () => {
    const p = new PacedLimiter(10, 0);
    p.take(0);
    p.take(100);
    p.recalibrate(2);
    expect(p.perSecond).toBe(2);
    expect(p.waitMs(100)).toBe(900); // two calls in the window already: wait for the oldest to leave
  });
});

describe('DailyCounter', () => {
  const DAY = 86_400_000;
  test.each([
    [0, 0, DAY],
    [DAY - 1, 0, DAY],
    [DAY, 0, 2 * DAY],
    [5 * 3_600_000, 6, 6 * 3_600_000],
    [7 * 3_600_000, 6, DAY + 6 * 3_600_000],
  ])('from %i, with the reset at %i:00 UTC, the next reset is %i', (now, hour, next) => {
    expect(nextDailyReset(now, hour)).toBe(next);
  });

  test('stops admitting at the stop fraction until the reset, then starts over', () => {
    const d = new DailyCounter(100, 0.95, 0, 0);
    for (let i = 0; i < 94; i++) d.take(i);
    expect(d.waitMs(1000)).toBe(0);
    d.take(1000);
    expect(d.count(1000)).toBe(95);
    expect(d.waitMs(1000)).toBe(DAY - 1000);
    expect(d.waitMs(DAY)).toBe(0);
    expect(d.count(DAY)).toBe(0);
  });

  test('exhaust parks until the next reset whatever the count', () => {
    const d = new DailyCounter(100, 0.95, 0, 0);
    expect(d.exhaust(10)).toBe(DAY);
    expect(d.waitMs(10)).toBe(DAY - 10);
    expect(d.waitMs(DAY)).toBe(0);
  });

  // `waitMs` answers 0 without reading the wall while the count is under the stop even with
  // every past day back: these are the cases where a step back brings the stop back.
  test('a step of the wall back into a counted day stops admitting, read by waitMs alone', () => {
    let wall = DAY / 2;
    const d = new DailyCounter(10, 1, 0, 0, () => wall);
    for (let i = 0; i < 6; i++) d.take(0);
    wall = DAY + 1_000; // a step forward across the reset: a new day
    expect(d.count(0)).toBe(0);
    for (let i = 0; i < 5; i++) d.take(0);
    expect(d.waitMs(0)).toBe(0);
    wall = DAY / 2 + 1_000; // back into the first day: its 6 and these 5 are one day's 11
    expect(d.waitMs(0)).toBe(DAY / 2 - 1_000);
  });

  test("a step of the wall back into a day the server said was spent parks again, read by waitMs alone", () => {
    let wall = DAY / 2;
    const d = new DailyCounter(10, 1, 0, 0, () => wall);
    d.exhaust(0);
    wall = DAY + 1_000;
    expect(d.waitMs(0)).toBe(0);
    wall = DAY / 2;
    expect(d.waitMs(0)).toBe(DAY / 2);
  });
});

describe('RollingCounter', () => {
  test('sums the buckets overlapping a span and forgets what is older than its length', () => {
    const c = new RollingCounter(15, 60_000);
    c.add(0);
    c.add(60_000, 2);
    c.add(4 * 60_000, 3);
    expect(c.sum(4 * 60_000, 5 * 60_000)).toBe(6);
    expect(c.sum(4 * 60_000, 60_000)).toBe(3);
    expect(c.sum(5 * 60_000, 5 * 60_000)).toBe(5); // bucket 0 left the 5-minute view
    expect(c.sum(14 * 60_000, 15 * 60_000)).toBe(6);
    expect(c.sum(15 * 60_000, 15 * 60_000)).toBe(5); // bucket 0 is gone
    expect(c.sum(60 * 60_000, 15 * 60_000)).toBe(0);
  });

  test('after a million adds spread over a day, the last bucket holds only the last minute', () => {
    const c = new RollingCounter(15, 60_000);
    for (let i = 0; i < 1_000_000; i++) c.add(i * 86.4);
    expect(c.sum(86_399_999, 60_000)).toBeGreaterThan(600);
    expect(c.sum(86_399_999, 60_000)).toBeLessThan(800);
  });

  test('a clock step backwards counts into the newest bucket', () => {
    const c = new RollingCounter(3, 1000);
    c.add(5000);
    c.add(1000);
    expect(c.sum(5000, 1000)).toBe(2);
  });
});
