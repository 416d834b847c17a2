import { describe, expect, test } from 'vitest';
import { PoolError, isPoolError } from '../src/index.js';
import { describe as describeValue } from '../src/base/errors.js';

describe('PoolError', () => {
  test('has a literal name, a stable code, the native cause and context fields', () => {
    const cause = new Error('inner');
    const e = new PoolError('RETRIES_EXHAUSTED', 'all 3 attempts failed', { cause, attempts: 3, endpoint: 'a', retryAfterMs: 10 });
    expect(e.name).toBe('PoolError');
    expect(e.code).toBe('RETRIES_EXHAUSTED');
    expect(e.cause).toBe(cause);
    expect([e.attempts, e.endpoint, e.retryAfterMs]).toEqual([3, 'a', 10]);
    expect(e).toBeInstanceOf(Error);
    expect(isPoolError(e)).toBe(true);
    expect(String(e)).toBe('PoolError: all 3 attempts failed');
  });

  test('without a cause, `cause` is absent', () => {
    expect('cause' in new PoolError('CLOSED', 'closed')).toBe(false);
  });
});

describe('describe (what an INVALID_OPTIONS message says it got)', () => {
  test.each([
    [undefined, 'undefined'],
    [null, 'null'],
    [3, '3'],
    [true, 'true'],
    [10n, '10'],
    ['fast', '"fast"'],
    ['https://x.example/?key=1', 'a string of 24 characters'],
    [[1, 2], 'an array of 2'],
    [() => 1, 'a function'],
    [Symbol('s'), 'a symbol'],
    [{}, 'an object'],
  ])('%s -> %s', (value, text) => {
    expect(describeValue(value)).toBe(text);
  });
});
