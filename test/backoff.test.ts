import { describe, expect, test } from 'vitest';
import { backoffDelay, type BackoffOptions } from '../src/call/backoff.js';

const none: BackoffOptions = { initialMs: 100, maxMs: 1000, jitter: 'none' };

describe('backoffDelay', () => {
  test.each([
    [1, 100],
    [2, 200],
    [3, 400],
    [4, 800],
    [5, 1000],
    [60, 1000],
  ])('retry %i waits %i ms without jitter', (retry, ms) => {
    expect(backoffDelay(retry, none, () => 0.5)).toBe(ms);
  });

  test('retry 1,025 still waits a finite, positive time', () => {
    const d = backoffDelay(1025, { initialMs: 250, maxMs: 10_000, jitter: 'none' }, () => 0.5);
    expect(d).toBe(10_000);
    const huge = backoffDelay(1025, { initialMs: 250, maxMs: Number.MAX_VALUE, jitter: 'none' }, () => 0.5);
    expect(Number.isFinite(huge)).toBe(true);
    expect(huge).toBeGreaterThan(0);
  });

  test('never below 1 ms, even configured to 0 or with a random source returning 0', () => {
    expect(backoffDelay(1, { initialMs: 0, maxMs: 0, jitter: 'none' }, () => 0)).toBe(1);
    expect(backoffDelay(3, { initialMs: 100, maxMs: 1000, jitter: 'full' }, () => 0)).toBe(1);
  });

  test.each([
    ['full', 0, 1],
    ['full', 0.5, 200],
    ['full', 0.999, 400],
    ['equal', 0, 200],
    ['equal', 0.5, 300],
    ['equal', 0.999, 400],
  ] as const)('%s jitter with random %f on retry 3 gives %i ms', (jitter, r, ms) => {
    expect(backoffDelay(3, { initialMs: 100, maxMs: 1000, jitter }, () => r)).toBe(ms);
  });

  test('decorrelated jitter stays in [initialMs, min(max, 3 × previous)]', () => {
    const opts: BackoffOptions = { initialMs: 100, maxMs: 1000, jitter: 'decorrelated' };
    expect(backoffDelay(1, opts, () => 0)).toBe(100);
    expect(backoffDelay(2, opts, () => 0.999, 200)).toBe(600);
    expect(backoffDelay(3, opts, () => 0.999, 600)).toBe(1000);
  });
});

describe('backoffDelay with a broken random source', () => {
  const full: BackoffOptions = { initialMs: 100, maxMs: 1000, jitter: 'full' };
  test.each([
    ['0 (in range)', 0, 1],
    ['just below 1 (in range)', 0.9999, 400],
    ['1 (out of range)', 1, 200],
    ['-0.1', -0.1, 200],
    ['NaN', Number.NaN, 200],
    ['a string', '0.3', 200],
  ])('a draw of %s on retry 3 (full jitter, base 400) gives %i ms', (_, r, ms) => {
    expect(backoffDelay(3, full, () => r as number)).toBe(ms);
  });

  test('a throwing source counts as 0.5 for every jitter', () => {
    const boom = (): number => {
      throw new Error('rng');
    };
    expect(backoffDelay(3, full, boom)).toBe(200);
    expect(backoffDelay(3, { ...full, jitter: 'equal' }, boom)).toBe(300);
    expect(backoffDelay(2, { ...full, jitter: 'decorrelated' }, boom, 200)).toBe(350);
  });
});
