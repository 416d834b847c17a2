/**
 * Issue 15, mutation rerun of the call loop (src/call/call.ts): how a call starts, selects,
 * waits and ends, pinned message by message and millisecond by millisecond. Fake clock,
 * public API only.
 */
import { describe, expect, test } from 'vitest';
import type { PoolEvent } from '../../src/index.js';
import { failure, fail, harness, hang, ok, start } from '../support.js';

const types = (events: PoolEvent[], ...wanted: string[]) => events.filter((e) => wanted.includes(e.type)).map((e) => ('endpoint' in e ? `${e.type}:${e.endpoint}` : e.type));

describe('how a call starts', () => {
  test('on a closed pool: CLOSED, no attempt', async () => {
    const h = harness(['a']);
    await h.pool.close();
    const err = await failure(h.pool.execute(h.op));
    expect([err.code, err.message, err.attempts]).toEqual(['CLOSED', 'the pool is closed', 0]);
    expect(h.eps.a!.calls).toBe(0);
  });

  test('with a signal already aborted: ABORTED, its reason as cause, no attempt', async () => {
    const h = harness(['a']);
    const ac = new AbortController();
    const reason = new Error('caller gave up');
    ac.abort(reason);
    const err = await failure(h.pool.execute(h.op, { signal: ac.signal }));
    expect([err.code, err.message, err.cause]).toEqual(['ABORTED', 'the call was aborted before it started', reason]);
    expect(h.eps.a!.calls).toBe(0);
  });

  test('aborted later: ABORTED with the signal’s reason as cause', async () => {
    const h = harness(['a']);
    h.eps.a!.then(hang());
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(10);
    const reason = new Error('later');
    ac.abort(reason);
    await call.promise;
    const err = call.error as { code: string; message: string; cause: unknown };
    expect([err.code, err.message, err.cause]).toEqual(['ABORTED', 'the call was aborted', reason]);
  });

  test('pinned to an endpoint it also excludes: PIN_UNAVAILABLE at once', async () => {
    const h = harness(['a', 'b']);
    const err = await failure(h.pool.execute(h.op, { pin: 'a', exclude: ['a'] }));
    expect([err.code, err.message]).toEqual(['PIN_UNAVAILABLE', 'pinned endpoint "a" is also excluded']);
    expect(await h.pool.execute(h.op, { pin: 'a', exclude: ['b'] })).toBe('a');
  });

  test("permitScope 'call': a call waiting before its first attempt already holds its permit", async () => {
    const h = harness(['a', 'b'], { maxConcurrentCalls: 1 });
    // a cools down for 500 ms; the pinned call waits for it, holding the only permit.
    h.eps.a!.then(fail({ class: 'rate-limited', retryAfterMs: 500 }));
    await h.pool.execute(h.op, { pin: 'a', retry: 'none' }).catch(() => undefined);
    const waiting = start(h.pool.execute(h.op, { pin: 'a', breakerMode: 'wait' }));
    await h.clock.advance(0);
    const other = start(h.pool.execute(h.op, { pin: 'b' }));
    await h.clock.advance(100);
    expect(other.settled).toBe(false);
    await h.clock.advance(1000);
    await Promise.all([waiting.promise, other.promise]);
    expect([waiting.value, other.value]).toEqual(['a', 'b']);
    expect(h.eps.b!.startedAt[0]! - h.eps.a!.startedAt[1]!).toBe(0);
  });

  test("permitScope 'attempt': a call waiting before its first attempt holds no permit", async () => {
    const h = harness(['a', 'b'], { maxConcurrentCalls: 1, permitScope: 'attempt' });
    h.eps.a!.then(fail({ class: 'rate-limited', retryAfterMs: 500 }));
    await h.pool.execute(h.op, { pin: 'a', retry: 'none' }).catch(() => undefined);
    const waiting = start(h.pool.execute(h.op, { pin: 'a', breakerMode: 'wait' }));
    await h.clock.advance(0);
    const t0 = h.clock.now();
    expect(await h.pool.execute(h.op, { pin: 'b' })).toBe('b');
    expect(h.eps.b!.startedAt).toEqual([t0]);
    await h.clock.advance(1000);
    await waiting.promise;
    expect(waiting.value).toBe('a');
  });
});

