import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type PoolEvent } from '../src/index.js';
import { FakeClock, RecordingMetrics } from '../src/testing/index.js';
import { classify, fail, FakeEndpoint, harness, hang, ok, operation, start } from './support.js';

/** Checks the attempt contract on a recorded stream: one terminal event per start. */
function checkAttemptContract(events: PoolEvent[]): void {
  const open = new Map<string, number>();
  for (const e of events) {
    if (!('attempt' in e) || e.type === 'retry-scheduled') continue;
    const key = `${e.callId}/${e.attempt}`;
    if (e.type === 'attempt-start') {
      expect(open.has(key)).toBe(false);
      open.set(key, 0);
    } else {
      expect(open.get(key)).toBe(0);
      open.set(key, 1);
    }
  }
  for (const v of open.values()) expect(v).toBe(1);
}

describe('event contract', () => {
  test('a mixed run: every attempt-start has exactly one terminal event, on every path', async () => {
    const h = harness([{ name: 'a', maxInFlight: 2 }, 'b', { name: 'c', priority: 'low' }], {
      attemptTimeoutMs: 500,
      breaker: { threshold: 2, cooldownMs: 300 },
    });
    h.eps.a!.then(fail('transient'), hang(), fail('rate-limited'), ok('x', 30), fail('permanent'), hang(true));
    h.eps.b!.then(fail('transient', 20), fail('transient'), ok('y', 700));
    const calls = [];
    for (let i = 0; i < 12; i++) {
      const ac = new AbortController();
      calls.push(start(h.pool.execute(h.op, { signal: ac.signal })));
      if (i % 4 === 1) h.clock.setTimeout(() => ac.abort(), 200);
      await h.clock.advance(7);
    }
    await h.clock.advance(5000);
    await Promise.all(calls.map((c) => c.promise));
    expect(calls.every((c) => c.settled)).toBe(true);
    checkAttemptContract(h.events);
    expect(h.events.some((e) => e.type === 'attempt-cancelled')).toBe(true);
    expect(h.events.some((e) => e.type === 'attempt-failure' && e.errorClass === 'timeout')).toBe(true);
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test('probe-lost: a half-open probe out past the open period and the pool bound gives its slot to the next, which says so', async () => {
    // The pool bounds an attempt at 2 s; the probe's call lifted its own bound and its operation never settles.
    const h = harness(['a'], { attemptTimeoutMs: 2000, maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 500 } });
    h.eps.a!.then(fail('transient'), hang(), ok('up'));
    await start(h.pool.execute(h.op)).promise.catch(() => undefined);
    await h.clock.advance(500);
    const lost = start(h.pool.execute(h.op, { attemptTimeoutMs: Number.POSITIVE_INFINITY }));
    await h.clock.advance(1999); // out 1,999 ms: not yet presumed lost
    await expect(h.pool.execute(h.op, { breakerMode: 'fail-fast' })).rejects.toMatchObject({ code: 'NO_ENDPOINT' });
    expect(h.events.some((e) => e.type === 'probe-lost')).toBe(false);
    await h.clock.advance(1);
    await expect(h.pool.execute(h.op)).resolves.toBe('up');
    const at = h.events.findIndex((e) => e.type === 'probe-lost');
    expect(h.events[at]).toEqual({ type: 'probe-lost', endpoint: 'a', outMs: 2000 });
    expect(h.events[at - 1]).toMatchObject({ type: 'attempt-start', callId: 4, probe: true });
    expect(h.events.filter((e) => e.type === 'probe-lost')).toHaveLength(1);
    expect(lost.settled).toBe(false);
    await h.pool.close({ abortAfterMs: 0 });
  });

  test('retry-scheduled (with delay and attempt number) precedes every backoff sleep', async () => {
    const h = harness(['a'], { maxAttempts: 3, breaker: { threshold: 10 } });
    h.eps.a!.then(fail('transient'), fail('transient'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(300);
    await call.promise;
    const seq = h.events.map((e) => (e.type === 'retry-scheduled' ? `retry(${e.attempt},${e.delayMs})` : e.type));
    expect(seq).toEqual([
      'attempt-start',
      'attempt-failure',
      'retry(2,100)',
      'attempt-start',
      'attempt-failure',
      'retry(3,200)',
      'attempt-start',
      'attempt-success',
    ]);
  });

  test("the call's error is the one in call-failed, and its cause is the last attempt-failure's error", async () => {
    const h = harness(['a', 'b'], { maxAttempts: 2 });
    h.eps.a!.then(fail('transient'));
    h.eps.b!.then(fail('transient'));
    const err = await h.pool.execute(h.op).catch((e: unknown) => e);
    const failures = h.events.filter((e) => e.type === 'attempt-failure');
    const last = h.events.at(-1);
    expect(last?.type).toBe('call-failed');
    expect(last?.type === 'call-failed' && last.error).toBe(err);
    expect(isPoolError(err) && err.cause).toBe(failures.at(-1)?.type === 'attempt-failure' && failures.at(-1)!.error);
  });

  test('durations exclude waits for a permit, a token and a backoff', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1 } }], { maxConcurrentCalls: 1, breaker: { threshold: 10 } });
    h.eps.a!.then(ok('1', 40), fail('transient', 10), ok('3', 20));
    const one = start(h.pool.execute(h.op));
    const two = start(h.pool.execute(h.op));
    await h.clock.advance(5000);
    await Promise.all([one.promise, two.promise]);
    const durations = h.events.flatMap((e) => ('durationMs' in e ? [e.durationMs] : []));
    expect(durations).toEqual([40, 10, 20]);
    const observed = h.metrics.observations('endpoint_pool_attempt_duration_ms', { endpoint: 'a' });
    expect(observed).toEqual([40, 10, 20]);
  });

  test('listeners run after the state change they describe', async () => {
    const seen: string[] = [];
    const clock = new FakeClock();
    const a = new FakeEndpoint('a');
    a.then(fail('transient'));
    // eslint-disable-next-line prefer-const
    let pool: Pool<FakeEndpoint>;
    pool = new Pool<FakeEndpoint>({
      endpoints: [{ name: 'a', conn: a }],
      classify,
      clock,
      maxAttempts: 1,
      breaker: { threshold: 1 },
      onEvent: (e) => {
        if (e.type === 'breaker-opened') {
          const s = pool.breakerState('a');
          seen.push(typeof s === 'string' ? s : s.state);
        }
      },
    });
    await pool.execute(operation(clock)).catch(() => undefined);
    expect(seen).toEqual(['open']);
  });

  test('no event objects are built when nobody listens', async () => {
    const clock = new FakeClock();
    const a = new FakeEndpoint('a');
    const metrics = new RecordingMetrics();
    const pool = new Pool<FakeEndpoint>({ endpoints: [{ name: 'a', conn: a }], classify, clock, metrics });
    expect(await pool.execute(operation(clock))).toBe('a');
    expect(metrics.counter('endpoint_pool_attempts_total', { endpoint: 'a' })).toBe(1);
  });
});

