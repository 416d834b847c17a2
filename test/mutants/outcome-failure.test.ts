/**
 * Issue 15, mutation rerun: what a failed, timed-out or cancelled attempt records
 * (src/call/outcome.ts): counters, the health-ranking feed (`failures5m`), the latency
 * feed, the breaker, hints, and the metrics and events that report them. Through the
 * public API on the fake clock.
 */
import { describe, expect, test } from 'vitest';
import { isPoolError, type PoolError } from '../../src/index.js';
import { fail, harness, hang, ok, start } from '../support.js';

const FAILURES = 'endpoint_pool_failures_total';
const OPENED = 'endpoint_pool_breaker_opened_total';
const DURATION = 'endpoint_pool_attempt_duration_ms';
const EXHAUSTED = 'endpoint_pool_exhausted_total';

async function failure(p: Promise<unknown>): Promise<PoolError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isPoolError(e)).toBe(true);
  return e as PoolError;
}

describe('counters and the health-ranking feed', () => {
  test('every failed attempt counts in failures; only transient, rate-limited and timed-out ones in failures5m', async () => {
    const h = harness(['a'], { maxAttempts: 1, attemptTimeoutMs: 100, breaker: { threshold: 100 }, rateLimitCooldownMs: 1 });
    const stats = () => h.pool.stats()[0]!;
    const once = async () => {
      const c = start(h.pool.execute(h.op));
      await h.clock.advance(100);
      await c.promise;
    };
    h.eps.a!.then(fail('permanent'));
    await once();
    expect([stats().failures, stats().failures5m]).toEqual([1, 0]);
    h.eps.a!.then(fail('unsupported'));
    await once();
    expect([stats().failures, stats().failures5m]).toEqual([2, 0]);
    h.eps.a!.then(fail('transient'));
    await once();
    expect([stats().failures, stats().failures5m]).toEqual([3, 1]);
    await h.clock.advance(10);
    h.eps.a!.then(fail('rate-limited'));
    await once();
    expect([stats().failures, stats().failures5m, stats().rateLimited]).toEqual([4, 2, 1]);
    await h.clock.advance(10);
    h.eps.a!.then(hang());
    await once();
    expect([stats().failures, stats().failures5m]).toEqual([5, 3]);
    expect(stats().successes).toBe(0);
  });

  test('a failure counted under one class label per attempt, with its duration and the call-failed counter', async () => {
    const h = harness(['a'], { maxAttempts: 1 });
    h.eps.a!.then(fail('transient', 30));
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(30);
    await c.promise;
    expect(h.metrics.counter(FAILURES, { endpoint: 'a', class: 'transient' })).toBe(1);
    expect(h.metrics.counter(FAILURES)).toBe(1);
    expect(h.metrics.observations(DURATION, { endpoint: 'a' })).toEqual([30]);
    expect(h.metrics.counter(EXHAUSTED, { endpoint: 'a', code: 'RETRIES_EXHAUSTED' })).toBe(1);
    expect(h.metrics.counter(OPENED)).toBe(0);
    expect(h.events.find((e) => e.type === 'attempt-failure')).toMatchObject({ endpoint: 'a', attempt: 1, durationMs: 30, errorClass: 'transient' });
    expect(h.events.find((e) => e.type === 'call-failed')).toMatchObject({ error: { code: 'RETRIES_EXHAUSTED' } });
  });

  test('a call that never reached an endpoint counts as exhausted with no endpoint label', async () => {
    const h = harness(['a']);
    const err = await failure(h.pool.execute(h.op, { exclude: ['a'] }));
    expect(err.code).toBe('NO_ENDPOINT');
    const rec = h.metrics.records.filter((r) => r.name === EXHAUSTED);
    expect(rec).toHaveLength(1);
    expect(rec[0]!.labels).toMatchObject({ code: 'NO_ENDPOINT' });
    expect(rec[0]!.labels['endpoint']).not.toBe('a');
  });

  test('the failure that opens the breaker: its metric and breaker-opened before attempt-failure', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 2, cooldownMs: 3000 } });
    h.eps.a!.fallback = fail('transient');
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.metrics.counter(OPENED)).toBe(0);
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.metrics.counter(OPENED, { endpoint: 'a' })).toBe(1);
    expect(h.trace((e) => e.type === 'breaker-opened' || e.type === 'attempt-failure')).toEqual(['attempt-failure:a', 'breaker-opened:a', 'attempt-failure:a']);
    expect(h.events.find((e) => e.type === 'breaker-opened')).toMatchObject({ cooldownMs: 3000 });
  });
});

