/**
 * Twenty-seventh session, first mutation run of `src/call/hedging.ts`: what the call loop's
 * tests left open about hedges (bench/notes/mutation-s27.md). Fake clock, public API only.
 */
import { describe, expect, test } from 'vitest';
import type { AttemptContext, LimiterStore, PoolEvent } from '../../src/index.js';
import { fail, harness, hang, ok, start, type FakeEndpoint } from '../support.js';

const hedgeEvents = (events: PoolEvent[]) => events.filter((e): e is Extract<PoolEvent, { type: 'hedge' }> => e.type === 'hedge');
const code = (e: unknown) => (e as { code?: string } | undefined)?.code;

describe('how many hedges a call sends', () => {
  test.each([1, 2])('maxHedges %i is per call, retries included: a retry arms no hedge once they are spent', async (maxHedges) => {
    const h = harness(['a', 'b', 'c', 'd', 'e', 'f'], { hedge: { afterMs: 50, maxHedges }, attemptTimeoutMs: 200 });
    for (const ep of Object.values(h.eps)) ep.fallback = hang(true);
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 6 }, deadlineMs: 5_000 }));
    await h.clock.advance(5_000);
    await call.promise;
    expect(code(call.error)).toBe('RETRIES_EXHAUSTED');
    expect(hedgeEvents(h.events)).toHaveLength(maxHedges);
    // Every attempt is accounted for: the hedges and the primaries together make the six.
    expect(Object.values(h.eps).reduce((n, ep) => n + ep.calls, 0)).toBe(6);
  });

  test('the hedge event names the attempt the hedge is: the next attempt to start, on the endpoint it names', async () => {
    const h = harness(['a', 'b', 'c', 'd', 'e'], { hedge: { afterMs: 50, maxHedges: 2 }, attemptTimeoutMs: 200 });
    for (const ep of Object.values(h.eps)) ep.fallback = hang(true);
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 5 }, deadlineMs: 5_000 }));
    await h.clock.advance(5_000);
    await call.promise;
    const hedges = hedgeEvents(h.events);
    expect(hedges.length).toBe(2);
    for (const hedge of hedges) {
      const i = h.events.indexOf(hedge);
      const next = h.events.slice(i + 1).find((e) => e.type === 'attempt-start') as Extract<PoolEvent, { type: 'attempt-start' }>;
      expect([hedge.attempt, hedge.endpoint]).toEqual([next.attempt, next.endpoint]);
    }
    expect(hedges[0]!.attempt).toBe(2);
  });
});

describe('when a hedge goes', () => {
  test('with afterMs and no percentile, after afterMs even where durations are recorded (strategy latency)', async () => {
    const h = harness(['a', 'b'], { strategy: 'latency', hedge: { afterMs: 50 } });
    // Twenty-five quick answers on each: a percentile would be about 10 ms.
    for (let i = 0; i < 50; i++) {
      const c = start(h.pool.execute(h.op, { idempotent: true }));
      h.eps.a!.fallback = ok('a', 10);
      h.eps.b!.fallback = ok('b', 10);
      await h.clock.advance(10);
      await c.promise;
    }
    const before = h.events.filter((e) => e.type === 'hedge').length;
    h.eps.a!.then(ok('slow', 500));
    h.eps.b!.then(ok('slow', 500));
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(49);
    expect(h.events.filter((e) => e.type === 'hedge').length).toBe(before);
    await h.clock.advance(1);
    expect(h.events.filter((e) => e.type === 'hedge').length).toBe(before + 1);
    await h.clock.advance(500);
    await call.promise;
    expect(h.clock.now() - t0).toBeGreaterThanOrEqual(500);
  });
});

describe('where a hedge goes', () => {
  test('never to an endpoint that already failed in this call: with only that one left, no hedge', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, attemptTimeoutMs: 1_000 });
    h.eps.a!.then(fail('transient', 10));
    h.eps.b!.then(hang(true));
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 5 }, deadlineMs: 400 }));
    await h.clock.advance(400);
    await call.promise;
    expect(code(call.error)).toBe('DEADLINE_EXCEEDED');
    expect(hedgeEvents(h.events)).toEqual([]);
    expect([h.eps.a!.calls, h.eps.b!.calls]).toEqual([1, 1]);
  });

  test('to a third endpoint when there is one, not back to the one that failed', async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 }, attemptTimeoutMs: 1_000 });
    h.eps.a!.then(fail('transient', 10));
    h.eps.b!.then(hang(true));
    h.eps.c!.then(ok('c', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 5 } }));
    await h.clock.advance(400);
    await call.promise;
    expect(call.value).toBe('c');
    expect(hedgeEvents(h.events).map((e) => e.endpoint)).toEqual(['c']);
    expect(h.eps.a!.calls).toBe(1);
  });
});

