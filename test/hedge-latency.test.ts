import { describe, expect, test } from 'vitest';
import { LatencyTracker } from '../src/selection/latency.js';
import { isPoolError } from '../src/index.js';
import { fail, harness, hang, ok, start } from './support.js';

describe('LatencyTracker (peak EWMA)', () => {
  test('jumps up to a slower observation at once, decays back gradually', () => {
    const t = new LatencyTracker();
    expect(t.estimate(123)).toBe(123); // cold start
    t.observe(0, 10, false, 1000, 5000);
    expect(t.estimate(0)).toBe(10);
    t.observe(100, 200, false, 1000, 5000);
    expect(t.estimate(0)).toBe(200);
    t.observe(1100, 10, false, 1000, 5000);
    const decayed = t.estimate(0);
    expect(decayed).toBeGreaterThan(10);
    expect(decayed).toBeLessThan(200);
    expect(decayed).toBeCloseTo(200 * Math.exp(-1) + 10 * (1 - Math.exp(-1)), 5);
  });

  test('a failure counts as at least the penalty, so failing fast does not look fast', () => {
    const t = new LatencyTracker();
    t.observe(0, 1, true, 1000, 5000);
    expect(t.estimate(0)).toBe(5000);
  });

  test('a lower bound from a cut-short attempt only ever raises the estimate', () => {
    const t = new LatencyTracker();
    t.observe(0, 200, false, 1000, 5000);
    t.observeAtLeast(10, 35, 10_000);
    expect(t.estimate(0)).toBe(200);
    t.observeAtLeast(20, 300, 10_000);
    expect(t.estimate(0)).toBe(300);
  });

  test('percentiles over recent successes, once there are enough', () => {
    const t = new LatencyTracker();
    for (let i = 1; i <= 19; i++) t.observe(i, i * 10, false, 1000, 5000);
    expect(t.percentile(0.9, 20)).toBeUndefined();
    t.observe(20, 200, false, 1000, 5000);
    expect(t.percentile(0.9, 20)).toBe(190);
    expect(t.percentile(0.5, 20)).toBe(110);
  });
});

