/**
 * Issue 15, mutation rerun of the call loop: one attempt (src/call/attempt.ts) as the
 * operation and the pool's stats see it. Fake clock, public API only.
 */
import { describe, expect, test } from 'vitest';
import type { AttemptContext, PoolEvent } from '../../src/index.js';
import { failure, fail, harness, hang, ok, start, TestError } from '../support.js';

const starts = (events: PoolEvent[]) => events.filter((e): e is Extract<PoolEvent, { type: 'attempt-start' }> => e.type === 'attempt-start');

describe('the context an operation sees', () => {
  test('attempt numbers count from 1, the endpoint name and the deadline are the call’s', async () => {
    const h = harness(['a', 'b', 'c'], { deadlineMs: 5000 });
    h.eps.a!.then(fail('transient'));
    h.eps.b!.then(fail('transient'));
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { retry: { maxAttempts: 3 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('c');
    const seen = [...h.eps.a!.contexts, ...h.eps.b!.contexts, ...h.eps.c!.contexts];
    expect(seen.map((c) => [c.endpoint, c.attempt, c.deadlineAt])).toEqual([
      ['a', 1, t0 + 5000],
      ['b', 2, t0 + 5000],
      ['c', 3, t0 + 5000],
    ]);
    expect(starts(h.events).map((e) => e.attempt)).toEqual([1, 2, 3]);
  });
});

describe('what the operation returns', () => {
  test.each([
    ['undefined', undefined, 'the operation returned undefined, not a promise'],
    ['null', null, 'the operation returned null, not a promise'],
    ['an object', { then: 5 }, 'the operation returned an object with no then(), not a promise'],
    ['a number', 7, 'the operation returned a number, not a promise'],
    ['a string', 'x', 'the operation returned a string, not a promise'],
  ])('%s is a permanent NotAPromiseError', async (_, value, message) => {
    const h = harness(['a', 'b']);
    const err = await failure(h.pool.execute(() => value as never));
    expect(err.code).toBe('PERMANENT');
    const cause = err.cause as Error;
    expect(cause).toBeInstanceOf(TypeError);
    expect(cause.name).toBe('NotAPromiseError');
    expect(cause.message).toBe(message);
    expect(err.attempts).toBe(1);
  });

  test('a function with a then method is a thenable like any promise', async () => {
    const h = harness(['a']);
    const thenable = Object.assign(() => undefined, {
      then(resolve: (v: unknown) => void) {
        resolve('from a function');
      },
    });
    expect(await h.pool.execute(() => thenable as never)).toBe('from a function');
  });

  // The two handlers handed to `then` (attempt.ts, `watchAttempt`): a bound function and a
  // proxy of it. A thenable may call them as any function, with any arguments.
  test('a thenable’s handlers called through call() and apply(), with extra arguments, count as they always did', async () => {
    const h = harness(['a', 'b']);
    let n = 0;
    type Handler = (...args: unknown[]) => void;
    const thenable = {
      then(onFulfilled: Handler, onRejected: Handler) {
        expect(typeof onRejected).toBe('function');
        if (n++ === 0) onRejected.call(undefined, new TestError('transient'), 'extra');
        else onFulfilled.apply(null, ['second', new TestError('transient')]);
      },
    };
    const call = start(h.pool.execute(() => thenable as never, { retry: { maxAttempts: 2 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('second');
    expect(n).toBe(2);
    expect(h.pool.stats().map((s) => [s.name, s.attempts, s.failures])).toEqual([
      ['a', 1, 1],
      ['b', 1, 0],
    ]);
  });

  test.each([
    ['undefined', undefined],
    ['null', null],
    ['a symbol', Symbol('rejected')],
  ])('a rejection with %s is a failure, not an answer', async (_, reason) => {
    const h = harness(['a']);
    const err = await failure(h.pool.execute(() => Promise.reject(reason)));
    expect(err.code).toBe('PERMANENT');
    expect(err.cause).toBe(reason);
    expect(err.attempts).toBe(1);
  });

  test('an answer of undefined, or of a rejected promise’s shape, is an answer', async () => {
    const h = harness(['a']);
    expect(await h.pool.execute(() => Promise.resolve(undefined))).toBeUndefined();
    const thenable = { then: (onFulfilled: (v: unknown, w?: unknown) => void) => onFulfilled(Symbol.for('rejected'), new Error('not a reason')) };
    expect(await h.pool.execute(() => thenable as never)).toBe(Symbol.for('rejected'));
  });
});

describe('the endpoint’s slot', () => {
  test('attempts and the in-flight peak are counted per endpoint; the peak stays after the attempts end', async () => {
    const h = harness([{ name: 'a', maxInFlight: 5 }]);
    h.eps.a!.then(ok('1', 10), ok('2', 10), ok('3', 10));
    const calls = [start(h.pool.execute(h.op)), start(h.pool.execute(h.op))];
    await h.clock.advance(0);
    expect(h.pool.stats()[0]).toMatchObject({ inFlight: 2, peakInFlight: 2, attempts: 2 });
    await h.clock.advance(10);
    await Promise.all(calls.map((c) => c.promise));
    const third = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(h.pool.stats()[0]).toMatchObject({ inFlight: 1, peakInFlight: 2, attempts: 3, usage5m: 3 });
    await h.clock.advance(10);
    await third.promise;
    expect(h.pool.stats()[0]).toMatchObject({ inFlight: 0, peakInFlight: 2 });
  });

  test('a call parked on a full endpoint starts when the attempt holding the slot ends', async () => {
    const h = harness([{ name: 'a', maxInFlight: 1 }]);
    h.eps.a!.then(ok('first', 100), ok('second', 10));
    const one = start(h.pool.execute(h.op));
    const two = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(h.eps.a!.calls).toBe(1);
    const t0 = h.clock.now();
    await h.clock.advance(100);
    await one.promise;
    expect(h.eps.a!.startedAt).toEqual([t0, t0 + 100]);
    await h.clock.advance(10);
    await two.promise;
    expect(two.value).toBe('second');
  });

  test('a call parked behind a half-open probe starts when the probe ends; only the probe is marked probe', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 100 }, breakerMode: 'wait' });
    h.eps.a!.then(fail('transient'), ok('probe', 50), ok('after', 5));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(100);
    expect(h.pool.breakerState('a')).toBe('half-open');
    const t0 = h.clock.now();
    const probe = start(h.pool.execute(h.op));
    const next = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(h.eps.a!.calls).toBe(2);
    await h.clock.advance(50);
    await probe.promise;
    expect(probe.value).toBe('probe');
    expect(h.eps.a!.startedAt.slice(1)).toEqual([t0, t0 + 50]);
    await h.clock.advance(5);
    await next.promise;
    expect(next.value).toBe('after');
    expect(starts(h.events).map((e) => e.probe)).toEqual([false, true, false]);
  });
  test('a probe cancelled by its caller frees the probe slot at once: the call parked behind it becomes the probe', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 100 }, breakerMode: 'wait' });
    h.eps.a!.then(fail('transient'), hang(), ok('next', 5));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(100);
    const ac = new AbortController();
    const t0 = h.clock.now();
    const probe = start(h.pool.execute(h.op, { signal: ac.signal }));
    const next = start(h.pool.execute(h.op));
    await h.clock.advance(20);
    expect(h.eps.a!.calls).toBe(2);
    ac.abort();
    await h.clock.advance(0);
    await probe.promise;
    expect(h.eps.a!.startedAt.slice(1)).toEqual([t0, t0 + 20]);
    await h.clock.advance(5);
    await next.promise;
    expect(next.value).toBe('next');
    expect(starts(h.events).map((e) => e.probe)).toEqual([false, true, true]);
  });
});

