import { describe, expect, test } from 'vitest';
import { PoolError, isPoolError } from '../src/index.js';

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