describe('a failed probe and the breaker', () => {
  async function opened(h: ReturnType<typeof harness>): Promise<void> {
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op, { retry: 'none', breakerMode: 'fail-fast' }).catch(() => undefined);
    expect(h.pool.stats()[0]!.breaker.state).toBe('open');
    await h.clock.advance(1000);
  }

  test('a permanent answer to a probe proves the endpoint up: the breaker closes, breaker-closed before attempt-failure', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 1000 } });
    await opened(h);
    h.eps.a!.then(fail('permanent'));
    expect((await failure(h.pool.execute(h.op))).code).toBe('PERMANENT');
    expect(h.pool.stats()[0]!.breaker.state).toBe('closed');
    expect(h.trace((e) => e.type === 'breaker-closed' || e.type === 'attempt-failure').slice(-2)).toEqual(['breaker-closed:a', 'attempt-failure:a']);
  });

  test('an operation that throws synchronously during a probe says nothing about the endpoint: the breaker stays open', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 1000 } });
    await opened(h);
    const err = await failure(
      h.pool.execute(() => {
        throw new Error('bug');
      }),
    );
    expect(err.code).toBe('PERMANENT');
    expect(err.message).toBe('the operation threw synchronously on endpoint "a" instead of returning a rejected promise; not retried');
    expect(h.pool.stats()[0]!.breaker.state).not.toBe('closed');
    expect(h.trace((e) => e.type === 'breaker-closed')).toEqual([]);
    // The probe slot is free again: the next call probes.
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(h.pool.stats()[0]!.breaker.state).toBe('closed');
  });

  test('a synchronous throw after a failure that carried hints: none of those hints is applied to the next endpoint (regression)', async () => {
    const h = harness(['a', 'b', 'c'], { strategy: 'ordered' });
    h.eps.a!.then(fail({ class: 'transient', dailyQuotaExhausted: true, ceilingPerSecond: 2, disableEndpoint: false }));
    const err = await failure(
      h.pool.execute((ep, ctx) => {
        if (ep.name === 'b') throw new Error('bug');
        return h.op(ep, ctx);
      }),
    );
    expect(err.code).toBe('PERMANENT');
    const b = h.pool.stats()[1]!;
    expect(b.ceilingPerSecond).toBeUndefined();
    expect(h.eps.c!.startedAt).toEqual([]);
    expect(h.trace((e) => e.type === 'endpoint-recalibrated' || e.type === 'endpoint-parked')).toEqual(['endpoint-recalibrated:a', 'endpoint-parked:a']);
  });

  test('a classifier that throws during a probe: the breaker stays open and the message blames the classifier', async () => {
    let throwing = false;
    const h = harness(['a'], {
      maxAttempts: 1,
      breaker: { threshold: 1, cooldownMs: 1000 },
      classify: (e) => {
        if (throwing) throw new RangeError('oops');
        return (e as { verdict: 'transient' }).verdict;
      },
    });
    await opened(h);
    throwing = true;
    h.eps.a!.then(fail('transient'));
    const err = await failure(h.pool.execute(h.op));
    expect(err.code).toBe('PERMANENT');
    expect(err.message).toBe('classify threw a RangeError for the error from endpoint "a"; treated as permanent');
    expect(h.pool.stats()[0]!.breaker.state).not.toBe('closed');
  });

  test("breakerMode 'wait': a probe answered rate-limited frees the calls parked behind it", async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000 }, breakerMode: 'wait', deadlineMs: 20_000, rateLimitCooldownMs: 500 });
    await opened(h);
    h.eps.a!.then(fail('rate-limited', 100), ok('parked', 0));
    const probe = start(h.pool.execute(h.op, { retry: 'none' }));
    await h.clock.advance(10);
    const parked = start(h.pool.execute(h.op));
    await h.clock.advance(3000);
    await probe.promise;
    await parked.promise;
    expect(isPoolError(probe.error)).toBe(true);
    expect(parked.value).toBe('parked');
    // It went once the 500 ms cooldown after the probe's answer was over.
    const probeAt = h.eps.a!.startedAt[1]!;
    expect(h.eps.a!.startedAt.slice(2)).toEqual([probeAt + 600]);
  });
});