describe('selection and its waits', () => {
  test('a backoff sleep cut by the deadline ends the call at the deadline with no further attempt', async () => {
    const h = harness(['a'], { deadlineMs: 150, backoff: { initialMs: 400, maxMs: 10_000, jitter: 'none' } });
    h.eps.a!.then(fail('transient'));
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(149);
    expect(call.settled).toBe(false);
    await h.clock.advance(1);
    await call.promise;
    const err = call.error as { code: string; message: string; attempts: number };
    expect([err.code, err.message, err.attempts]).toEqual(['DEADLINE_EXCEEDED', 'the call\'s deadline of 150 ms passed after 1 attempt (failed: "a" transient)', 1]);
    expect(h.eps.a!.startedAt).toEqual([t0]);
    expect(types(h.events, 'attempt-start')).toEqual(['attempt-start:a']);
  });

  test('a retry that finds only tried endpoints backs off first; a new endpoint is tried at once', async () => {
    const h = harness(['a', 'b'], { backoff: { initialMs: 100, maxMs: 10_000, jitter: 'none' } });
    h.eps.a!.then(fail('transient'), fail('transient'));
    h.eps.b!.then(fail('transient'));
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { retry: { maxAttempts: 4 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('a');
    // a at 0, b at once, then both tried: a after 100 ms, then a again after 200 ms more.
    expect([...h.eps.a!.startedAt, ...h.eps.b!.startedAt].map((t) => t - t0).sort((x, y) => x - y)).toEqual([0, 0, 100, 300]);
    const delays = h.events.flatMap((e) => (e.type === 'retry-scheduled' ? [[e.attempt, e.delayMs, e.hinted]] : []));
    expect(delays).toEqual([
      [3, 100, false],
      [4, 200, false],
    ]);
  });

  test("breakerMode 'wait' with a pin whose breaker is open waits for its cooldown; 'fail-fast' says why", async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 300 } });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op, { pin: 'a', retry: 'none' }).catch(() => undefined);
    const err = await failure(h.pool.execute(h.op, { pin: 'a' }));
    expect([err.code, err.message, err.retryAfterMs]).toEqual(['PIN_UNAVAILABLE', 'pinned endpoint "a" cannot serve: its breaker is open', 300]);
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { pin: 'a', breakerMode: 'wait' }));
    await h.clock.advance(300);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.a!.startedAt.at(-1)).toBe(t0 + 300);
  });

  test('a pinned endpoint that is disabled: PIN_UNAVAILABLE says why, with no retry hint', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(fail({ class: 'transient', disableEndpoint: true }));
    await h.pool.execute(h.op, { pin: 'a', retry: 'none' }).catch(() => undefined);
    const err = await failure(h.pool.execute(h.op, { pin: 'a' }));
    expect([err.code, err.message, err.retryAfterMs, err.attempts]).toEqual(['PIN_UNAVAILABLE', 'pinned endpoint "a" cannot serve: it is disabled', undefined, 0]);
  });

  test('every breaker open, fail-fast: NO_ENDPOINT with the cooldown left and the last error as cause', async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 300 } });
    h.eps.a!.then(fail('transient'));
    const first = await failure(h.pool.execute(h.op, { retry: 'none' }));
    await h.clock.advance(100);
    const err = await failure(h.pool.execute(h.op));
    expect([err.code, err.message, err.retryAfterMs, err.attempts]).toEqual(['NO_ENDPOINT', 'no endpoint admits calls: "a" breaker open', 200, 0]);
    expect(err.cause).toBe(first.cause);
  });

  test("breakerMode 'wait' with every endpoint excluded or disabled fails at once instead of waiting forever", async () => {
    const h = harness(['a', 'b']);
    const err = await failure(h.pool.execute(h.op, { exclude: ['a', 'b'], breakerMode: 'wait' }));
    expect(err.code).toBe('NO_ENDPOINT');
    expect(err.retryAfterMs).toBeUndefined();
  });

  test("breakerMode 'wait' with an endpoint that could admit but no cooldown to wait for parks until it frees up", async () => {
    const h = harness([{ name: 'a', maxInFlight: 1 }], { breaker: { threshold: 1, cooldownMs: 100 } });
    h.eps.a!.then(fail('transient'), ok('probe', 50), ok('after', 0));
    await h.pool.execute(h.op, { retry: 'none' }).catch(() => undefined);
    await h.clock.advance(100);
    const probe = start(h.pool.execute(h.op));
    const waiter = start(h.pool.execute(h.op, { breakerMode: 'wait' }));
    const failFast = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    await failFast.promise;
    expect((failFast.error as { code: string }).code).toBe('NO_ENDPOINT');
    await h.clock.advance(50);
    await Promise.all([probe.promise, waiter.promise]);
    expect([probe.value, waiter.value]).toEqual(['probe', 'after']);
  });
});

