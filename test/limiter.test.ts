import { describe, expect, test } from 'vitest';
import { TokenBucket } from '../src/limits/bucket.js';

describe('TokenBucket', () => {
  test('a fresh bucket serves its burst at once, then waits exactly for the next token', () => {
    const b = new TokenBucket(4, 4, 0);
    for (let i = 0; i < 4; i++) expect(b.tryTake(0)).toBe(true);
    expect(b.tryTake(0)).toBe(false);
    expect(b.waitMs(0)).toBe(250);
    expect(b.tryTake(249)).toBe(false);
    expect(b.tryTake(250)).toBe(true);
  });

  test.each([
    [1, 1000],
    [3, 334],
    [10, 100],
    [0.5, 2000],
  ])('at %f/s an empty bucket waits %i ms', (perSecond, wait) => {
    const b = new TokenBucket(perSecond, 1, 0);
    expect(b.tryTake(0)).toBe(true);
    expect(b.waitMs(0)).toBe(wait);
    expect(b.waitMs(wait)).toBe(0);
  });

  test('refill is continuous and capped at the burst', () => {
    const b = new TokenBucket(10, 5, 0);
    for (let i = 0; i < 5; i++) b.take(0);
    expect(b.tokens(50)).toBeCloseTo(0.5);
    expect(b.tokens(10_000)).toBe(5);
  });

  test('a clock step backwards never adds tokens', () => {
    const b = new TokenBucket(10, 1, 1000);
    b.take(1000);
    expect(b.tokens(500)).toBe(0);
    expect(b.waitMs(500)).toBe(100);
  });

  test('over any window, takes never exceed burst + rate × window', () => {
    const b = new TokenBucket(5, 2, 0);
    const times: number[] = [];
    for (let t = 0; t < 10_000; t += 7) if (b.tryTake(t)) times.push(t);
    for (let i = 0; i < times.length; i++) {
      const inWindow = times.filter((x) => x >= times[i]! && x < times[i]! + 1000).length;
      expect(inWindow).toBeLessThanOrEqual(2 + 5);
    }
    expect(times.length).toBeGreaterThan(45);
  });
});

describe('TokenBucket.rescaled', () => {
  test.each([
    // [tokens left of 4, new burst, expected tokens]
    [4, 2, 2],
    [2, 2, 1],
    [0, 8, 0],
    [1, 1, 0.25],
  ])('a bucket with %d of 4 tokens rescaled to a burst of %d has %d: the same fill, never a fresh burst', (left, burst, expected) => {
    const b = new TokenBucket(4, 4, 0);
    for (let i = 0; i < 4 - left; i++) b.take(0);
    expect(b.rescaled(2, burst, 0).tokens(0)).toBeCloseTo(expected);
  });
});