describe('a breaker closed by an attempt sent before it opened wakes the calls parked behind a probe', () => {
  test.each(['success', 'permanent answer'])("breakerMode 'wait': closed by a %s, a parked call goes at once, not when the probe ends", async (how) => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000 }, breakerMode: 'wait', deadlineMs: 60_000, maxAttempts: 1 });
    h.eps.a!.then(fail('transient', 10), how === 'success' ? ok('old', 1100) : fail('permanent', 1100), ok('probe', 5000), ok('parked'));
    const failing = start(h.pool.execute(h.op, { breakerMode: 'fail-fast' }));
    const old = start(h.pool.execute(h.op)); // sent at 0, answers at 1100
    await h.clock.advance(1010); // the breaker opened at 10; its cooldown is over
    const probe = start(h.pool.execute(h.op)); // the probe, out until 6010
    await h.clock.advance(10);
    const parked = start(h.pool.execute(h.op)); // waits for the probe: no timer
    await h.clock.advance(80);
    await Promise.all([failing.promise, old.promise]);
    expect(h.pool.stats()[0]!.breaker.state).toBe('closed');
    await h.clock.advance(0);
    expect(h.eps.a!.startedAt.map((t) => t - h.eps.a!.startedAt[0]!)).toEqual([0, 0, 1010, 1100]);
    await h.clock.advance(5000);
    await Promise.all([probe.promise, parked.promise]);
    expect([probe.value, parked.value]).toEqual(['probe', 'parked']);
  });
});

describe('messages', () => {
  test('a classifier answer that is not an error class is named in the PERMANENT message', async () => {
    const h = harness(['a'], { classify: () => 'bogus' as never });
    h.eps.a!.then(fail('transient'));
    const err = await failure(h.pool.execute(h.op));
    expect(err.message).toBe('classify returned "bogus", not an error class for the error from endpoint "a"; treated as permanent');
  });

  test('a valid permanent answer blames the endpoint', async () => {
    const h = harness(['a']);
    h.eps.a!.then(fail('permanent'));
    expect((await failure(h.pool.execute(h.op))).message).toBe('endpoint "a" answered with a permanent error');
  });

  test('an operation returning a non-promise is told to return one', async () => {
    const h = harness(['a']);
    const err = await failure(h.pool.execute((() => 42) as never));
    expect(err.message).toBe('the operation returned a number, not a promise (on endpoint "a"); return a promise, e.g. make it async');
  });

  test('a spent retry budget counts attempts in words: "1 attempt", "2 attempts"', async () => {
    for (const [n, words] of [
      [1, '1 attempt (failed: "a" transient)'],
      [2, '2 attempts (failed: "a" transient, "b" transient)'],
    ] as const) {
      const h = harness(['a', 'b', 'c'], { maxAttempts: 5, retryBudget: { ratio: 0, minPerSecond: n - 1, windowMs: 1000 } });
      for (const e of Object.values(h.eps)) e.fallback = fail('transient');
      const c = start(h.pool.execute(h.op));
      await h.clock.advance(10_000);
      await c.promise;
      expect(isPoolError(c.error) && c.error.code).toBe('RETRY_BUDGET_EXHAUSTED');
      expect((c.error as Error).message).toBe(`the pool's retry budget is spent; no retry after ${words}`);
    }
  });
});

describe('rate-limited answers', () => {
  test('endpoint-cooling only after a rate-limited answer, with the cooldown set', async () => {
    const h = harness(['a', 'b'], { rateLimitCooldownMs: 700, strategy: 'ordered' });
    h.eps.a!.then(fail('transient'));
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await c.promise;
    expect(h.trace((e) => e.type === 'endpoint-cooling')).toEqual([]);
    h.eps.a!.then(fail('rate-limited'));
    await h.pool.execute(h.op);
    expect(h.events.filter((e) => e.type === 'endpoint-cooling')).toEqual([{ type: 'endpoint-cooling', endpoint: 'a', cooldownMs: 700 }]);
    expect(h.pool.stats()[0]!.cooldownRemainingMs).toBe(700);
  });
});

