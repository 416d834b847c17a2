/**
 * Edges of the retry loop (src/call.ts) that the mutation run showed no other test pinned
 * down: how each outcome reports to events, metrics and the breaker, and the waits around
 * pins, timeouts and deadlines.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, test } from 'vitest';
import { isPoolError, type PoolError } from '../src/index.js';
import { FakeEndpoint, TestError, fail, harness, hang, ok, start } from './support.js';

const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);
const retries = (h: ReturnType<typeof harness>) => h.events.filter((e) => e.type === 'retry-scheduled');

describe('synchronous failures are permanent whatever the classifier says', () => {
  test.each([
    ['a synchronous throw', () => {
      throw new TestError('transient');
    }],
    ['a non-promise', () => 7],
    ['null', () => null],
    ['a thenable whose then throws', () => ({
      then() {
        throw new TestError('transient');
      },
    })],
  ])('%s', async (_, op) => {
    const h = harness(['a', 'b'], { classify: () => 'transient', maxAttempts: 3 });
    const err = await h.pool.execute(op as never).catch((e: unknown) => e);
    expect(code(err)).toBe('PERMANENT');
    expect(h.trace((e) => e.type === 'attempt-start')).toEqual(['attempt-start:a']);
  });
});

describe('what each outcome reports', () => {
  test('a backoff retry is not hinted; a wait for an open breaker is', async () => {
    const h = harness(['a'], { breaker: { threshold: 2, cooldownMs: 500 } });
    h.eps.a!.then(fail('transient'), fail('transient'));
    const call = start(h.pool.execute(h.op, { breakerMode: 'wait', retry: { maxAttempts: 3 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('a');
    expect(retries(h).map((e) => e.type === 'retry-scheduled' && [e.delayMs, e.hinted])).toEqual([
      [100, false],
      [500, true],
    ]);
  });

  test('a permanent answer opens nothing; on a half-open breaker it closes it, with an event', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 100 } });
    h.eps.a!.then(fail('transient'), fail('permanent'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(100);
    expect(h.pool.breakerState('a')).toBe('half-open');
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.breakerState('a')).toBe('closed');
    expect(h.trace((e) => e.type.startsWith('breaker'))).toEqual(['breaker-opened:a', 'breaker-closed:a']);
    expect(h.metrics.counter('endpoint_pool_breaker_opened_total')).toBe(1);
  });

  test('an unreadable answer (classifier garbage) on a half-open breaker leaves it half-open', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 100 }, classify: (e) => (e instanceof TestError && e.verdict === 'transient' ? 'transient' : ('??' as never)) });
    h.eps.a!.then(fail('transient'), fail('permanent'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(100);
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.breakerState('a')).toBe('half-open');
  });

  test('a 429 counts in stats, cools the endpoint with an event, and a later shorter hint does not shorten it', async () => {
    const h = harness([{ name: 'a', maxInFlight: 2 }, 'b']);
    h.eps.a!.then(fail({ class: 'rate-limited', retryAfterMs: 500 }, 10), fail({ class: 'rate-limited', retryAfterMs: 100 }, 20));
    const one = start(h.pool.execute(h.op));
    const two = start(h.pool.execute(h.op));
    await h.clock.advance(20);
    await Promise.all([one.promise, two.promise]);
    const [a] = h.pool.stats();
    expect(a!.rateLimited).toBe(2);
    expect(a!.attempts).toBe(2);
    // Each hint plus its jitter (random 0.5: 12.5 %).
    expect(a!.cooldownRemainingMs).toBe(553);
    expect(h.events.filter((e) => e.type === 'endpoint-cooling')).toEqual([
      { type: 'endpoint-cooling', endpoint: 'a', cooldownMs: 563 },
      { type: 'endpoint-cooling', endpoint: 'a', cooldownMs: 113 },
    ]);
  });

  test('RETRIES_EXHAUSTED after transient failures carries no retryAfterMs', async () => {
    const h = harness(['a'], { maxAttempts: 1 });
    h.eps.a!.then(fail('transient'));
    const err = (await h.pool.execute(h.op).catch((e: unknown) => e)) as PoolError;
    expect([err.code, err.retryAfterMs]).toEqual(['RETRIES_EXHAUSTED', undefined]);
  });

  test('NO_ENDPOINT while the only probe is out carries no retryAfterMs', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 100 } });
    h.eps.a!.then(fail('transient'), hang());
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(100);
    const probe = start(h.pool.execute(h.op, { deadlineMs: 50 }));
    const err = (await h.pool.execute(h.op).catch((e: unknown) => e)) as PoolError;
    expect([err.code, err.retryAfterMs]).toEqual(['NO_ENDPOINT', undefined]);
    await h.clock.advance(50);
    await probe.promise;
  });

  test('a timeout: exact message, no breaker-closed, and retry-scheduled before the backoff', async () => {
    const h = harness(['a'], { attemptTimeoutMs: 100, breaker: { threshold: 5 } });
    h.eps.a!.then(hang());
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(200);
    await call.promise;
    expect(call.value).toBe('a');
    const failure = h.events.find((e) => e.type === 'attempt-failure');
    expect(failure?.type === 'attempt-failure' && (failure.error as Error).message).toBe('attempt 1 on endpoint "a" timed out after 100 ms');
    expect(h.trace((e) => e.type !== 'attempt-start')).toEqual(['attempt-failure:a', 'retry-scheduled', 'attempt-success:a']);
  });

  test('timeouts on two endpoints: both count as tried, so the third attempt backs off', async () => {
    const h = harness(['a', 'b'], { attemptTimeoutMs: 100, maxAttempts: 3, breaker: { threshold: 5 } });
    h.eps.a!.then(hang());
    h.eps.b!.then(hang());
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('a');
    expect([...h.eps.a!.startedAt, ...h.eps.b!.startedAt].map((t) => t - 1_000_000)).toEqual([0, 300, 100]);
  });

  test('an attempt cut by the deadline on the last allowed attempt is DEADLINE_EXCEEDED, not RETRIES_EXHAUSTED', async () => {
    const h = harness(['a'], { maxAttempts: 1, attemptTimeoutMs: 1000, deadlineMs: 50 });
    h.eps.a!.then(hang());
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(50);
    await call.promise;
    expect(code(call.error)).toBe('DEADLINE_EXCEEDED');
  });

  test('a first wait for a token is not a retry: rate-limit-wait, no retry-scheduled', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, burst: 1 } }]);
    await h.pool.execute(h.op);
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(100);
    await call.promise;
    expect(h.trace((e) => e.type === 'rate-limit-wait' || e.type === 'retry-scheduled')).toEqual(['rate-limit-wait:a']);
    expect(h.metrics.counter('endpoint_pool_rate_limit_waits_total', { endpoint: 'a' })).toBe(1);
  });

  test('a call parked on a full endpoint emits no rate-limit-wait', async () => {
    const h = harness([{ name: 'a', maxInFlight: 1 }]);
    h.eps.a!.then(ok('first', 50));
    const first = start(h.pool.execute(h.op));
    const second = start(h.pool.execute(h.op));
    await h.clock.advance(50);
    await Promise.all([first.promise, second.promise]);
    expect(second.value).toBe('a');
    expect(h.events.some((e) => e.type === 'rate-limit-wait')).toBe(false);
    expect(h.metrics.counter('endpoint_pool_rate_limit_waits_total')).toBe(0);
    expect(h.pool.stats()[0]!.peakInFlight).toBe(1);
  });
});

describe('pins', () => {
  test('a pinned call waits for its endpoint’s token, and backs off before retrying it', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 2, burst: 1 } }, 'b'], { breaker: { threshold: 5 } });
    await h.pool.execute(h.op, { pin: 'a' });
    h.eps.a!.then(fail('transient'));
    const call = start(h.pool.execute(h.op, { pin: 'a' }));
    await h.clock.advance(2000);
    await call.promise;
    expect(call.value).toBe('a');
    // 500 ms for the token, then the 100 ms backoff and whatever the bucket still asks.
    expect(h.eps.a!.startedAt.map((t) => t - 1_000_000)).toEqual([0, 500, 1000]);
    expect(h.eps.b!.calls).toBe(0);
  });

  test('a pinned endpoint removed while its attempt runs: the retry fails with PIN_UNAVAILABLE', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 5 } });
    h.eps.a!.then(fail('transient', 100));
    const call = start(h.pool.execute(h.op, { pin: 'a' }));
    await h.clock.advance(10);
    h.pool.setEndpoints([{ name: 'b', conn: h.eps.b! }]);
    await h.clock.advance(100);
    await call.promise;
    expect(code(call.error)).toBe('PIN_UNAVAILABLE');
    expect((call.error as Error).message).toBe('pinned endpoint "a" cannot serve: it was removed from the pool');
  });

  test('a pin is the endpoint named when the call starts: a new connection under its name mid-call ends the call, the same one does not', async () => {
    for (const same of [false, true]) {
      const h = harness(['a', 'b'], { breaker: { threshold: 5 } });
      h.eps.a!.then(fail('transient', 100));
      const call = start(h.pool.execute(h.op, { pin: 'a' }));
      await h.clock.advance(10);
      const next = same ? h.eps.a! : new FakeEndpoint('a');
      h.pool.setEndpoints([{ name: 'a', conn: next }, { name: 'b', conn: h.eps.b! }]);
      await h.clock.advance(1000);
      await call.promise;
      if (same) {
        expect(call.value).toBe('a');
        expect(h.eps.a!.calls).toBe(2);
      } else {
        expect(code(call.error)).toBe('PIN_UNAVAILABLE');
        expect((call.error as Error).message).toBe('pinned endpoint "a" cannot serve: it was removed from the pool');
        expect(next.calls).toBe(0);
      }
      expect(h.eps.b!.calls).toBe(0);
    }
  });
});

describe('signals', () => {
  test.each([
    ['null', null],
    ['a number', 5],
    ['no addEventListener', { aborted: false, removeEventListener: (): void => undefined }],
    ['no aborted flag', { addEventListener: (): void => undefined, removeEventListener: (): void => undefined }],
  ])('a signal that is %s is rejected', async (_, signal) => {
    const h = harness(['a']);
    const err = await h.pool.execute(h.op, { signal: signal as never }).catch((e: unknown) => e);
    expect(code(err)).toBe('INVALID_OPTIONS');
    expect(h.eps.a!.calls).toBe(0);
  });

  test('no abort listener is left on the caller’s signal, whatever ended the call', async () => {
    const h = harness(['a'], { maxAttempts: 1 });
    const ac = new AbortController();
    h.eps.a!.then(ok('x'), fail('transient'), hang());
    await h.pool.execute(h.op, { signal: ac.signal });
    await h.pool.execute(h.op, { signal: ac.signal }).catch(() => undefined);
    const hung = start(h.pool.execute(h.op, { signal: ac.signal, deadlineMs: 10 }));
    await h.clock.advance(10);
    await hung.promise;
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });
});