describe('the attempt’s timeout', () => {
  test('the attempt timeout when the deadline is further: the attempt ends exactly then', async () => {
    const h = harness(['a', 'b'], { attemptTimeoutMs: 100, deadlineMs: 1000 });
    h.eps.a!.then(hang());
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { retry: { maxAttempts: 2 } }));
    await h.clock.advance(99);
    expect(h.eps.b!.calls).toBe(0);
    await h.clock.advance(1);
    await call.promise;
    expect(call.value).toBe('b');
    expect(h.eps.b!.startedAt).toEqual([t0 + 100]);
  });

  test('the time left before the deadline when it is shorter; no timeout at all when both are infinite', async () => {
    const h = harness(['a'], { attemptTimeoutMs: 1000, deadlineMs: 60 });
    h.eps.a!.then(hang());
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(59);
    expect(call.settled).toBe(false);
    await h.clock.advance(1);
    await call.promise;
    expect((call.error as { code?: string }).code).toBe('DEADLINE_EXCEEDED');

    const u = harness(['a'], { attemptTimeoutMs: Number.POSITIVE_INFINITY, deadlineMs: Number.POSITIVE_INFINITY });
    const ctxs: AttemptContext[] = [];
    let finish: (v: string) => void = () => undefined;
    const c2 = start(u.pool.execute((_c, ctx) => {
      ctxs.push(ctx);
      return new Promise<string>((r) => (finish = r));
    }));
    await u.clock.advance(10_000_000);
    expect(c2.settled).toBe(false);
    expect(ctxs[0]!.signal.aborted).toBe(false);
    finish('late');
    await c2.promise;
    expect(c2.value).toBe('late');
  });

  test('an attempt with no timeout keeps no timer of the pool alive', async () => {
    const h = harness(['a'], { deadlineMs: Number.POSITIVE_INFINITY });
    h.eps.a!.then(ok('quick', 10), hang());
    const first = start(h.pool.execute(h.op, { attemptTimeoutMs: 100 }));
    await h.clock.advance(10);
    await first.promise;
    expect(first.value).toBe('quick');
    const call = start(h.pool.execute(h.op, { attemptTimeoutMs: Number.POSITIVE_INFINITY }));
    await h.clock.advance(0);
    expect(h.eps.a!.calls).toBe(2);
    expect(h.clock.pendingForegroundTimers).toBe(0);
    expect(call.settled).toBe(false);
  });
});