describe('hints: a spent day, an invalid key', () => {
  test('a permanent answer that disables its endpoint moves the call on at once, and disables it once', async () => {
    const h = harness(['a', 'b'], { strategy: 'ordered', hedge: { afterMs: 10 } });
    h.eps.a!.then(fail({ class: 'permanent', disableEndpoint: true }, 20), fail({ class: 'permanent', disableEndpoint: true }, 30));
    const one = start(h.pool.execute(h.op, { pin: 'a', retry: 'none' }));
    const two = start(h.pool.execute(h.op, { pin: 'a', retry: 'none' }));
    await h.clock.advance(30);
    await Promise.all([one.promise, two.promise]);
    expect(h.trace((e) => e.type === 'endpoint-disabled')).toEqual(['endpoint-disabled:a']);
    expect(h.pool.stats()[0]!.status).toBe('disabled');

    const g = harness(['a', 'b'], { strategy: 'ordered' });
    g.eps.a!.then(fail({ class: 'permanent', disableEndpoint: true }));
    expect(await g.pool.execute(g.op)).toBe('b');
    expect(g.trace((e) => e.type === 'endpoint-disabled')).toEqual(['endpoint-disabled:a']);
  });

  test('a spent day parks the endpoint (endpoint-parked, until the reset) and moves the call on at once', async () => {
    const h = harness(['a', 'b'], { strategy: 'ordered', backoff: { initialMs: 1000, jitter: 'none' } });
    h.eps.a!.then(fail({ class: 'transient', dailyQuotaExhausted: true }));
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    await c.promise;
    expect(c.value).toBe('b');
    expect(h.eps.b!.startedAt[0]).toBe(h.eps.a!.startedAt[0]); // no backoff sleep
    const parked = h.events.find((e) => e.type === 'endpoint-parked');
    expect(parked).toMatchObject({ endpoint: 'a' });
    expect(parked !== undefined && parked.type === 'endpoint-parked' && parked.untilMs).toBe(h.pool.stats()[0]!.parkedUntilMs);
    expect(h.pool.stats()[0]!.status).toBe('parked');

    const g = harness(['a', 'b'], { strategy: 'ordered' });
    g.eps.a!.then(fail({ class: 'permanent', dailyQuotaExhausted: true }));
    expect(await g.pool.execute(g.op)).toBe('b');
  });
});

