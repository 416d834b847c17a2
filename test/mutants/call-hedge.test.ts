/**
 * Issue 15, mutation rerun of the call loop (src/call/call.ts): hedged attempts, credential
 * refresh and the permit, as the call loop handles them. Fake clock, public API only.
 */
import { describe, expect, test } from 'vitest';
import type { AttemptContext, PoolEvent } from '../../src/index.js';
import { failure, fail, harness, hang, ok, start, type FakeEndpoint } from '../support.js';

const hedges = (events: PoolEvent[]) => events.filter((e) => e.type === 'hedge').map((e) => ('endpoint' in e ? e.endpoint : ''));

describe('when a call may hedge', () => {
  test('a hedge avoids the call’s excluded endpoints', async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(ok('slow', 500));
    h.eps.c!.then(ok('c', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true, exclude: ['b'] }));
    await h.clock.advance(100);
    await call.promise;
    expect(call.value).toBe('c');
    expect(hedges(h.events)).toEqual(['c']);
    expect(h.eps.b!.calls).toBe(0);
  });

  test('the hedge leaves the call’s own exclusions as they were: both tried endpoints stay usable after a backoff', async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(fail('transient', 100));
    h.eps.b!.then(fail('transient', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true, exclude: ['c'], retry: { maxAttempts: 5 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.c!.calls).toBe(0);
  });

  test('a pinned call never hedges', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(ok('slow', 500));
    const call = start(h.pool.execute(h.op, { idempotent: true, pin: 'a' }));
    await h.clock.advance(500);
    await call.promise;
    expect(call.value).toBe('slow');
    expect(hedges(h.events)).toEqual([]);
  });

  test('no hedge when the hedge time is the deadline: the call ends there', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, deadlineMs: 50 });
    h.eps.a!.then(hang());
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(50);
    await call.promise;
    expect((call.error as { code: string }).code).toBe('DEADLINE_EXCEEDED');
    expect(hedges(h.events)).toEqual([]);
    expect(h.eps.b!.calls).toBe(0);
  });

  test('no hedge while the call backs off after its first attempt failed', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, backoff: { initialMs: 100, maxMs: 10_000, jitter: 'none' } });
    h.eps.a!.then(fail('transient', 10));
    h.eps.b!.then(fail('transient', 10));
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 3 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('a');
    expect(hedges(h.events)).toEqual([]);
    expect([...h.eps.a!.startedAt, ...h.eps.b!.startedAt].map((t) => t - t0)).toEqual([0, 120, 10]);
  });
});

describe('failures while another attempt of the call runs', () => {
  test('a hedge answering retry-narrower ends the call at once and cancels the primary', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(hang(true));
    h.eps.b!.then(fail('retry-narrower', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(60);
    await call.promise;
    const err = call.error as { code: string; endpoint: string; attempts: number };
    expect([err.code, err.endpoint, err.attempts]).toEqual(['RETRY_NARROWER', 'b', 2]);
    expect(h.eps.a!.contexts[0]!.signal.aborted).toBe(true);
    expect(h.events.find((e) => e.type === 'attempt-cancelled')).toMatchObject({ endpoint: 'a', reason: 'aborted' });
  });

  test('a hedge answering unsupported leaves its endpoint out: when the primary then fails, nothing is left', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.a!.then(fail('transient', 100));
    h.eps.b!.then(fail('unsupported', 10));
    const err = await (async () => {
      const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 5 } }));
      await h.clock.advance(1000);
      await call.promise;
      return call.error as { code: string };
    })();
    expect(err.code).toBe('NO_ENDPOINT');
    expect(h.eps.b!.calls).toBe(1);
  });

  test('a hedge failing transiently is only marked tried: after the primary fails it is used again', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(fail({ class: 'transient', disableEndpoint: true }, 100));
    h.eps.b!.then(fail('transient', 10));
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 5 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('b');
    expect(h.eps.b!.startedAt.map((t) => t - t0)).toEqual([50, 200]);
  });

  test('a hedge on a disabled endpoint: the endpoint is left out and the primary goes on', async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 }, breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.a!.then(fail('transient', 100));
    h.eps.b!.then(fail({ class: 'transient', disableEndpoint: true }, 10));
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 5 } }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('c');
    expect(h.eps.b!.calls).toBe(1);
  });

  test('the last endpoint named is the latest attempt’s, hedge or primary', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, attemptTimeoutMs: 1000 });
    h.eps.a!.then(hang());
    h.eps.b!.then(hang());
    // Two attempts allowed: the hedge is the second (under retry: 'none' there is none).
    const call = start(h.pool.execute(h.op, { idempotent: true, retry: { maxAttempts: 2 }, deadlineMs: 200 }));
    await h.clock.advance(200);
    await call.promise;
    const err = call.error as { code: string; endpoint: string; attempts: number };
    expect([err.code, err.endpoint, err.attempts]).toEqual(['DEADLINE_EXCEEDED', 'b', 2]);
    const cancelled = h.events.filter((e) => e.type === 'attempt-cancelled').map((e) => 'endpoint' in e && e.endpoint);
    expect(cancelled).toEqual(['b']);
    // The cancelled hedge's signal carries the call's own error.
    expect(h.eps.b!.contexts[0]!.signal.reason).toBe(call.error);
  });

  test('a primary that times out while a hedge runs waits for the hedge instead of starting another attempt', async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 }, attemptTimeoutMs: 100 });
    h.eps.a!.then(hang());
    h.eps.b!.then(ok('b', 70));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(120);
    await call.promise;
    expect(call.value).toBe('b');
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([1, 1, 0]);
  });
});