describe('hedged attempts', () => {
  test('a slow first attempt gets a hedge on a different endpoint after afterMs; the first success wins, the loser is aborted', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(ok('slow', 1000));
    h.eps.b!.then(ok('fast', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(60);
    await call.promise;
    expect(call.value).toBe('fast');
    expect(h.eps.a!.contexts[0]!.signal.aborted).toBe(true);
    expect(h.trace((e) => e.type.startsWith('attempt') || e.type === 'hedge')).toEqual([
      'attempt-start:a',
      'hedge:b',
      'attempt-start:b',
      'attempt-success:b',
      'attempt-cancelled:a',
    ]);
    expect(h.events.find((e) => e.type === 'attempt-cancelled')).toMatchObject({ reason: 'superseded' });
    await h.clock.advance(1000); // the abandoned operation's own timer
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test('never hedges a call that is not marked idempotent', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(ok('slow', 1000));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('slow');
    expect(h.eps.b!.calls).toBe(0);
    const err = await h.pool.execute(h.op, { hedge: true }).catch((e: unknown) => e);
    expect(isPoolError(err) && err.message).toBe('hedge: expected a call marked idempotent: true, got true');
  });

  test('no hedge starts after close(): the running attempt finishes alone', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(ok('slow', 1000));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(20);
    const closing = h.pool.close();
    await h.clock.advance(100); // past the hedge delay
    expect(h.eps.b!.calls).toBe(0);
    expect(h.events.filter((e) => e.type === 'hedge')).toEqual([]);
    await h.clock.advance(1000);
    await call.promise;
    await closing;
    expect(call.value).toBe('slow');
  });

  test('a hedge whose endpoint is disabled (invalid key) leaves the running attempt to answer: no new attempt beside it, nothing orphaned', async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(hang(true));
    h.eps.b!.then(fail({ class: 'permanent', disableEndpoint: true }, 10));
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { idempotent: true, signal: ac.signal }));
    await h.clock.advance(100);
    expect(h.trace((e) => e.type.startsWith('attempt') || e.type === 'endpoint-disabled')).toEqual(['attempt-start:a', 'attempt-start:b', 'endpoint-disabled:b', 'attempt-failure:b']);
    expect(h.eps.c!.calls).toBe(0); // the primary on a still runs: the call waits for it
    ac.abort();
    await call.promise;
    expect(isPoolError(call.error) && call.error.code).toBe('ABORTED');
    expect(h.eps.a!.contexts[0]!.signal.aborted).toBe(true);
    expect(h.pool.stats().map((s) => s.inFlight)).toEqual([0, 0, 0]);
  });

  test("under permitScope: 'attempt' a hedge needs a permit of its own: no free permit, no hedge; its permit comes back when it ends", async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 }, maxConcurrentCalls: 2, permitScope: 'attempt' });
    h.eps.a!.then(ok('slow', 1000), ok('slow too', 1000));
    const first = start(h.pool.execute(h.op, { idempotent: true }));
    const second = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(100);
    // Two attempts hold the two permits: neither call may hedge.
    expect(h.events.filter((e) => e.type === 'hedge')).toEqual([]);
    expect(h.eps.c!.calls).toBe(0);
    await h.clock.advance(1000);
    await Promise.all([first.promise, second.promise]);
    // One call alone: its hedge takes the second permit, and gives it back.
    h.eps.a!.then(ok('slow', 1000));
    const third = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(60);
    expect(h.trace((e) => e.type === 'hedge')).toEqual(['hedge:b']);
    await third.promise;
    await h.clock.advance(1000);
    expect(h.pool.activeCalls).toBe(0);
    // Both permits are back: two calls send, the third queues for a permit.
    h.eps.a!.then(ok('x', 100), ok('y', 100), ok('z', 100));
    const holds = [start(h.pool.execute(h.op)), start(h.pool.execute(h.op)), start(h.pool.execute(h.op))];
    await h.clock.advance(0);
    expect(h.pool.pendingCalls).toBe(1);
    await h.clock.advance(200);
    await Promise.all(holds.map((x) => x.promise));
    expect(holds.map((x) => x.value)).toEqual(['x', 'y', 'z']);
  });

  test('no hedge when the first attempt answers in time', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(ok('quick', 20));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(100);
    await call.promise;
    expect(h.eps.b!.calls).toBe(0);
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test('if the hedge fails, the first attempt still wins; if both fail, the call retries as usual', async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50 }, maxAttempts: 3 });
    h.eps.a!.then(ok('first', 200));
    h.eps.b!.then(fail('transient', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(200);
    await call.promise;
    expect(call.value).toBe('first');

    h.eps.a!.then(fail('transient', 100));
    h.eps.b!.then(fail('transient', 100));
    const second = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(200);
    await second.promise;
    expect(second.value).toBe('c'); // the third attempt, on the endpoint not yet tried
  });

  test('a permanent answer from a hedge ends the call and aborts the other attempt', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(hang(true));
    h.eps.b!.then(fail('permanent', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(60);
    await call.promise;
    expect(isPoolError(call.error) && call.error.code).toBe('PERMANENT');
    expect(h.eps.a!.contexts[0]!.signal.aborted).toBe(true);
  });

  // Found by test/faults/generated.test.ts (seed 20261203, path 11): a call with
  // retry: 'none' ("one attempt") and maxHedges 2 sent its request to two endpoints.
  test.each([
    [{ retry: 'none' as const }, 1],
    [{ retry: { maxAttempts: 2 } }, 2],
  ])('a hedge is one of the call\'s attempts: %j caps hedges too', async (options, attempts) => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 50, maxHedges: 2 }, attemptTimeoutMs: 1000 });
    for (const n of ['a', 'b', 'c']) h.eps[n]!.then(hang(true));
    const call = start(h.pool.execute(h.op, { idempotent: true, ...options }));
    await h.clock.advance(300);
    expect(h.eps.a!.calls + h.eps.b!.calls + h.eps.c!.calls).toBe(attempts);
    await h.clock.advance(2000);
    await call.promise;
    expect(isPoolError(call.error) && call.error.code).toBe('RETRIES_EXHAUSTED');
    expect(h.eps.a!.calls + h.eps.b!.calls + h.eps.c!.calls).toBe(attempts);
  });

  test('hedges count against the retry budget', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 }, retryBudget: { ratio: 0, minPerSecond: 0 } });
    h.eps.a!.then(ok('slow', 500));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(500);
    await call.promise;
    expect(call.value).toBe('slow');
    expect(h.eps.b!.calls).toBe(0);
  });

  test('hedge on a percentile of the endpoint’s recent latency', async () => {
    const h = harness(['a', 'b'], { hedge: { percentile: 0.9, afterMs: 1000 } });
    for (let i = 0; i < 20; i++) {
      h.eps.a!.then(ok('a', 20 + i));
      const c = start(h.pool.execute(h.op, { idempotent: true }));
      await h.clock.advance(40);
      await c.promise;
    }
    h.eps.a!.then(ok('slow', 5000));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(38); // p90 of 20..39 is 38
    await call.promise;
    expect(call.value).toBe('b');
  });

  test('a call’s own hedge percentile is honoured on a pool with neither a pool hedge nor latency selection (durations are recorded from the first such call)', async () => {
    const h = harness(['a', 'b']);
    const hedge = { percentile: 0.9, afterMs: 1000 };
    for (let i = 0; i < 20; i++) {
      h.eps.a!.then(ok('a', 20 + i));
      const c = start(h.pool.execute(h.op, { idempotent: true, hedge }));
      await h.clock.advance(40);
      await c.promise;
      expect(c.value).toBe('a');
    }
    h.eps.a!.then(ok('slow', 5000));
    const call = start(h.pool.execute(h.op, { idempotent: true, hedge }));
    await h.clock.advance(37);
    expect(h.eps.b!.calls).toBe(0); // p90 of 20..39 is 38: no hedge yet
    await h.clock.advance(1); // 38 ms, not the 1000 ms of afterMs
    expect(h.eps.b!.calls).toBe(1);
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('b');
  });
});

