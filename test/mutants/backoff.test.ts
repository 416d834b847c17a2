/**
 * Issue 15, mutation rerun: backoff rules a mutant survived (Stryker on src/call/backoff.ts).
 */
import { describe, expect, test } from 'vitest';
import { message as thrown } from './support.js';
import { backoffDelay, resolveBackoff, type BackoffOptions } from '../../src/call/backoff.js';

const base: BackoffOptions = { initialMs: 100, maxMs: 10_000, jitter: 'full' };

const message = (value: unknown): string => thrown(() => resolveBackoff('backoff', value, base));

describe('decorrelated jitter', () => {
  test('the first retry (no previous delay) draws from [initialMs, 3 × initialMs]', () => {
    const opts: BackoffOptions = { initialMs: 100, maxMs: 1000, jitter: 'decorrelated' };
    expect(backoffDelay(1, opts, () => 0.5)).toBe(200);
    expect(backoffDelay(1, opts, () => 0.999)).toBe(300);
    expect(backoffDelay(1, opts, () => 0.5, 0)).toBe(200);
  });
});

describe('resolveBackoff', () => {
  test.each([
    ['baseMs', 'initialMs'],
    ['minMs', 'initialMs'],
    ['delayMs', 'initialMs'],
    ['initialDelayMs', 'initialMs'],
    ['maxDelayMs', 'maxMs'],
  ])('the alias %s names %s', (alias, meant) => {
    expect(message({ [alias]: 5 })).toBe(`backoff.${alias}: unknown option; did you mean '${meant}'?`);
  });

  test('a bad maxMs is named with its field', () => {
    expect(message({ maxMs: 'x' })).toBe('backoff.maxMs: expected a finite number >= 0, got "x"');
    expect(message({ initialMs: 500, maxMs: 200 })).toBe('backoff.maxMs: expected a number >= initialMs (500), got 200');
  });

  test('maxMs defaults to the larger of the base ceiling and initialMs', () => {
    expect(resolveBackoff('backoff', { initialMs: 20_000 }, base)).toEqual({ initialMs: 20_000, maxMs: 20_000, jitter: 'full' });
    expect(resolveBackoff('backoff', { initialMs: 50 }, base)).toEqual({ initialMs: 50, maxMs: 10_000, jitter: 'full' });
    expect(resolveBackoff('backoff', undefined, base)).toBe(base);
  });
});