describe('the endpoint a failed call names', () => {
  test('a retry that started after the hedge is the latest attempt: its endpoint is named, not the hedge’s', async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 }, attemptTimeoutMs: 100 });
    h.eps.a!.then(hang(true));
    h.eps.b!.then(fail('transient', 10));
    h.eps.c!.then(fail('permanent', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 5 } }));
    await h.clock.advance(1_000);
    await call.promise;
    const err = call.error as { code: string; endpoint: string; attempts: number };
    expect([err.code, err.endpoint, err.attempts]).toEqual(['PERMANENT', 'c', 3]);
    expect(hedgeEvents(h.events).map((e) => e.endpoint)).toEqual(['b']);
  });
});

describe('a hedge and the call’s end', () => {
  test('a call answered before its hedge time leaves no timer that keeps the process alive', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(ok('a', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(10);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.clock.pendingForegroundTimers).toBe(0);
    await h.clock.advance(100);
    expect(h.eps.b!.calls).toBe(0);
  });

  test('a refresh of the hedge’s credentials that ends after the call settled replays nothing', async () => {
    const h = harness(['a', 'b'], {
      hedge: { afterMs: 50 },
      refreshAuth: (_conn: FakeEndpoint, _ctx: AttemptContext) => new Promise<void>((resolve) => h.clock.setTimeout(resolve, 200)),
    });
    h.eps.a!.then(ok('a', 100));
    h.eps.b!.then(fail('unauthorized', 5));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(100);
    await call.promise;
    expect(call.value).toBe('a');
    await h.clock.advance(500);
    expect(h.eps.b!.calls).toBe(1);
    expect(h.events.filter((e) => e.type === 'attempt-start').length).toBe(2);
  });

  test('a refresh of the hedge’s credentials that ends while the primary still runs replays the hedge beside it, spending no retry', async () => {
    const h = harness(['a', 'b'], {
      hedge: { afterMs: 50 },
      refreshAuth: (_conn: FakeEndpoint, _ctx: AttemptContext) => new Promise<void>((resolve) => h.clock.setTimeout(resolve, 20)),
    });
    h.eps.a!.then(ok('a', 500));
    h.eps.b!.then(fail('unauthorized', 5), ok('b', 10));
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 2 } }));
    await h.clock.advance(200);
    await call.promise;
    expect(call.value).toBe('b');
    expect(h.eps.b!.startedAt.map((t) => t - t0)).toEqual([50, 75]);
  });
});

describe('a hedge’s credentials refreshed while the primary runs: no replay where an attempt could not go', () => {
  const refreshIn = (h: { clock: { setTimeout(fn: () => void, ms: number): unknown } }, ms: number) => (_conn: FakeEndpoint, _ctx: AttemptContext) =>
    new Promise<void>((resolve) => h.clock.setTimeout(resolve, ms));

  test('an endpoint removed from the pool meanwhile', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, refreshAuth: (c, x) => refreshIn(h, 20)(c, x) });
    h.eps.a!.then(ok('a', 500));
    h.eps.b!.then(fail('unauthorized', 5));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(60);
    await h.pool.setEndpoints([{ name: 'a', conn: h.eps.a! }]);
    await h.clock.advance(500);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.b!.calls).toBe(1);
  });

  test('an endpoint whose rate limit has no turn for it now', async () => {
    const h = harness(['a', { name: 'b', rateLimit: { perSecond: 1 } }], { hedge: { afterMs: 50 }, refreshAuth: (c, x) => refreshIn(h, 20)(c, x) });
    h.eps.a!.then(ok('a', 500));
    h.eps.b!.then(fail('unauthorized', 5));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(500);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.b!.calls).toBe(1);
  });

  test('an endpoint whose breaker opened meanwhile', async () => {
    const h = harness(['a', { name: 'b', maxInFlight: 5 }], { hedge: { afterMs: 50 }, breaker: { threshold: 1, cooldownMs: 60_000 }, refreshAuth: (c, x) => refreshIn(h, 20)(c, x) });
    h.eps.a!.then(ok('a', 500));
    h.eps.b!.then(fail('unauthorized', 5), fail('transient', 5));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(56);
    // Another call fails on b while the refresh runs: b's breaker opens.
    const other = start(h.pool.execute(h.op, { pin: 'b', retry: 'none' }));
    await h.clock.advance(500);
    await Promise.all([call.promise, other.promise]);
    expect(call.value).toBe('a');
    expect(h.eps.b!.calls).toBe(2);
  });
});

describe('hedges and the pool’s permits', () => {
  test.each([
    ["permitScope 'call' (the default): a hedge rides on its call's permit, even when that was the last one", { maxConcurrentCalls: 1 }],
    ["permitScope 'attempt' with no concurrency limit: hedges go out", { permitScope: 'attempt' as const }],
  ])('%s', async (_, options) => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, ...options });
    h.eps.a!.then(ok('slow', 500));
    h.eps.b!.then(ok('fast', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(60);
    expect(call.settled).toBe(true);
    expect(call.value).toBe('fast');
  });

  test("permitScope 'attempt': a hedge needs a free permit of its own; with none it is not sent, and it never queues", async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, maxConcurrentCalls: 1, permitScope: 'attempt' });
    h.eps.a!.then(ok('slow', 500));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(500);
    await call.promise;
    expect(call.value).toBe('slow');
    expect(h.eps.b!.calls).toBe(0);
    expect(hedgeEvents(h.events)).toEqual([]);
  });

  test("permitScope 'attempt': a hedge that fails gives its permit back at once", async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 }, maxConcurrentCalls: 2, permitScope: 'attempt' });
    h.eps.a!.then(ok('slow', 500));
    h.eps.b!.then(fail('transient', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(55);
    const t = h.clock.now();
    const other = start(h.pool.execute(h.op, { pin: 'c' }));
    await h.clock.advance(0);
    // Both permits are held (the primary and its hedge): c waits until the hedge fails at 60.
    expect(h.eps.c!.calls).toBe(0);
    await h.clock.advance(5);
    expect(h.eps.c!.startedAt).toEqual([t + 5]);
    await h.clock.advance(500);
    await Promise.all([call.promise, other.promise]);
    expect([call.value, other.value]).toEqual(['slow', 'c']);
  });
});

