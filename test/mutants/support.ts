import { expect } from 'vitest';
import { PoolError } from '../../src/base/errors.js';

/** The message of the `PoolError` that `fn` throws (option checks); fails the test if it throws nothing. */
export function message(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(PoolError);
    return (e as PoolError).message;
  }
  throw new Error('expected INVALID_OPTIONS');
}
