/**
 * Hostile callbacks: classifiers that throw or answer garbage, operations that throw,
 * return non-promises or odd thenables, never settle, or answer after they were cut off,
 * and listeners or metric sinks that throw or re-enter the pool. Each gets a clear error
 * or the documented behaviour, and the pool keeps serving other calls.
 */
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type ClassifyResult, type PoolEvent } from '../src/index.js';
import { FakeClock, RecordingMetrics } from '../src/testing/index.js';
import { FakeEndpoint, classify, fail, harness, operation, start } from './support.js';

const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);

describe('a classifier that throws or answers garbage', () => {
  test.each<[string, () => unknown]>([
    ['throws', () => {
      throw new Error('classifier bug');
    }],
    ['returns undefined', () => undefined],
    ['returns an unknown class', () => 'flaky'],
    ['returns a number', () => 42],
    ['returns an object with an unknown class', () => ({ class: 'maybe' })],
    ['returns null', () => null],
  ])('%s: the failure is PERMANENT with the original error as cause, the breaker is untouched, the pool keeps working', async (_, bad) => {
    const clock = new FakeClock();
    const a = new FakeEndpoint('a');
    const original = new Error('upstream said no');
    let n = 0;
    const pool = new Pool<FakeEndpoint>({ endpoints: [{ name: 'a', conn: a }], classify: bad as () => ClassifyResult, clock, breaker: { threshold: 1 } });
    const err = await pool.execute(async () => {
      n++;
      throw original;
    }).catch((e: unknown) => e);
    expect(code(err)).toBe('PERMANENT');
    expect((err as Error).cause).toBe(original);
    expect(n).toBe(1);
    expect(pool.breakerState('a')).toBe('closed');
    expect(await pool.execute(operation(clock))).toBe('a');
  });

  test.each([
    ['negative', -5],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a string', '100'],
  ])('a rate-limited hint that is %s is dropped: the default cooldown applies', async (_, hint) => {
    const h = harness(['a', 'b'], { rateLimitCooldownMs: 700 });
    h.eps.a!.then(fail({ class: 'rate-limited', retryAfterMs: hint as number }));
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.pool.stats()[0]!.cooldownRemainingMs).toBe(700);
  });
});

describe('operations that misbehave', () => {
  test.each<[string, (conn: unknown, ctx: unknown) => unknown, string | RegExp]>([
    ['throws synchronously', () => {
      throw new Error('sync');
    }, 'sync'],
    ['returns a plain value', () => 42, 'the operation returned a number, not a promise'],
    ['returns undefined', () => undefined, 'the operation returned undefined, not a promise'],
    ['returns a thenable whose then throws', () => ({
      then() {
        throw new Error('then exploded');
      },
    }), 'then exploded'],
  ])('%s: PERMANENT, no retry, breaker untouched, the pool keeps working', async (_, op, cause) => {
    const h = harness(['a', 'b'], { maxAttempts: 5, breaker: { threshold: 1 } });
    const err = await h.pool.execute(op as never).catch((e: unknown) => e);
    expect(code(err)).toBe('PERMANENT');
    expect(((err as Error).cause as Error).message).toMatch(cause);
    expect((err as { attempts: number }).attempts).toBe(1);
    expect(h.pool.breakerState('a')).toBe('closed');
    expect(h.pool.stats().map((s) => s.inFlight)).toEqual([0, 0]);
    expect(await h.pool.execute(h.op)).toBe('a');
  });

  test('a thenable that settles twice, both ways, counts once', async () => {
    const h = harness(['a']);
    const value = await h.pool.execute(
      () =>
        ({
          then(resolve: (v: string) => void, reject: (e: unknown) => void) {
            resolve('first');
            resolve('second');
            reject(new Error('late'));
          },
        }) as unknown as Promise<string>,
    );
    expect(value).toBe('first');
    expect(h.pool.stats()[0]).toMatchObject({ successes: 1, failures: 0, inFlight: 0 });
    expect(h.trace((e) => e.type.startsWith('attempt'))).toEqual(['attempt-start:a', 'attempt-success:a']);
  });

  test('an operation that never settles is cut by its attempt timeout, and its late answer is ignored', async () => {
    const h = harness(['a', 'b'], { attemptTimeoutMs: 100 });
    let settleLate: ((v: string) => void) | undefined;
    const call = start(
      h.pool.execute((ep, ctx) => (ep.name === 'a' ? new Promise<string>((r) => (settleLate = r)) : h.op(ep, ctx).then(String))),
    );
    await h.clock.advance(100);
    await call.promise;
    expect(call.value).toBe('b');
    settleLate!('too late');
    await h.clock.flush();
    expect(h.pool.stats()[0]).toMatchObject({ successes: 0, failures: 1, inFlight: 0 });
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });
});

describe('listeners and metric sinks', () => {
  test('a listener that throws on every event and a sink that throws on every call change nothing', async () => {
    const clock = new FakeClock();
    const a = new FakeEndpoint('a').then(fail('transient'), fail('rate-limited'));
    const b = new FakeEndpoint('b');
    const pool = new Pool<FakeEndpoint>({
      endpoints: [
        { name: 'a', conn: a },
        { name: 'b', conn: b },
      ],
      classify,
      clock,
      onEvent: () => {
        throw new Error('listener bug');
      },
      metrics: {
        increment: () => {
          throw new Error('sink bug');
        },
        observe: 'not a function' as never,
      },
    });
    expect(await pool.execute(operation(clock))).toBe('b');
    expect(await pool.execute(operation(clock), { pin: 'b' })).toBe('b');
    const err = await pool.execute(operation(clock), { pin: 'a', retry: 'none' }).catch((e: unknown) => e);
    expect(code(err)).toBe('RETRIES_EXHAUSTED');
    expect(pool.activeCalls).toBe(0);
  });

  test('a listener that re-enters the pool (execute, stats, close) does not corrupt the call it is told about', async () => {
    const h = harness(['a', 'b']);
    const inner: Promise<unknown>[] = [];
    const seen: PoolEvent[] = [];
    const clock = new FakeClock();
    const a = new FakeEndpoint('a').then(fail('transient'));
    const b = new FakeEndpoint('b');
    let pool: Pool<FakeEndpoint> | undefined;
    pool = new Pool<FakeEndpoint>({
      endpoints: [
        { name: 'a', conn: a },
        { name: 'b', conn: b },
      ],
      classify,
      clock,
      onEvent: (e) => {
        seen.push(e);
        pool!.stats();
        if (e.type === 'attempt-failure') inner.push(pool!.execute(operation(clock), { pin: 'b' }));
        if (e.type === 'attempt-success' && e.callId === 1) void pool!.close();
      },
    });
    expect(await pool.execute(operation(clock))).toBe('b');
    expect(await Promise.all(inner)).toEqual(['b']);
    expect(code(await pool.execute(operation(clock)).catch((e: unknown) => e))).toBe('CLOSED');
    expect(pool.activeCalls).toBe(0);
    void h;
  });

  test('a metrics sink that records everything still sees consistent counts when the listener throws', async () => {
    const metrics = new RecordingMetrics();
    const h = harness(['a'], { metrics, onEvent: () => {
      throw new Error('x');
    } });
    h.eps.a!.then(fail('transient'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('a');
    expect(metrics.counter('endpoint_pool_attempts_total', { endpoint: 'a' })).toBe(2);
    expect(metrics.counter('endpoint_pool_failures_total', { endpoint: 'a', class: 'transient' })).toBe(1);
  });
});