describe('credential refresh and the call', () => {
  function slowRefresh(h: { clock: { setTimeout(fn: () => void, ms: number): unknown } }, ms: number, failWith?: Error) {
    const runs: string[] = [];
    const refreshAuth = (conn: FakeEndpoint, _ctx: AttemptContext): Promise<void> => {
      runs.push(conn.name);
      return new Promise<void>((resolve, reject) => h.clock.setTimeout(() => (failWith === undefined ? resolve() : reject(failWith)), ms));
    };
    return { runs, refreshAuth };
  }

  test('a refresh that ends after the call was aborted replays nothing', async () => {
    const clock = { setTimeout: (fn: () => void, ms: number) => h.clock.setTimeout(fn, ms) };
    const r = slowRefresh({ clock }, 100);
    const h = harness(['a'], { refreshAuth: r.refreshAuth });
    h.eps.a!.then(fail('unauthorized'));
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(50);
    ac.abort();
    await h.clock.advance(100);
    await call.promise;
    expect((call.error as { code: string }).code).toBe('ABORTED');
    expect(h.eps.a!.calls).toBe(1);
    expect(r.runs).toEqual(['a']);
  });

  test('a refresh that fails ends the call with AUTH, the refresh error as cause', async () => {
    const clock = { setTimeout: (fn: () => void, ms: number) => h.clock.setTimeout(fn, ms) };
    const boom = new Error('login refused');
    const r = slowRefresh({ clock }, 20, boom);
    const h = harness(['a', 'b'], { refreshAuth: r.refreshAuth });
    h.eps.a!.then(fail('unauthorized'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(20);
    await call.promise;
    const err = call.error as { code: string; message: string; cause: unknown };
    expect([err.code, err.message, err.cause]).toEqual(['AUTH', 'refreshing the credentials of endpoint "a" failed', boom]);
    expect(h.eps.b!.calls).toBe(0);
  });

  test('a refresh that ends after the endpoint’s breaker opened selects again instead of replaying there', async () => {
    const clock = { setTimeout: (fn: () => void, ms: number) => h.clock.setTimeout(fn, ms) };
    const r = slowRefresh({ clock }, 100);
    const h = harness([{ name: 'a', maxInFlight: 5 }, 'b'], { refreshAuth: r.refreshAuth, breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.a!.then(fail('unauthorized'), fail('transient', 50));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    const other = start(h.pool.execute(h.op, { pin: 'a', retry: 'none' }));
    await h.clock.advance(200);
    await Promise.all([call.promise, other.promise]);
    expect(call.value).toBe('b');
    expect(h.eps.a!.calls).toBe(2);
  });

  test("permitScope 'attempt': a call waiting for a refresh holds no permit", async () => {
    const clock = { setTimeout: (fn: () => void, ms: number) => h.clock.setTimeout(fn, ms) };
    const r = slowRefresh({ clock }, 100);
    const h = harness(['a', 'b'], { refreshAuth: r.refreshAuth, maxConcurrentCalls: 1, permitScope: 'attempt' });
    h.eps.a!.then(fail('unauthorized'));
    const call = start(h.pool.execute(h.op, { pin: 'a' }));
    await h.clock.advance(10);
    const t0 = h.clock.now();
    expect(await h.pool.execute(h.op, { pin: 'b' })).toBe('b');
    expect(h.eps.b!.startedAt).toEqual([t0]);
    await h.clock.advance(100);
    await call.promise;
    expect(call.value).toBe('a');
  });

  test("permitScope 'attempt': a hedged call keeps its permit while one of its attempts still runs", async () => {
    // Two permits: the hedge takes one of its own (under 'attempt', every attempt sent holds one).
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 }, maxConcurrentCalls: 2, permitScope: 'attempt' });
    h.eps.a!.then(fail('transient', 60));
    h.eps.b!.then(ok('b', 50));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(55);
    const other = start(h.pool.execute(h.op, { pin: 'c' }));
    await h.clock.advance(10);
    // a failed at 60; the hedge on b runs until 100: c waits for the permit.
    expect(h.eps.c!.calls).toBe(0);
    await h.clock.advance(50);
    await Promise.all([call.promise, other.promise]);
    expect([call.value, other.value]).toEqual(['b', 'c']);
    expect(h.eps.c!.startedAt[0]! - h.eps.b!.startedAt[0]!).toBe(50);
  });
});

describe('the permit before an attempt', () => {
  test("permitScope 'attempt': each attempt queues for a permit", async () => {
    const h = harness(['a', 'b'], { maxConcurrentCalls: 1, permitScope: 'attempt' });
    h.eps.a!.then(ok('a', 100));
    const t0 = h.clock.now();
    const one = start(h.pool.execute(h.op));
    const two = start(h.pool.execute(h.op, { pin: 'b' }));
    await h.clock.advance(100);
    await Promise.all([one.promise, two.promise]);
    expect(h.eps.b!.startedAt).toEqual([t0 + 100]);
    const err = await failure(h.pool.execute(() => Promise.reject(new Error('x')), { retry: 'none' }));
    expect(err.code).toBe('PERMANENT');
  });
});