describe('a hedge on an endpoint whose limit the fleet shares', () => {
  /** A store that admits the primary at once and leaves the hedge's question to the test. */
  function handStore() {
    const answers: ((waitMs: number) => void)[] = [];
    const store: LimiterStore = {
      acquire() {
        if (answers.length === 0) return answers.push(() => undefined), Promise.resolve(0);
        return new Promise<number>((resolve) => answers.push(resolve));
      },
    };
    return { store, answers };
  }
  const limitedEp = (name: string) => ({ name, rateLimit: { perSecond: 100 } });

  // [case, the store's time-out, when the hedge's answer comes, the answer (a wait: a refusal), remove b first]
  test.each([
    ['an admission after the call settled', 1_000, 150, 0, false],
    ['an admission after the hedge’s endpoint was removed', 1_000, 70, 0, true],
    ['an admission after the store’s time-out (the time-out meant no hedge)', 30, 90, 0, false],
    ['a refusal', 1_000, 60, 200, false],
  ])('%s starts no hedge, and none is reported', async (_, timeoutMs, answerAt, waitMs, remove) => {
    const { store, answers } = handStore();
    const h = harness([limitedEp('a'), limitedEp('b')], { hedge: { afterMs: 50 }, sharedQuota: { store, timeoutMs } });
    h.eps.a!.then(ok('a', answerAt > 100 ? 100 : 500));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(50);
    expect(answers).toHaveLength(2); // the hedge asked about b
    if (remove) await h.pool.setEndpoints([{ ...limitedEp('a'), conn: h.eps.a! }]);
    await h.clock.advance(answerAt - 50);
    answers[1]!(waitMs);
    await h.clock.advance(500);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.b!.calls).toBe(0);
    expect(hedgeEvents(h.events)).toEqual([]);
  });

  test('an admitted hedge goes out, and the admission’s timer does not outlive the answer', async () => {
    const { store, answers } = handStore();
    const h = harness([limitedEp('a'), limitedEp('b')], { hedge: { afterMs: 50 }, sharedQuota: { store, timeoutMs: 1_000 } });
    h.eps.a!.then(ok('a', 500));
    h.eps.b!.then(ok('b', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(60);
    expect(hedgeEvents(h.events)).toEqual([]);
    answers[1]!(0);
    await h.clock.advance(20);
    expect(call.settled).toBe(true);
    expect(call.value).toBe('b');
    // Reported when it went out, with the attempt it is, just before its attempt-start.
    const i = h.events.findIndex((e) => e.type === 'hedge');
    expect(h.events[i]).toMatchObject({ type: 'hedge', endpoint: 'b', attempt: 2 });
    expect(h.events[i + 1]).toMatchObject({ type: 'attempt-start', endpoint: 'b', attempt: 2 });
    // Once a's cancelled request has run its course (the fake operation's own timer), nothing is left.
    await h.clock.advance(500);
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test('a store that does not answer in time: no hedge, the pool is marked degraded, the primary goes on', async () => {
    const asked: string[] = [];
    let first = true;
    const store: LimiterStore = {
      acquire(limit) {
        asked.push(limit.key);
        // The primary is admitted at once; the hedge's question is never answered.
        if (first) return (first = false), Promise.resolve(0);
        return new Promise<number>(() => undefined);
      },
    };
    const limited = (name: string) => ({ name, rateLimit: { perSecond: 100 } });
    const h = harness([limited('a'), limited('b')], { hedge: { afterMs: 50 }, sharedQuota: { store, timeoutMs: 30 } });
    h.eps.a!.then(ok('slow', 500));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(79);
    expect(h.events.some((e) => e.type === 'store-degraded')).toBe(false);
    await h.clock.advance(1);
    expect(h.events.find((e) => e.type === 'store-degraded')).toMatchObject({ error: { code: 'ATTEMPT_TIMEOUT', message: 'the shared limiter store did not answer in time' } });
    await h.clock.advance(420);
    await call.promise;
    expect(call.value).toBe('slow');
    expect(asked).toHaveLength(2);
    expect(h.eps.b!.calls).toBe(0);
    expect(h.clock.pendingForegroundTimers).toBe(0);
    // No hedge went out, so none is reported (a `hedge` event is followed by its attempt-start).
    expect(hedgeEvents(h.events)).toEqual([]);
  });
});
