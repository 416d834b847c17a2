import { describe, expect, test } from 'vitest';
import { PoolError, isPoolError, presets } from '../src/index.js';
import { fail, harness, hang, ok, start } from './support.js';

const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);

describe('retry by error class', () => {
  test.each([
    ['permanent', 'PERMANENT'],
    ['retry-narrower', 'RETRY_NARROWER'],
  ] as const)('%s is returned at once, retries unburned', async (cls, expected) => {
    const h = harness(['a', 'b'], { maxAttempts: 5 });
    h.eps.a!.then(fail(cls));
    const err = await h.pool.execute(h.op).catch((e: unknown) => e);
    expect(code(err)).toBe(expected);
    expect((err as PoolError).attempts).toBe(1);
    expect((err as PoolError).endpoint).toBe('a');
    expect(h.eps.b!.calls).toBe(0);
  });

  test('transient failures retry until maxAttempts, then RETRIES_EXHAUSTED with the last error as cause', async () => {
    const h = harness(['a'], { maxAttempts: 4, breaker: { threshold: 10 } });
    h.eps.a!.fallback = fail('transient');
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(100 + 200 + 400);
    await call.promise;
    expect(code(call.error)).toBe('RETRIES_EXHAUSTED');
    expect((call.error as PoolError).attempts).toBe(4);
    expect((call.error as PoolError).cause).toBeInstanceOf(Error);
    expect(h.eps.a!.startedAt.map((t) => t - 1_000_000)).toEqual([0, 100, 300, 700]);
  });

  test('a rate-limited answer never touches the breaker and cools the endpoint for the default 1 s', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1 } });
    h.eps.a!.then(fail('rate-limited'));
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.pool.breakerState('a')).toBe('closed');
    // a is skipped while it cools down, so it does not stay first in line...
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.pool.stats()[0]!.cooldownRemainingMs).toBe(1000);
    await h.clock.advance(1000);
    // ...and comes back after.
    expect(await h.pool.execute(h.op)).toBe('a');
  });

  test("a rate-limited hint replaces the backoff, clamped to backoff.maxMs, and skips the endpoint until then", async () => {
    const h = harness(['a'], { backoff: { initialMs: 100, maxMs: 2000, jitter: 'none' } });
    h.eps.a!.then(fail({ class: 'rate-limited', retryAfterMs: 5000 }));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1999);
    expect(call.settled).toBe(false);
    await h.clock.advance(1);
    await call.promise;
    expect(call.value).toBe('a');
    const scheduled = h.events.find((e) => e.type === 'retry-scheduled');
    expect(scheduled).toMatchObject({ delayMs: 2000, hinted: true, attempt: 2 });
  });

  test('unsupported moves on to another endpoint at once, without blaming this one', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1 } });
    h.eps.a!.then(fail('unsupported'));
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.pool.breakerState('a')).toBe('closed');
    expect(h.trace((e) => e.type === 'retry-scheduled')).toEqual([]);
  });

  test('unsupported on every endpoint ends with NO_ENDPOINT and the last answer as cause', async () => {
    const h = harness(['a', 'b'], { maxAttempts: 5 });
    h.eps.a!.then(fail('unsupported'));
    h.eps.b!.then(fail('unsupported'));
    const err = await h.pool.execute(h.op).catch((e: unknown) => e);
    expect(code(err)).toBe('NO_ENDPOINT');
    expect((err as PoolError).attempts).toBe(2);
  });

  test('an attempt timeout counts as a breaker failure and is retried', async () => {
    const h = harness(['a', 'b'], { attemptTimeoutMs: 1000, breaker: { threshold: 1 } });
    h.eps.a!.then(hang());
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('b');
    expect(h.pool.breakerState('a')).toMatchObject({ state: 'open' });
    expect(h.eps.a!.contexts[0]!.signal.aborted).toBe(true);
    expect(code(h.eps.a!.contexts[0]!.signal.reason)).toBe('ATTEMPT_TIMEOUT');
  });

  test('each attempt runs under min(attempt timeout, time left before the deadline)', async () => {
    const h = harness(['a', 'b'], { attemptTimeoutMs: 1000, deadlineMs: 1500 });
    h.eps.a!.then(hang());
    h.eps.b!.then(hang());
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1499);
    expect(call.settled).toBe(false);
    await h.clock.advance(1);
    await call.promise;
    expect(code(call.error)).toBe('DEADLINE_EXCEEDED');
    expect(code((call.error as PoolError).cause)).toBe('ATTEMPT_TIMEOUT');
    expect(h.eps.b!.startedAt[0]! - 1_000_000).toBe(1000);
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test('the deadline bounds a backoff sleep', async () => {
    const h = harness(['a'], { deadlineMs: 250, backoff: { initialMs: 1000, maxMs: 1000, jitter: 'none' } });
    h.eps.a!.then(fail('transient'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(250);
    await call.promise;
    expect(code(call.error)).toBe('DEADLINE_EXCEEDED');
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test("retry modes: 'none' makes one attempt; { maxAttempts } bounds; 'until-deadline' goes on until the deadline", async () => {
    const h = harness(['a'], { breaker: { threshold: 1000 }, backoff: { initialMs: 100, maxMs: 100, jitter: 'none' } });
    h.eps.a!.fallback = fail('transient');
    const none = await h.pool.execute(h.op, { retry: 'none' }).catch((e: unknown) => e);
    expect((none as PoolError).attempts).toBe(1);
    const bounded = start(h.pool.execute(h.op, { retry: { maxAttempts: 2 } }));
    await h.clock.advance(100);
    await bounded.promise;
    expect((bounded.error as PoolError).attempts).toBe(2);
    const forever = start(h.pool.execute(h.op, { retry: 'until-deadline', deadlineMs: 1050 }));
    await h.clock.advance(1050);
    await forever.promise;
    expect(code(forever.error)).toBe('DEADLINE_EXCEEDED');
    expect((forever.error as PoolError).attempts).toBe(11);
  });

  test('the essential preset retries until the caller aborts', async () => {
    const h = harness(['a'], { breaker: { threshold: 1000 } });
    h.eps.a!.fallback = fail('transient');
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { ...presets.essential, signal: ac.signal }));
    await h.clock.advance(10 * 60_000);
    expect(call.settled).toBe(false);
    ac.abort();
    await call.promise;
    expect(code(call.error)).toBe('ABORTED');
    // 250 ms doubling to 10 s: 250+500+...+8000 = 15750, then every 10 s.
    expect(h.eps.a!.calls).toBe(1 + 6 + Math.floor((600_000 - 15_750) / 10_000));
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test('the background preset makes one attempt and fails fast', async () => {
    const h = harness(['a'], { breaker: { threshold: 1 } });
    h.eps.a!.then(fail('transient'));
    const first = await h.pool.execute(h.op, presets.background).catch((e: unknown) => e);
    expect(code(first)).toBe('RETRIES_EXHAUSTED');
    const second = await h.pool.execute(h.op, presets.background).catch((e: unknown) => e);
    expect(code(second)).toBe('NO_ENDPOINT');
    expect((second as PoolError).retryAfterMs).toBe(5000);
  });

  test('an operation that throws synchronously, or returns a non-promise, is permanent with the error as cause', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1 } });
    const boom = new Error('sync');
    const thrown = await h.pool.execute(() => {
      throw boom;
    }).catch((e: unknown) => e);
    expect(code(thrown)).toBe('PERMANENT');
    expect((thrown as PoolError).cause).toBe(boom);
    const plain = await h.pool.execute((() => 42) as never).catch((e: unknown) => e);
    expect(code(plain)).toBe('PERMANENT');
    expect((plain as PoolError).cause).toBeInstanceOf(TypeError);
    expect(h.pool.breakerState('a')).toBe('closed');
  });

  test('a classify that throws or answers garbage makes the failure permanent, with the original error as cause', async () => {
    for (const classify of [
      () => {
        throw new Error('classifier bug');
      },
      () => 'bogus' as never,
      () => ({ class: 'nope' }) as never,
      () => undefined as never,
    ]) {
      const h = harness(['a', 'b'], { classify });
      h.eps.a!.then(fail('transient'));
      const err = await h.pool.execute(h.op).catch((e: unknown) => e);
      expect(code(err)).toBe('PERMANENT');
      expect((err as PoolError).cause).toBeInstanceOf(Error);
      expect(((err as PoolError).cause as Error).message).toBe('scripted failure');
      expect(h.eps.b!.calls).toBe(0);
    }
  });

  test('a resolved value is returned as is', async () => {
    const h = harness(['a']);
    h.eps.a!.then(ok({ x: 1 }, 30));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(30);
    await call.promise;
    expect(call.value).toEqual({ x: 1 });
  });
});