describe('turns and parking', () => {
  test('a rate-limit turn on an endpoint whose breaker opened meanwhile: the call selects again', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, burst: 1 } }, { name: 'b', priority: 'low' }], { breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.a!.then(fail('transient', 50));
    const first = start(h.pool.execute(h.op, { retry: 'none' }));
    const queued = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(types(h.events, 'rate-limit-wait')).toEqual(['rate-limit-wait:a']);
    await h.clock.advance(200);
    await Promise.all([first.promise, queued.promise]);
    expect(queued.value).toBe('b');
    expect(h.eps.a!.calls).toBe(1);
  });

  test('after a transient failure a call queues for a token behind the calls already queued; after a 429 it goes first', async () => {
    for (const [verdict, order] of [['transient', ['second', 'first']], ['rate-limited', ['first', 'second']]] as const) {
      const h = harness([{ name: 'a', rateLimit: { perSecond: 10, burst: 1 } }], { rateLimitCooldownMs: 1 });
      const served: string[] = [];
      h.eps.a!.then(fail(verdict === 'transient' ? 'transient' : { class: 'rate-limited', retryAfterMs: 1 }, 10));
      const op = (name: string) => (ep: Parameters<typeof h.op>[0], ctx: Parameters<typeof h.op>[1]) =>
        h.op(ep, ctx).then((v) => {
          served.push(name);
          return v;
        });
      const first = start(h.pool.execute(op('first')));
      await h.clock.advance(5);
      const second = start(h.pool.execute(op('second')));
      await h.clock.advance(1000);
      await Promise.all([first.promise, second.promise]);
      expect(served).toEqual(order);
    }
  });

  test('a retry with no free slot anywhere parks (a hinted wait of unbounded length) until one frees up', async () => {
    const h = harness([{ name: 'a', maxInFlight: 1 }, 'b'], { breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.a!.then(ok('first', 100), ok('second', 0));
    h.eps.b!.then(fail('transient'));
    const first = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    const t0 = h.clock.now();
    const second = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(h.events.flatMap((e) => (e.type === 'retry-scheduled' ? [[e.attempt, e.delayMs, e.hinted]] : []))).toEqual([[2, Number.POSITIVE_INFINITY, true]]);
    await h.clock.advance(100);
    await Promise.all([first.promise, second.promise]);
    expect(second.value).toBe('second');
    expect(h.eps.a!.startedAt.at(-1)).toBe(t0 + 100);
  });
});

