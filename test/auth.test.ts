import { describe, expect, test } from 'vitest';
import { isPoolError, type AttemptContext, type PoolError } from '../src/index.js';
import { fail, hang, harness, ok, start, type FakeEndpoint } from './support.js';


const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);

/** A refresher on the fake clock that takes `ms` and counts its runs. */
function refresher(h: { clock: { setTimeout(fn: () => void, ms: number): unknown } }, ms = 50, outcome: () => void = () => undefined) {
  const runs: string[] = [];
  const contexts: AttemptContext[] = [];
  const refreshAuth = (conn: FakeEndpoint, ctx: AttemptContext): Promise<void> => {
    runs.push(conn.name);
    contexts.push(ctx);
    return new Promise<void>((resolve, reject) =>
      h.clock.setTimeout(() => {
        try {
          outcome();
          resolve();
        } catch (e) {
          reject(e);
        }
      }, ms),
    );
  };
  return { runs, contexts, refreshAuth };
}

describe('unauthorized and credential refresh', () => {
  test('without refreshAuth, unauthorized is final at once', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(fail('unauthorized'));
    const err = await h.pool.execute(h.op).catch((e: unknown) => e);
    expect(code(err)).toBe('UNAUTHORIZED');
    expect(h.eps.b!.calls).toBe(0);
  });

  // Found by test/faults/generated.test.ts (liveness, seed 20261205): the fetch adapter's
  // first request to an endpoint is 'unauthorized' (no token yet); as a hedge beside a
  // hanging attempt it was dropped (no refresh, the endpoint marked tried), and the call
  // retried the hanging endpoint until it ran out of attempts.
  test('an unauthorized answer to a hedge refreshes that endpoint and replays there beside the running attempt', async () => {
    const r = refresher({ clock: { setTimeout: (fn, ms) => h.clock.setTimeout(fn, ms) } });
    const h = harness(['a', 'b'], { refreshAuth: r.refreshAuth, hedge: { afterMs: 50 }, attemptTimeoutMs: 1000, maxAttempts: 2 });
    h.eps.a!.then(hang(true));
    h.eps.b!.then(fail('unauthorized'), ok('b after refresh'));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(150);
    expect(r.runs).toEqual(['b']);
    await call.promise;
    expect(call.value).toBe('b after refresh');
    expect(h.eps.b!.startedAt.map((t) => t - 1_000_000)).toEqual([50, 100]);
    expect(h.eps.a!.contexts[0]!.signal.aborted).toBe(true);
  });

  // Found by test/faults/generated.test.ts (liveness, seed 2026120422, path 28): a hedge's
  // unauthorized attempt was counted until its replay, and with the primary timed out before
  // the refresh ended there was no replay: the call ran out of attempts one short.
  test("a hedge's unauthorized attempt spends no retry even when the primary has ended before the refresh", async () => {
    const r = refresher({ clock: { setTimeout: (fn, ms) => h.clock.setTimeout(fn, ms) } }, 300);
    const h = harness(['a', 'b'], { refreshAuth: r.refreshAuth, hedge: { afterMs: 50 }, attemptTimeoutMs: 200, maxAttempts: 2, backoff: { initialMs: 1, maxMs: 1 } });
    h.eps.a!.then(hang(true));
    h.eps.b!.then(fail('unauthorized'), ok('b after refresh'));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(1_000);
    await call.promise;
    expect(call.value).toBe('b after refresh');
    expect(r.runs).toEqual(['b']);
    // The hedge at 50 ms, refused; a timed out at 200 ms, and the call's second counted
    // attempt went to b (refused again, it would wait for the refresh running since 50 ms).
    expect(h.eps.a!.calls).toBe(1);
    expect(h.eps.b!.startedAt.map((t) => t - 1_000_000)).toEqual([50, 200]);
  });

  test('refreshes once, then replays on the same endpoint at once, spending no retry and scheduling no backoff', async () => {
    const r = refresher({ clock: { setTimeout: (fn, ms) => h.clock.setTimeout(fn, ms) } });
    const h = harness(['a', 'b'], { refreshAuth: r.refreshAuth, maxAttempts: 1 });
    h.eps.a!.then(fail('unauthorized'), ok('after refresh'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(50);
    await call.promise;
    expect(call.value).toBe('after refresh');
    expect(r.runs).toEqual(['a']);
    expect(h.eps.a!.startedAt.map((t) => t - 1_000_000)).toEqual([0, 50]);
    expect(h.eps.b!.calls).toBe(0);
    expect(h.trace((e) => e.type === 'retry-scheduled')).toEqual([]);
    expect(h.events.find((e) => e.type === 'auth-refresh')).toEqual({ type: 'auth-refresh', endpoint: 'a', ok: true });
  });

  test('a third unauthorized on that endpoint in the same call is final: two refreshes per endpoint per call', async () => {
    const r = refresher({ clock: { setTimeout: (fn, ms) => h.clock.setTimeout(fn, ms) } });
    const h = harness(['a', 'b'], { refreshAuth: r.refreshAuth, maxAttempts: 5 });
    // The endpoint's first refresh (often the lazy first fetch of credentials) counts: two
    // refreshes, three answers, then final.
    h.eps.a!.then(fail('unauthorized'), fail('unauthorized'), fail('unauthorized'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(100);
    await call.promise;
    expect(code(call.error)).toBe('UNAUTHORIZED');
    expect((call.error as PoolError).attempts).toBe(3);
    expect(r.runs).toEqual(['a', 'a']);
    // Every later call alike (a rotation right after a refresh is not the caller's fault).
    h.eps.a!.then(fail('unauthorized'), fail('unauthorized'), fail('unauthorized'));
    const next = start(h.pool.execute(h.op));
    await h.clock.advance(100);
    await next.promise;
    expect(code(next.error)).toBe('UNAUTHORIZED');
    expect((next.error as PoolError).attempts).toBe(3);
    expect(r.runs).toEqual(['a', 'a', 'a', 'a']);
    expect(h.eps.b!.calls).toBe(0);
  });

  test('unauthorized is a reachable answer: it closes a half-open breaker and keeps the failure run', async () => {
    const r = refresher({ clock: { setTimeout: (fn, ms) => h.clock.setTimeout(fn, ms) } });
    const h = harness(['a'], { refreshAuth: r.refreshAuth, breaker: { threshold: 2, cooldownMs: 1000 }, maxAttempts: 1 });
    h.eps.a!.then(fail('transient'), fail('transient'), fail('unauthorized'), ok('x'), fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(1000);
    const probe = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(h.pool.breakerState('a')).toBe('closed');
    await h.clock.advance(50);
    await probe.promise;
    expect(probe.value).toBe('x');
  });

  test('a refresh that throws fails the call at once with AUTH, the refresh error as cause, and leaves the breaker alone', async () => {
    const boom = new Error('token endpoint down');
    const r = refresher({ clock: { setTimeout: (fn, ms) => h.clock.setTimeout(fn, ms) } }, 10, () => {
      throw boom;
    });
    const h = harness(['a', 'b'], { refreshAuth: r.refreshAuth, breaker: { threshold: 1 } });
    h.eps.a!.then(fail('unauthorized'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    await call.promise;
    expect(code(call.error)).toBe('AUTH');
    expect((call.error as PoolError).cause).toBe(boom);
    expect(h.pool.breakerState('a')).toBe('closed');
    expect(h.eps.b!.calls).toBe(0);
  });

  test('fifty calls hitting unauthorized together run one refresh and all replay after it', async () => {
    let runs = 0;
    let token = 'old';
    const h = harness(['a'], {
      refreshAuth: () => {
        runs++;
        return new Promise<void>((resolve) =>
          h.clock.setTimeout(() => {
            token = 'new';
            resolve();
          }, 100),
        );
      },
      classify: () => 'unauthorized',
    });
    const op = (): Promise<string> => (token === 'new' ? Promise.resolve('ok') : Promise.reject(new Error('401')));
    const calls = Array.from({ length: 50 }, () => start(h.pool.execute(op)));
    await h.clock.advance(99);
    expect(runs).toBe(1);
    expect(calls.some((c) => c.settled)).toBe(false);
    await h.clock.advance(1);
    await Promise.all(calls.map((c) => c.promise));
    expect(calls.map((c) => c.value)).toEqual(Array(50).fill('ok'));
    expect(runs).toBe(1);
    expect(h.events.filter((e) => e.type === 'auth-refresh')).toHaveLength(1);
    expect(h.events.filter((e) => e.type === 'attempt-start')).toHaveLength(100);
  });

  test('a refresh that hangs past the deadline: the call fails DEADLINE_EXCEEDED, nothing is left behind', async () => {
    const h = harness(['a'], { refreshAuth: () => new Promise(() => undefined), refreshTimeoutMs: 60_000, deadlineMs: 500 });
    h.eps.a!.then(fail('unauthorized'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(500);
    await call.promise;
    expect(code(call.error)).toBe('DEADLINE_EXCEEDED');
    // The refresh's own timeout is still pending for other callers; it ends on its own.
    await h.clock.advance(60_000);
    expect(h.clock.pendingForegroundTimers).toBe(0);
    expect(h.events.find((e) => e.type === 'auth-refresh')).toMatchObject({ ok: false });
  });

  test('a refresh times out on its own timeout and aborts its signal', async () => {
    let signal: AbortSignal | undefined;
    const h = harness(['a'], {
      refreshAuth: (_c, ctx) => {
        signal = ctx.signal;
        return new Promise(() => undefined);
      },
      refreshTimeoutMs: 200,
    });
    h.eps.a!.then(fail('unauthorized'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(200);
    await call.promise;
    expect(code(call.error)).toBe('AUTH');
    expect(code((call.error as PoolError).cause)).toBe('ATTEMPT_TIMEOUT');
    expect(signal?.aborted).toBe(true);
  });

  test('aborting one waiting caller does not cancel the refresh for the others', async () => {
    let runs = 0;
    let refreshed = false;
    const h = harness(['a'], {
      refreshAuth: () => {
        runs++;
        return new Promise<void>((resolve) =>
          h.clock.setTimeout(() => {
            refreshed = true;
            resolve();
          }, 100),
        );
      },
      classify: () => 'unauthorized',
    });
    const op = (): Promise<string> => (refreshed ? Promise.resolve('ok') : Promise.reject(new Error('401')));
    const ac = new AbortController();
    const quitter = start(h.pool.execute(op, { signal: ac.signal }));
    const stayer = start(h.pool.execute(op));
    await h.clock.advance(30);
    ac.abort();
    await h.clock.advance(70);
    await Promise.all([quitter.promise, stayer.promise]);
    expect(code(quitter.error)).toBe('ABORTED');
    expect(stayer.value).toBe('ok');
    expect(runs).toBe(1);
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test('close() ends a refresh still running: its signal aborts, its timer is cleared, and close() resolves owning no timer', async () => {
    let signal: AbortSignal | undefined;
    const h = harness(['a'], {
      refreshAuth: (_c, ctx) => {
        signal = ctx.signal;
        return new Promise(() => undefined);
      },
      refreshTimeoutMs: 60_000,
      deadlineMs: 500,
    });
    h.eps.a!.then(fail('unauthorized'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(500);
    await call.promise;
    expect(code(call.error)).toBe('DEADLINE_EXCEEDED');
    await h.pool.close();
    expect(h.clock.pendingForegroundTimers).toBe(0);
    expect(signal?.aborted).toBe(true);
    expect(code(h.events.find((e) => e.type === 'auth-refresh' && !e.ok && 'error' in e)?.['error' as never])).toBe('CLOSED');
  });

  test('an unauthorized answer that comes after close() is final: no refresh, no replay', async () => {
    const r = refresher({ clock: { setTimeout: (fn, ms) => h.clock.setTimeout(fn, ms) } }, 0);
    const h = harness(['a'], { refreshAuth: r.refreshAuth });
    h.eps.a!.then(fail('unauthorized', 10));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(5);
    const closing = h.pool.close();
    await h.clock.advance(5);
    await call.promise;
    await closing;
    expect(code(call.error)).toBe('UNAUTHORIZED');
    expect(r.runs).toEqual([]);
    expect(h.eps.a!.calls).toBe(1);
  });
});

describe('a refresh that never settles (forty-first session)', () => {
  test('with no attempt timeout, the deadline bounds it; the next call that meets unauthorized refreshes again (it used to wait on the stuck refresh for good)', async () => {
    let refreshes = 0;
    let valid = false;
    const h = harness(['a'], {
      attemptTimeoutMs: Infinity,
      deadlineMs: 5_000,
      refreshAuth: () => (++refreshes === 1 ? new Promise<void>(() => undefined) : Promise.resolve(void (valid = true))),
    });
    h.eps.a!.fallback = fail('unauthorized');
    const op = (ep: FakeEndpoint, ctx: AttemptContext) => (valid ? Promise.resolve('ok') : h.op(ep, ctx));
    await expect(h.clock.runUntilSettled(h.pool.execute(op))).rejects.toSatisfy((e) => isPoolError(e));
    expect(refreshes).toBe(1);
    await h.clock.advance(10_000);
    await expect(h.clock.runUntilSettled(h.pool.execute(op))).resolves.toBe('ok');
    expect(refreshes).toBe(2);
  });

  test('with neither bound, the default attempt timeout (10 s) bounds it', async () => {
    let refreshes = 0;
    const h = harness(['a'], { attemptTimeoutMs: Infinity, deadlineMs: Infinity, refreshAuth: () => (refreshes++, new Promise<void>(() => undefined)) });
    h.eps.a!.fallback = fail('unauthorized');
    const first = start(h.pool.execute(h.op));
    await h.clock.advance(9_999);
    expect(first.settled).toBe(false);
    await h.clock.advance(1);
    expect(first.settled).toBe(true);
    expect(code(first.error)).toBe('AUTH');
    expect(refreshes).toBe(1);
  });
});

describe('pool.report', () => {
  test('adds endpoint-labeled counters through the same sink and event stream', () => {
    const h = harness(['a']);
    h.pool.report('a', 'rows_parsed_total', 120);
    h.pool.report('a', 'writes_acknowledged_total');
    expect(h.metrics.counter('rows_parsed_total', { endpoint: 'a' })).toBe(120);
    expect(h.metrics.counter('writes_acknowledged_total', { endpoint: 'a' })).toBe(1);
    expect(h.events).toEqual([
      { type: 'report', endpoint: 'a', name: 'rows_parsed_total', value: 120 },
      { type: 'report', endpoint: 'a', name: 'writes_acknowledged_total', value: 1 },
    ]);
    expect(() => h.pool.report('nope', 'x')).toThrow(/expected the name of an endpoint/);
    expect(() => h.pool.report('a', 'x', Number.NaN)).toThrow(/value: expected a finite number ≥ 0, got NaN/);
  });

  test("refuses what a counter cannot take, and the pool's own names, recording nothing", () => {
    const h = harness(['a']);
    // prom-client throws on a negative inc and OpenTelemetry drops it: both lost the value without a word.
    expect(() => h.pool.report('a', 'rows', -1)).toThrow(/value: expected a finite number ≥ 0/);
    expect(() => h.pool.report('a', 'rows', Number.POSITIVE_INFINITY)).toThrow(/value: expected a finite number ≥ 0/);
    // Added to the pool's own series, a report would make them lie.
    expect(() => h.pool.report('a', 'endpoint_pool_attempts_total', 5)).toThrow(/name: expected a metric name not starting 'endpoint_pool_'/);
    expect(() => h.pool.report('a', '')).toThrow(/name: expected a metric name/);
    h.pool.report('a', 'rows', 0);
    h.pool.report('a', 'rows', -0);
    expect(h.metrics.counter('rows', { endpoint: 'a' })).toBe(0);
    expect(h.metrics.counter('endpoint_pool_attempts_total', { endpoint: 'a' })).toBe(0);
    expect(h.events.filter((e) => e.type === 'report')).toHaveLength(2);
  });
});
