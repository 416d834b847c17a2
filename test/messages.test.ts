/**
 * Every way a call can fail, with its exact code, message, attempts and endpoint: the
 * messages are part of what users log, so they are pinned here (and they must stay free of
 * URLs and keys; see test/secrets.test.ts).
 */
import { describe, expect, test } from 'vitest';
import { isPoolError, type PoolError } from '../src/index.js';
import { fail, failure, harness, hang, ok, start } from './support.js';


describe('failure messages', () => {
  test('PERMANENT and RETRY_NARROWER name the endpoint', async () => {
    const h = harness(['a']);
    h.eps.a!.then(fail('permanent'), fail('retry-narrower'));
    const p = await failure(h.pool.execute(h.op));
    expect([p.code, p.message, p.attempts, p.endpoint]).toEqual(['PERMANENT', 'endpoint "a" answered with a permanent error', 1, 'a']);
    const n = await failure(h.pool.execute(h.op));
    expect([n.code, n.message]).toEqual(['RETRY_NARROWER', 'endpoint "a" asked for a narrower request']);
  });

  test('RETRIES_EXHAUSTED counts the attempts; after a 429 it carries the cooldown as retryAfterMs', async () => {
    const h = harness(['a'], { maxAttempts: 2, breaker: { threshold: 10 } });
    h.eps.a!.then(fail('transient'), fail({ class: 'rate-limited', retryAfterMs: 300 }));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await call.promise;
    const e = call.error as PoolError;
    // The hint plus its jitter (the harness's random source gives 0.5: 12.5 %).
    expect([e.code, e.message, e.attempts, e.retryAfterMs]).toEqual(['RETRIES_EXHAUSTED', 'all 2 attempts failed: "a" transient, "a" rate-limited', 2, 338]);
  });

  test('DEADLINE_EXCEEDED says the deadline and the attempts made', async () => {
    const h = harness(['a'], { deadlineMs: 250, attemptTimeoutMs: 100, breaker: { threshold: 10 } });
    h.eps.a!.fallback = hang();
    const call = start(h.pool.execute(h.op, { retry: 'until-deadline' }));
    await h.clock.advance(250);
    await call.promise;
    const e = call.error as PoolError;
    expect(e.code).toBe('DEADLINE_EXCEEDED');
    expect(e.message).toBe(`the call's deadline of 250 ms passed after ${e.attempts} attempt${e.attempts === 1 ? '' : 's'} (failed: ${Array(e.attempts).fill('"a" timeout').join(', ')})`);
    expect(e.attempts).toBeGreaterThanOrEqual(2);
    const cause = e.cause as PoolError;
    expect([cause.code, cause.endpoint]).toEqual(['ATTEMPT_TIMEOUT', 'a']);
    expect(cause.message).toMatch(/^attempt \d+ on endpoint "a" timed out after \d+ ms$/);
  });

  test('NO_ENDPOINT says why and when to come back', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 700 } });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(200);
    const e = await failure(h.pool.execute(h.op));
    expect([e.code, e.message, e.retryAfterMs, e.attempts]).toEqual(['NO_ENDPOINT', 'no endpoint admits calls: "a" breaker open', 500, 0]);
  });

  test('PIN_UNAVAILABLE says why', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 900 } });
    const excluded = await failure(h.pool.execute(h.op, { pin: 'a', exclude: ['a'] }));
    expect(excluded.message).toBe('pinned endpoint "a" is also excluded');
    h.eps.a!.then(fail('unsupported'));
    const unsupported = await failure(h.pool.execute(h.op, { pin: 'a' }));
    expect(unsupported.message).toBe('pinned endpoint "a" cannot serve: it answered that it does not support this operation');
    h.eps.b!.then(fail('transient'));
    await h.pool.execute(h.op, { pin: 'b', retry: 'none' }).catch(() => undefined);
    const open = await failure(h.pool.execute(h.op, { pin: 'b' }));
    expect([open.message, open.retryAfterMs]).toEqual(['pinned endpoint "b" cannot serve: its breaker is open', 900]);
    h.eps.a!.then(ok('slow', 100));
    const call = start(h.pool.execute(h.op, { pin: 'a', retry: { maxAttempts: 2 } }));
    h.eps.a!.then(fail('transient'));
    await h.clock.advance(1);
    h.pool.setEndpoints([{ name: 'b', conn: h.eps.b! }]);
    await h.clock.advance(100);
    await call.promise;
    expect(call.value).toBe('slow');
    const removed = await failure(h.pool.execute(h.op, { pin: 'a' }));
    expect(removed.message).toBe('pinned endpoint "a" is not in the pool');
  });

  test('ABORTED and CLOSED, before and during a call', async () => {
    const h = harness(['a']);
    const ac = new AbortController();
    ac.abort();
    expect((await failure(h.pool.execute(h.op, { signal: ac.signal }))).message).toBe('the call was aborted before it started');
    const later = new AbortController();
    h.eps.a!.then(hang());
    const running = start(h.pool.execute(h.op, { signal: later.signal }));
    await h.clock.advance(5);
    later.abort();
    await running.promise;
    expect((running.error as PoolError).message).toBe('the call was aborted');
    h.eps.a!.then(fail('transient'));
    const sleeping = start(h.pool.execute(h.op));
    await h.clock.advance(1);
    await h.pool.close();
    await sleeping.promise;
    expect((sleeping.error as PoolError).message).toBe('the pool was closed while the call was waiting');
    expect((await failure(h.pool.execute(h.op))).message).toBe('the pool is closed');
  });

  test("a call that did not reach an endpoint is counted under endpoint 'none', once per code", async () => {
    const h = harness(['a']);
    await h.pool.close();
    await h.pool.execute(h.op).catch(() => undefined);
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.metrics.counter('endpoint_pool_exhausted_total', { endpoint: 'none', code: 'CLOSED' })).toBe(2);
    expect(h.events.filter((e) => e.type === 'call-failed')).toHaveLength(2);
  });
});