describe('failures', () => {
  test('PERMANENT and RETRY_NARROWER end the call at once with their messages; the attempt’s endpoint is named', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(fail('retry-narrower'));
    const narrower = await failure(h.pool.execute(h.op));
    expect([narrower.code, narrower.message, narrower.endpoint, narrower.attempts]).toEqual(['RETRY_NARROWER', 'endpoint "a" asked for a narrower request', 'a', 1]);
    h.eps.a!.then(fail('permanent'));
    const permanent = await failure(h.pool.execute(h.op));
    expect([permanent.code, permanent.endpoint, permanent.attempts]).toEqual(['PERMANENT', 'a', 1]);
    expect(h.eps.b!.calls).toBe(0);
  });

  test('unsupported: the endpoint is left out for the rest of the call, even after a backoff', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(fail('unsupported'));
    h.eps.b!.then(fail('transient'), ok('b again'));
    const call = start(h.pool.execute(h.op, { retry: { maxAttempts: 3 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('b again');
    expect(h.eps.a!.calls).toBe(1);
    expect(h.eps.b!.calls).toBe(2);
  });

  test('a permanent answer that disables its endpoint moves the call on instead of ending it', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(fail({ class: 'permanent', disableEndpoint: true }));
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.pool.stats()[0]!.status).toBe('disabled');
  });

  test('NO_ENDPOINT’s cause is the last error that counted against an endpoint, not a later permanent answer', async () => {
    const h = harness(['a', 'c'], { breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.a!.then(fail('transient'));
    const transient = await failure(h.pool.execute(h.op, { pin: 'a', retry: 'none' }));
    await h.clock.advance(10);
    h.eps.c!.then(fail('permanent'));
    await failure(h.pool.execute(h.op, { pin: 'c' }));
    await h.clock.advance(10);
    const err = await failure(h.pool.execute(h.op, { exclude: ['c'] }));
    expect(err.code).toBe('NO_ENDPOINT');
    expect(err.cause).toBe(transient.cause);
  });

  test('RETRIES_EXHAUSTED says how many attempts failed and carries the last cooldown', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(fail('transient'));
    h.eps.b!.then(fail({ class: 'rate-limited', retryAfterMs: 700 }));
    const err = await failure(h.pool.execute(h.op, { retry: { maxAttempts: 2 } }));
    expect([err.code, err.message, err.attempts, err.endpoint]).toEqual(['RETRIES_EXHAUSTED', 'all 2 attempts failed: "a" transient, "b" rate-limited', 2, 'b']);
    expect(err.retryAfterMs).toBeGreaterThanOrEqual(700);
    h.eps.a!.then(fail('transient'));
    const one = await failure(h.pool.execute(h.op, { retry: 'none', pin: 'a' }));
    expect([one.code, one.message, one.retryAfterMs]).toEqual(['RETRIES_EXHAUSTED', 'the only attempt allowed failed: "a" transient', undefined]);
  });

  test('RETRY_BUDGET_EXHAUSTED: the budget is asked before each retry, and its message counts the attempts', async () => {
    const h = harness(['a', 'b', 'c'], { retryBudget: { ratio: 0, minPerSecond: 0 } });
    h.eps.a!.then(fail('transient'));
    const err = await failure(h.pool.execute(h.op, { retry: { maxAttempts: 3 } }));
    expect([err.code, err.message, err.attempts, err.retryAfterMs]).toEqual(['RETRY_BUDGET_EXHAUSTED', 'the pool\'s retry budget is spent; no retry after 1 attempt (failed: "a" transient)', 1, undefined]);
    expect(h.eps.b!.calls).toBe(0);
  });

  test('a call whose running attempt fails after close() is not retried: CLOSED', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(fail('transient', 50));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    const closing = h.pool.close();
    await h.clock.advance(40);
    await call.promise;
    await closing;
    const err = call.error as { code: string; message: string; attempts: number };
    expect([err.code, err.message, err.attempts]).toEqual(['CLOSED', 'the pool was closed', 1]);
    expect(h.eps.b!.calls).toBe(0);
  });

  test('close() ends a backoff at once with CLOSED', async () => {
    const h = harness(['a']);
    h.eps.a!.then(fail('transient'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    await h.pool.close();
    await call.promise;
    const err = call.error as { code: string; message: string };
    expect([err.code, err.message]).toEqual(['CLOSED', 'the pool was closed while the call was waiting']);
    expect(types(h.events, 'call-failed')).toEqual(['call-failed']);
  });
});

describe('attempt time-outs', () => {
  test('a timed-out attempt is retried elsewhere at once, its error kept as the call’s cause', async () => {
    const h = harness(['a', 'b'], { attemptTimeoutMs: 100 });
    h.eps.a!.then(hang());
    h.eps.b!.then(hang());
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { retry: { maxAttempts: 2 } }));
    await h.clock.advance(200);
    await call.promise;
    const err = call.error as { code: string; cause: { code: string; message: string }; retryAfterMs: unknown };
    expect(err.code).toBe('RETRIES_EXHAUSTED');
    expect([err.cause.code, err.cause.message]).toEqual(['ATTEMPT_TIMEOUT', 'attempt 2 on endpoint "b" timed out after 100 ms']);
    expect(err.retryAfterMs).toBeUndefined();
    expect(h.eps.b!.startedAt).toEqual([t0 + 100]);
    expect(h.events.some((e) => e.type === 'retry-scheduled')).toBe(false);
  });

  test('a timeout after a rate-limited failure does not carry the old cooldown', async () => {
    const h = harness(['a', 'b'], { attemptTimeoutMs: 100 });
    h.eps.a!.then(fail({ class: 'rate-limited', retryAfterMs: 5000 }));
    h.eps.b!.then(hang());
    const err = await (async () => {
      const call = start(h.pool.execute(h.op, { retry: { maxAttempts: 2 } }));
      await h.clock.advance(200);
      await call.promise;
      return call.error as { code: string; retryAfterMs: unknown };
    })();
    expect(err.code).toBe('RETRIES_EXHAUSTED');
    expect(err.retryAfterMs).toBeUndefined();
  });

  test('the same endpoint after a timeout backs off first (it was tried)', async () => {
    const h = harness(['a'], { attemptTimeoutMs: 100 });
    h.eps.a!.then(hang());
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { retry: { maxAttempts: 2 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.a!.startedAt).toEqual([t0, t0 + 200]);
    expect(h.events.flatMap((e) => (e.type === 'retry-scheduled' ? [e.delayMs] : []))).toEqual([100]);
  });
});