describe('timeouts', () => {
  test('a timed-out attempt: its error names attempt, endpoint and time; it is aborted and counted against the endpoint', async () => {
    const h = harness(['a', 'b'], { attemptTimeoutMs: 250, strategy: 'ordered', maxAttempts: 1, breaker: { threshold: 1 } });
    h.eps.a!.then(hang());
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(250);
    await c.promise;
    const err = (c.error as PoolError).cause as PoolError;
    expect(err.code).toBe('ATTEMPT_TIMEOUT');
    expect(err.message).toBe('attempt 1 on endpoint "a" timed out after 250 ms');
    expect([err.attempts, err.endpoint]).toEqual([1, 'a']);
    expect(h.eps.a!.contexts[0]!.signal.aborted).toBe(true);
    expect((h.eps.a!.contexts[0]!.signal.reason as PoolError).code).toBe('ATTEMPT_TIMEOUT');
    const s = h.pool.stats()[0]!;
    expect([s.failures, s.failures5m, s.breaker.state]).toEqual([1, 1, 'open']);
    expect(h.metrics.counter(FAILURES, { endpoint: 'a', class: 'timeout' })).toBe(1);
    expect(h.metrics.counter(OPENED, { endpoint: 'a' })).toBe(1);
    expect(h.events.find((e) => e.type === 'attempt-failure')).toMatchObject({ errorClass: 'timeout', durationMs: 250, error: { code: 'ATTEMPT_TIMEOUT' } });
  });

  test('an attempt the deadline cut before half its fair time counts as a failure but not against the breaker or ranking', async () => {
    const h = harness(['a'], { attemptTimeoutMs: 1000, deadlineMs: 1000, maxAttempts: 2, breaker: { threshold: 2 } });
    // The first attempt fails at 600 ms; the second starts at 700 ms (after the backoff) and the deadline cuts it 300 ms later.
    h.eps.a!.then(fail('transient', 600), hang());
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await c.promise;
    expect(isPoolError(c.error)).toBe(true);
    expect(h.eps.a!.startedAt.map((t) => t - h.eps.a!.startedAt[0]!)).toEqual([0, 700]);
    const s = h.pool.stats()[0]!;
    expect([s.failures, s.failures5m, s.consecutiveFailures, s.breaker.state]).toEqual([2, 1, 1, 'closed']);
    expect(h.metrics.counter(FAILURES, { endpoint: 'a', class: 'timeout' })).toBe(1);
    expect(h.metrics.counter(OPENED)).toBe(0);
    expect(h.trace((e) => e.type.startsWith('breaker'))).toEqual([]);
    expect(h.events.filter((e) => e.type === 'attempt-failure').map((e) => e.type === 'attempt-failure' && [e.errorClass, e.durationMs])).toEqual([
      ['transient', 600],
      ['timeout', 300],
    ]);
    expect(h.eps.a!.contexts[1]!.signal.aborted).toBe(true);
  });

  test.each([
    // [attemptTimeoutMs, deadlineMs, first failure after, ran for when the deadline cut it]
    [1000, 1000, 400, 500], // exactly half its fair time: it had its share
    [10_000, 1000, 300, 600], // the deadline is the shorter: half of it is the fair share
  ])('timeout %i, deadline %i: cut by the deadline after %#, it counts against the endpoint', async (t, d, firstMs, ranMs) => {
    const h = harness(['a'], { attemptTimeoutMs: t, deadlineMs: d, maxAttempts: 2, breaker: { threshold: 5 } });
    h.eps.a!.then(fail('transient', firstMs), hang());
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(d);
    await c.promise;
    expect(h.eps.a!.startedAt[1]! - h.eps.a!.startedAt[0]!).toBe(d - ranMs);
    const s = h.pool.stats()[0]!;
    expect([s.failures, s.failures5m, s.consecutiveFailures]).toEqual([2, 2, 2]);
  });

  test('a late turn with the attempt timeout the shorter: fair share is half the attempt timeout', async () => {
    // A rate-limited answer asks for 8267 ms (+ 12.5 % jitter at random 0.5: 9300 ms): the retry runs 700 ms of its 1000.
    const h = harness(['a'], { attemptTimeoutMs: 1000, deadlineMs: 10_000, maxAttempts: 2, breaker: { threshold: 5 } });
    h.eps.a!.then(fail({ class: 'rate-limited', retryAfterMs: 8267 }), hang());
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(10_000);
    await c.promise;
    expect(h.eps.a!.startedAt[1]! - h.eps.a!.startedAt[0]!).toBe(9300);
    const s = h.pool.stats()[0]!;
    expect([s.failures, s.failures5m, s.consecutiveFailures]).toEqual([2, 2, 1]);
  });

  test.each(['transient', 'timeout'])("strategy 'latency': a %s failure weighs its own duration when that is above the penalty", async (kind) => {
    let i = 0;
    const h = harness(['a', 'b'], { strategy: 'latency', random: () => (i++ % 2 === 0 ? 0 : 0.6), attemptTimeoutMs: kind === 'timeout' ? 100 : 500, maxAttempts: 1, latency: { failurePenaltyMs: 1 } });
    // a fails after 100 ms (it weighs 100), b succeeds in 1000 ms: a is still the faster.
    h.eps.a!.then(kind === 'timeout' ? hang() : fail('transient', 100));
    h.eps.b!.then(ok('b', 1000));
    const one = start(h.pool.execute(h.op, { pin: 'a' }));
    const two = start(h.pool.execute(h.op, { pin: 'b', attemptTimeoutMs: 2000 }));
    await h.clock.advance(1000);
    await Promise.all([one.promise, two.promise]);
    expect(isPoolError(one.error)).toBe(true);
    expect(h.events.find((e) => e.type === 'attempt-failure')).toMatchObject({ endpoint: 'a', errorClass: kind });
    expect(await h.pool.execute(h.op)).toBe('a');
  });

  test("strategy 'latency': a timed-out attempt weighs at least the failure penalty", async () => {
    let i = 0;
    const h = harness(['a', 'b'], { strategy: 'latency', random: () => (i++ % 2 === 0 ? 0 : 0.6), attemptTimeoutMs: 100, maxAttempts: 1, latency: { failurePenaltyMs: 5000 } });
    h.eps.a!.then(hang());
    h.eps.b!.then(ok('b', 1000));
    const one = start(h.pool.execute(h.op, { pin: 'a' }));
    const two = start(h.pool.execute(h.op, { pin: 'b', attemptTimeoutMs: 2000 }));
    await h.clock.advance(1000);
    await Promise.all([one.promise, two.promise]);
    expect(isPoolError(one.error)).toBe(true);
    expect(await h.pool.execute(h.op)).toBe('b');
  });
});

