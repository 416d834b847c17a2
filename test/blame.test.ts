/** Errors that blame what was wrong: the classifier, the operation, or the endpoint (issue 17). */
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type PoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { failure } from './support.js';

function pool(classify: (e: unknown) => unknown, maxAttempts = 3): Pool<string> {
  return new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: classify as never, clock: new FakeClock(), maxAttempts });
}


const rejects = () => Promise.reject(new Error('boom'));

describe('the PoolError message blames what was wrong', () => {
  test.each<[string, (e: unknown) => unknown, string]>([
    ['an unknown class name', () => 'retryable', 'classify returned "retryable", not an error class for the error from endpoint "a"; treated as permanent'],
    ['nothing', () => undefined, 'classify returned undefined, not an error class for the error from endpoint "a"; treated as permanent'],
    ['a promise (an async classify)', async () => 'transient', 'classify returned a promise (it must answer synchronously), not an error class for the error from endpoint "a"; treated as permanent'],
    ['an object with a bad class', () => ({ class: 'retry' }), 'classify returned an object whose class is "retry", not an error class for the error from endpoint "a"; treated as permanent'],
    [
      'a throw',
      () => {
        throw new RangeError('oops');
      },
      'classify threw a RangeError for the error from endpoint "a"; treated as permanent',
    ],
  ])('classify returning %s', async (_, classify, message) => {
    const e = await failure(pool(classify).execute(rejects));
    expect([e.code, e.message, e.attempts]).toEqual(['PERMANENT', message, 1]);
  });

  test('a real permanent answer still blames the endpoint', async () => {
    const e = await failure(pool(() => 'permanent').execute(rejects));
    expect(e.message).toBe('endpoint "a" answered with a permanent error');
  });

  test.each<[string, () => unknown, string]>([
    ['a number', () => 42, 'the operation returned a number, not a promise (on endpoint "a"); return a promise, e.g. make it async'],
    ['undefined', () => undefined, 'the operation returned undefined, not a promise (on endpoint "a"); return a promise, e.g. make it async'],
    ['an object', () => ({ value: 1 }), 'the operation returned an object with no then(), not a promise (on endpoint "a"); return a promise, e.g. make it async'],
    [
      'a synchronous throw',
      () => {
        throw new Error('sync');
      },
      'the operation threw synchronously on endpoint "a" instead of returning a rejected promise; not retried',
    ],
  ])('an operation returning %s', async (_, op, message) => {
    const e = await failure(pool(() => 'transient').execute(op as never));
    expect([e.code, e.message]).toEqual(['PERMANENT', message]);
  });

  test('one attempt allowed: no "all 1 attempts"', async () => {
    const e = await failure(pool(() => 'transient', 1).execute(rejects));
    expect([e.code, e.message]).toEqual(['RETRIES_EXHAUSTED', 'the only attempt allowed failed: "a" transient']);
  });
});