describe('concurrency permits', () => {
  test('maxConcurrentCalls holds one permit per call across retries; the next call waits for it', async () => {
    const h = harness(['a'], { maxConcurrentCalls: 1, breaker: { threshold: 10 } });
    h.eps.a!.then(fail('transient', 10), ok('first', 10), ok('second', 10));
    const first = start(h.pool.execute(h.op));
    const second = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(h.pool.pendingCalls).toBe(1);
    expect(h.pool.activeCalls).toBe(2);
    await h.clock.advance(10 + 100 + 10);
    await first.promise;
    expect(first.value).toBe('first');
    expect(h.eps.a!.calls).toBe(3); // the second call started only now
    await h.clock.advance(10);
    await second.promise;
    expect(second.value).toBe('second');
    expect(h.pool.activeCalls).toBe(0);
  });

  test('the deadline bounds the wait for a permit', async () => {
    const h = harness(['a'], { maxConcurrentCalls: 1 });
    h.eps.a!.then(ok('slow', 5000));
    const first = start(h.pool.execute(h.op));
    const second = start(h.pool.execute(h.op, { deadlineMs: 300 }));
    await h.clock.advance(300);
    await second.promise;
    expect(code(second.error)).toBe('DEADLINE_EXCEEDED');
    expect((second.error as PoolError).attempts).toBe(0);
    await h.clock.advance(4700);
    await first.promise;
    expect(first.value).toBe('slow');
    expect(h.pool.pendingCalls).toBe(0);
  });
});