describe('metrics', () => {
  test('every counter is labeled with the endpoint', async () => {
    const h = harness(['a', 'b'], { maxAttempts: 2, breaker: { threshold: 1 } });
    h.eps.a!.then(fail('transient'));
    h.eps.b!.then(fail('permanent'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.pool.probeHealth(async () => {
      throw new Error('down');
    });
    const names = new Set(h.metrics.records.map((r) => r.name));
    for (const r of h.metrics.records) expect(typeof r.labels['endpoint']).toBe('string');
    expect([...names].sort()).toEqual([
      'endpoint_pool_attempt_duration_ms',
      'endpoint_pool_attempts_total',
      'endpoint_pool_breaker_opened_total',
      'endpoint_pool_exhausted_total',
      'endpoint_pool_failures_total',
      'endpoint_pool_probe_failures_total',
    ]);
    expect(h.metrics.counter('endpoint_pool_exhausted_total', { endpoint: 'b', code: 'PERMANENT' })).toBe(1);
    expect(h.metrics.counter('endpoint_pool_failures_total', { endpoint: 'b', class: 'permanent' })).toBe(1);
    // a's breaker is open, so only b was probed.
    expect(h.metrics.counter('endpoint_pool_probe_failures_total', { endpoint: 'b' })).toBe(1);
    expect(h.metrics.counter('endpoint_pool_probe_failures_total', { endpoint: 'a' })).toBe(0);
  });

  test("a call that never reached an endpoint is counted under endpoint 'none'", async () => {
    const h = harness(['a']);
    const ac = new AbortController();
    ac.abort();
    await h.pool.execute(h.op, { signal: ac.signal }).catch(() => undefined);
    expect(h.metrics.counter('endpoint_pool_exhausted_total', { endpoint: 'none', code: 'ABORTED' })).toBe(1);
  });
});