describe("strategy: 'latency'", () => {
  test('power of two choices over peak-EWMA: a slow endpoint gets a small share', async () => {
    const h = harness(['a', 'b', 'c'], { strategy: 'latency', random: Math.random });
    h.eps.a!.fallback = ok('a', 10);
    h.eps.b!.fallback = ok('b', 10);
    h.eps.c!.fallback = ok('c', 100);
    for (let i = 0; i < 600; i++) {
      const c = start(h.pool.execute(h.op));
      await h.clock.advance(1);
      void c;
    }
    await h.clock.advance(1000);
    const total = h.eps.a!.calls + h.eps.b!.calls + h.eps.c!.calls;
    expect(total).toBe(600);
    expect(h.eps.c!.calls / total).toBeLessThan(0.15);
    expect(Math.abs(h.eps.a!.calls - h.eps.b!.calls) / total).toBeLessThan(0.15);
  });

  test('a fast-failing endpoint does not look fast', async () => {
    const h = harness(['a', 'b'], { strategy: 'latency', random: Math.random, breaker: { threshold: 1000 }, maxAttempts: 2 });
    h.eps.a!.fallback = fail('transient', 1);
    h.eps.b!.fallback = ok('b', 50);
    for (let i = 0; i < 200; i++) {
      const c = start(h.pool.execute(h.op));
      await h.clock.advance(60);
      await c.promise;
    }
    expect(h.eps.a!.calls).toBeLessThan(30);
  });
});
