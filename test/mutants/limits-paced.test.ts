/**
 * Issue 15, limiters mutation rerun: the paced limiter's window for every range of rate
 * (below 1/s, fractional, above MAX_SLOTS/s), the margin, window-only pacing (a key inside a
 * group) and the history kept by `recalibrate`. Pure: plain numbers for time.
 */
import { describe, expect, test } from 'vitest';
import { MAX_SLOTS, PacedLimiter } from '../../src/limits/paced.js';

/** Takes `n` starts at `at`. */
function fill(p: PacedLimiter, n: number, at: number): void {
  for (let i = 0; i < n; i++) p.take(at);
}

describe('PacedLimiter window', () => {
  test('the window is 1000 + marginMs long: floor(perSecond) starts per 1025 ms with the default margin', () => {
    const p = new PacedLimiter(2, 25, false);
    fill(p, 2, 0);
    expect(p.waitMs(0)).toBe(1025);
    expect(p.waitMs(1024.5)).toBe(1);
    expect(p.waitMs(1025)).toBe(0);
    expect(p.intervalMs).toBe(512.5);
  });

  test('a fractional rate: floor(perSecond) starts per second, spaced 1000 / perSecond', () => {
    const w = new PacedLimiter(2.5, 0, false);
    fill(w, 2, 0);
    // Two starts per 1000 ms, not two spacings (800 ms).
    expect(w.waitMs(0)).toBe(1000);
    expect(w.waitMs(800)).toBe(200);
    // The steady rate is the window's: 2 a second, one every 500 ms (spacing alone: 400).
    expect(w.intervalMs).toBe(500);
    const p = new PacedLimiter(2.5, 0);
    p.take(0);
    expect(p.waitMs(0)).toBe(400);
    p.take(400);
    // Spacing allows 800, the window 1000.
    expect(p.waitMs(400)).toBe(600);
    expect(p.intervalMs).toBe(500);
  });

  test('below 1/s the window is one spacing, also when calls are not spaced', () => {
    const p = new PacedLimiter(0.5, 25, false);
    p.take(0);
    expect(p.waitMs(0)).toBe(2050);
    expect(p.waitMs(1100)).toBe(950);
    expect(p.waitMs(2050)).toBe(0);
    const q = new PacedLimiter(0.25, 0, false);
    q.take(100);
    expect(q.waitMs(100)).toBe(4000);
    expect(q.intervalMs).toBe(4000);
  });

  test('above MAX_SLOTS a second the window is MAX_SLOTS spacings, margin included', () => {
    const p = new PacedLimiter(1000, 25, false);
    fill(p, MAX_SLOTS, 0);
    // 64 × 1.025 ms = 65.6 ms.
    expect(p.waitMs(0)).toBe(66);
    expect(p.waitMs(65)).toBe(1);
    expect(p.waitMs(65.6)).toBe(0);
    expect(p.intervalMs).toBeCloseTo(1.025, 12);
    const q = new PacedLimiter(200, 0, false);
    fill(q, MAX_SLOTS, 10);
    expect(q.waitMs(10)).toBe(320);
  });

  test('exactly 1/s and exactly MAX_SLOTS/s use the one-second window', () => {
    const one = new PacedLimiter(1, 0, false);
    one.take(0);
    expect(one.waitMs(0)).toBe(1000);
    const top = new PacedLimiter(MAX_SLOTS, 0, false);
    fill(top, MAX_SLOTS, 0);
    expect(top.waitMs(0)).toBe(1000);
    expect(top.waitMs(999)).toBe(1);
  });

  test('not spaced: starts may be back to back until the window is full', () => {
    const p = new PacedLimiter(3, 25, false);
    p.take(0);
    expect(p.waitMs(0)).toBe(0);
    p.take(0);
    expect(p.waitMs(1)).toBe(0);
    p.take(1);
    expect(p.waitMs(1)).toBe(1024);
    expect(p.spaced).toBe(false);
    // Spaced by default: 1000 / 3 × 1.025 ms apart.
    const s = new PacedLimiter(3, 25);
    s.take(0);
    expect(s.spaced).toBe(true);
    expect(s.waitMs(0)).toBe(342);
    expect(s.waitMs(341.5)).toBe(1);
  });
});

describe('PacedLimiter.recalibrate', () => {
  test('the history it keeps is replayed as recorded, with no credit on top', () => {
    const p = new PacedLimiter(20, 25);
    p.take(0);
    // 1.5 ms after its slot (51.25): the next slot is 1 ms earlier than from 52.75.
    p.take(52.75);
    expect(p.waitMs(102.5)).toBe(1);
    p.recalibrate(20);
    // Replayed from the ring (the starts as they were): no credit is taken again, so the
    // next slot is 52.75 + 51.25 = 104, the conservative side.
    expect(p.waitMs(102.5)).toBe(2);
    expect(p.waitMs(104)).toBe(0);
    expect(p.recent()).toEqual([0, 52.75]);
  });

  test('growing the ring keeps the starts in order: the next call is spaced from the newest', () => {
    const p = new PacedLimiter(4, 0);
    for (const t of [0, 250, 500, 750, 1000, 1250]) p.take(t); // the ring has wrapped
    p.recalibrate(8);
    expect(p.perSecond).toBe(8);
    expect(p.waitMs(1250)).toBe(125);
    // Four more at the new spacing fill the 8 slots: the oldest kept start (500) bounds the window.
    for (const t of [1375, 1500, 1625, 1750]) {
      expect(p.waitMs(t)).toBe(0);
      p.take(t);
    }
    expect(p.waitMs(1750)).toBe(125);
  });

  test('growing the ring: only the kept starts count toward the new window', () => {
    const p = new PacedLimiter(4, 0, false);
    for (const t of [0, 10, 20, 30, 40, 50]) p.take(t); // kept: 20..50
    expect(p.waitMs(50)).toBe(970);
    p.recalibrate(6);
    // Four of six slots used: two more may leave now, the seventh waits for 20 to leave.
    expect(p.waitMs(50)).toBe(0);
    p.take(50);
    p.take(50);
    expect(p.waitMs(50)).toBe(970);
  });

  test('shrinking keeps the newest starts', () => {
    const p = new PacedLimiter(4, 0, false);
    for (const t of [0, 100, 200, 300, 400, 500]) p.take(t); // ring: 200..500, wrapped
    p.recalibrate(2);
    // Kept: 400 and 500: the next start when 400 leaves the window.
    expect(p.waitMs(500)).toBe(900);
  });

  test('the new spacing keeps the margin', () => {
    const p = new PacedLimiter(4, 25);
    p.take(0);
    p.recalibrate(2);
    expect(p.waitMs(0)).toBe(513); // 500 × 1.025 = 512.5
    expect(p.intervalMs).toBe(512.5);
    p.recalibrate(0.5);
    expect(p.waitMs(0)).toBe(2050);
  });
});