describe('cancelled attempts', () => {
  test('the loser of a hedge race is aborted with ABORTED, reported with its duration, and its probe slot freed', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, strategy: 'ordered' });
    h.eps.a!.then(hang());
    h.eps.b!.then(ok('b', 30));
    const c = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(80);
    await c.promise;
    expect(c.value).toBe('b');
    const reason = h.eps.a!.contexts[0]!.signal.reason as PoolError;
    expect(reason.code).toBe('ABORTED');
    expect(reason.message).toBe('another attempt of the call answered first');
    expect(h.events.find((e) => e.type === 'attempt-cancelled')).toMatchObject({ endpoint: 'a', attempt: 1, durationMs: 80, reason: 'superseded' });
  });

  test("strategy 'latency': the loser's bound is stamped at the race's end, so a sample at that instant has no weight yet", async () => {
    let i = 0;
    const h = harness(['a', 'b'], { strategy: 'latency', hedge: { afterMs: 50 }, latency: { decayMs: 100 }, random: () => (i++ % 2 === 0 ? 0 : 0.6) });
    h.eps.a!.then(ok('a', 10));
    h.eps.b!.then(ok('b', 40));
    const warm = [start(h.pool.execute(h.op, { pin: 'a' })), start(h.pool.execute(h.op, { pin: 'b' }))];
    await h.clock.advance(40);
    await Promise.all(warm.map((w) => w.promise));
    // a hangs, b wins at 90 ms: a is at least 90 ms, stamped now.
    h.eps.a!.then(hang(), ok('a', 0));
    h.eps.b!.then(ok('b', 40));
    const raced = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(90);
    await raced.promise;
    expect(raced.value).toBe('b');
    // A 0 ms success on a at the same instant: no time has passed since the stamp, so a stays at 90 and b (40) is the faster.
    expect(await h.pool.execute(h.op, { pin: 'a' })).toBe('a');
    expect(await h.pool.execute(h.op)).toBe('b');
  });

  test("strategy 'latency': an attempt the caller aborts says nothing about its endpoint's latency", async () => {
    let i = 0;
    const h = harness(['a', 'b'], { strategy: 'latency', random: () => (i++ % 2 === 0 ? 0 : 0.6) });
    h.eps.a!.then(ok('a', 10));
    h.eps.b!.then(ok('b', 40));
    const warm = [start(h.pool.execute(h.op, { pin: 'a' })), start(h.pool.execute(h.op, { pin: 'b' }))];
    await h.clock.advance(40);
    await Promise.all(warm.map((w) => w.promise));
    h.eps.a!.then(hang());
    const ac = new AbortController();
    const aborted = start(h.pool.execute(h.op, { pin: 'a', signal: ac.signal }));
    await h.clock.advance(500);
    ac.abort();
    await aborted.promise;
    expect(isPoolError(aborted.error) && aborted.error.code).toBe('ABORTED');
    expect(h.events.find((e) => e.type === 'attempt-cancelled')).toMatchObject({ endpoint: 'a', durationMs: 500 });
    expect(await h.pool.execute(h.op)).toBe('a');
  });

  test("strategy 'latency': a hedge loser is known to be at least as slow as the race lasted", async () => {
    let i = 0;
    const h = harness(['a', 'b'], { strategy: 'latency', hedge: { afterMs: 50 }, random: () => (i++ % 2 === 0 ? 0 : 0.6) });
    // Both answer once quickly (a 10 ms, b 40 ms): a looks faster.
    h.eps.a!.then(ok('a', 10));
    h.eps.b!.then(ok('b', 40));
    const warm = [start(h.pool.execute(h.op, { pin: 'a' })), start(h.pool.execute(h.op, { pin: 'b' }))];
    await h.clock.advance(40);
    await Promise.all(warm.map((w) => w.promise));
    // a hangs past the hedge; b wins at 50 + 40 ms; a was at least 90 ms: b is now the faster.
    h.eps.a!.then(hang());
    h.eps.b!.then(ok('b', 40));
    const raced = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(90);
    await raced.promise;
    expect(raced.value).toBe('b');
    expect(h.eps.a!.calls).toBe(2);
    expect(await h.pool.execute(h.op)).toBe('b');
  });
});

