/**
 * Issues 14 and 20: waits for the soonest endpoint, per-quota queues, deadline-aware
 * admission, rate-limit cooldowns, bounded and recovering learned ceilings, and the two
 * levels of a group. All on the fake clock.
 */
import { describe, expect, test } from 'vitest';
import { isPoolError, type PoolError, type PoolEvent } from '../src/index.js';
import { PacedLimiter } from '../src/limits/paced.js';
import { fail, harness, ok, start } from './support.js';

const paced = (perSecond: number) => ({ rateLimit: { perSecond, mode: 'paced' as const } });

describe('a call waits for the soonest acceptable endpoint (regression: issue 14, minimal case)', () => {
  test.each(['health', 'round-robin', 'ordered', 'random', 'latency'] as const)('%s: keys at 1/s and 5/s, three calls at once: the third waits 205 ms, not ~1 s', async (strategy) => {
    const h = harness([{ name: 'slow', ...paced(1) }, { name: 'fast', ...paced(5) }], { strategy });
    const calls = [0, 1, 2].map(() => start(h.pool.execute(h.op)));
    await h.clock.advance(0);
    expect(calls.filter((c) => c.settled)).toHaveLength(2);
    await h.clock.advance(204);
    expect(calls[2]!.settled).toBe(false);
    await h.clock.advance(1);
    await calls[2]!.promise;
    expect(calls[2]!.value).toBe('fast');
  });
});

describe('waiters queue per quota, in order', () => {
  test('a token wakes exactly the call it serves; calls start in arrival order; each wait counts once', async () => {
    const h = harness([{ name: 'k', ...paced(5) }], { deadlineMs: 60_000 });
    const order: number[] = [];
    const calls = Array.from({ length: 20 }, (_, i) => start(h.pool.execute(async (ep, ctx) => (order.push(i), h.op(ep, ctx)))));
    await h.clock.advance(20 * 205);
    await Promise.all(calls.map((c) => c.promise));
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const starts = h.eps.k!.startedAt.map((t) => t - h.eps.k!.startedAt[0]!);
    expect(starts).toEqual(Array.from({ length: 20 }, (_, i) => i * 205));
    // 19 calls waited, once each (not once per token that went by).
    expect(h.metrics.counter('endpoint_pool_rate_limit_waits_total')).toBe(19);
    expect(h.events.filter((e) => e.type === 'rate-limit-wait')).toHaveLength(19);
  });

  test('a newcomer does not take a token ahead of the queue', async () => {
    const h = harness([{ name: 'k', ...paced(2) }], { deadlineMs: 60_000 });
    const order: string[] = [];
    const run = (tag: string) => start(h.pool.execute(async (ep, ctx) => (order.push(tag), h.op(ep, ctx))));
    const first = [run('a'), run('b'), run('c')];
    // Exactly when b's token frees, a newcomer arrives: b still goes first.
    await h.clock.advance(513);
    const late = run('d');
    await h.clock.advance(2000);
    await Promise.all([...first, late].map((c) => c.promise));
    expect(order).toEqual(['a', 'b', 'c', 'd']);
  });

  test('a call that leaves the queue (abort) is skipped; the next one gets the token', async () => {
    const h = harness([{ name: 'k', ...paced(2) }], { deadlineMs: 60_000 });
    const ac = new AbortController();
    const a = start(h.pool.execute(h.op));
    const b = start(h.pool.execute(h.op, { signal: ac.signal }));
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(100);
    ac.abort();
    await h.clock.advance(425);
    await Promise.all([a.promise, b.promise, c.promise]);
    expect(isPoolError(b.error) && b.error.code).toBe('ABORTED');
    expect(h.eps.k!.startedAt.map((t) => t - h.eps.k!.startedAt[0]!)).toEqual([0, 513]);
  });
});

describe('deadline-aware admission', () => {
  test('a call whose turn comes after its deadline fails at once with RATE_LIMITED and retryAfterMs', async () => {
    const h = harness([{ name: 'k', ...paced(1) }], { deadlineMs: 2500 });
    const calls = [0, 1, 2, 3].map(() => start(h.pool.execute(h.op)));
    await h.clock.advance(0);
    // 0 ms, 1025 ms, 2050 ms fit; the fourth would go at 3075 ms.
    expect(calls[3]!.settled).toBe(true);
    const e = calls[3]!.error as PoolError;
    expect([e.code, e.retryAfterMs]).toEqual(['RATE_LIMITED', 3075]);
    await h.clock.advance(2050);
    await Promise.all(calls.map((c) => c.promise));
    expect(calls.slice(0, 3).map((c) => c.value)).toEqual(['k', 'k', 'k']);
  });

  test('a turn exactly at the deadline leaves the attempt no time: RATE_LIMITED at once, not DEADLINE_EXCEEDED after the whole deadline', async () => {
    // A 1/s bucket: turns at 0, 1000 and 2000 ms fit a 3000 ms deadline; the fourth's is 3000 ms itself.
    const h = harness([{ name: 'k', rateLimit: { perSecond: 1 } }], { deadlineMs: 3000 });
    const calls = [0, 1, 2, 3].map(() => start(h.pool.execute(h.op)));
    await h.clock.advance(0);
    expect(calls[3]!.settled).toBe(true);
    const e = calls[3]!.error as PoolError;
    expect([e.code, e.retryAfterMs]).toEqual(['RATE_LIMITED', 3000]);
    await h.clock.advance(2000);
    await Promise.all(calls.slice(0, 3).map((c) => c.promise));
    expect(calls.slice(0, 3).map((c) => c.value)).toEqual(['k', 'k', 'k']);
  });

  test('maxQueueWaitMs sheds calls whose turn is further away than that', async () => {
    const h = harness([{ name: 'k', ...paced(1) }], { deadlineMs: 60_000, maxQueueWaitMs: 1500 });
    const calls = [0, 1, 2].map(() => start(h.pool.execute(h.op)));
    await h.clock.advance(0);
    expect(calls[2]!.settled).toBe(true);
    expect((calls[2]!.error as PoolError).code).toBe('RATE_LIMITED');
    expect((calls[2]!.error as PoolError).message).toMatch(/maxQueueWaitMs/);
    await h.clock.advance(1025);
    expect(calls[1]!.settled).toBe(true);
  });

  test('a Retry-After past the deadline fails at once with retryAfterMs set', async () => {
    const h = harness(['k'], { deadlineMs: 2000, random: () => 0 });
    h.eps.k!.then(fail({ class: 'rate-limited', retryAfterMs: 5000 }));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(call.settled).toBe(true);
    const e = call.error as PoolError;
    expect([e.code, e.retryAfterMs]).toEqual(['RATE_LIMITED', 5000]);
  });
});

describe('rate-limited cooldowns', () => {
  const coolings = (events: PoolEvent[]) => events.flatMap((e) => (e.type === 'endpoint-cooling' ? [e.cooldownMs] : []));

  test('without a hint, each further 429 in a row doubles the cooldown (capped at backoff.maxMs); a success resets it', async () => {
    const h = harness(['k'], { maxAttempts: 1, backoff: { initialMs: 100, maxMs: 5000, jitter: 'none' }, deadlineMs: 60_000 });
    for (let i = 0; i < 5; i++) {
      h.eps.k!.then(fail('rate-limited'));
      await start(h.pool.execute(h.op)).promise;
      await h.clock.advance(6000);
    }
    expect(coolings(h.events)).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect(await h.pool.execute(h.op)).toBe('k');
    h.eps.k!.then(fail('rate-limited'));
    await start(h.pool.execute(h.op)).promise;
    expect(coolings(h.events).at(-1)).toBe(1000);
  });

  test.each([
    [0, 1000],
    [0.5, 1125],
    [0.999, 1250],
  ])('Retry-After gets up to 25 %% jitter from the injected random (random %f: %i ms)', async (r, ms) => {
    const h = harness(['k', 'other'], { random: () => r });
    h.eps.k!.then(fail({ class: 'rate-limited', retryAfterMs: 1000 }));
    await h.pool.execute(h.op);
    expect(coolings(h.events)).toEqual([ms]);
  });
});

describe('learned ceilings are bounded', () => {
  test('a hint of 1e10/sec is clamped with an event; the call settles and nothing is pinned', async () => {
    const h = harness([{ name: 'k', ...paced(5) }, 'other']);
    h.eps.k!.then(fail({ class: 'rate-limited', ceilingPerSecond: 1e10 }));
    expect(await h.pool.execute(h.op)).toBe('other');
    expect(h.pool.activeCalls).toBe(0);
    expect(h.events.find((e) => e.type === 'endpoint-recalibrated')).toMatchObject({ perSecond: 100_000, clampedFrom: 1e10, reason: 'hint' });
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(100_000);
  });

  test('a hint below the range is clamped up to 0.01/s', async () => {
    const h = harness(['k', 'other']);
    h.eps.k!.then(fail({ class: 'rate-limited', ceilingPerSecond: 1e-9 }));
    await h.pool.execute(h.op);
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(0.01);
  });

  test.each(['paced', 'bucket'] as const)('a configured %s perSecond out of range is INVALID_OPTIONS, not a RangeError', (mode) => {
    expect(() => harness([{ name: 'k', rateLimit: { perSecond: 1e10, mode } }])).toThrow(/rateLimit.perSecond: expected a number of calls per second up to 1000000/);
  });

  test("the paced limiter's memory does not grow with the rate", () => {
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    const keep = Array.from({ length: 200 }, () => new PacedLimiter(1_000_000, 0));
    const grown = process.memoryUsage().heapUsed - before;
    expect(keep).toHaveLength(200);
    expect(grown).toBeLessThan(20_000_000); // a ring per rate would be 200 × 8 MB
  });

  test('at a high rate the paced limiter still holds the rate', () => {
    const p = new PacedLimiter(200, 0);
    let taken = 0;
    for (let t = 0; t < 1000; t++) {
      while (p.waitMs(t) === 0) {
        p.take(t);
        taken++;
      }
    }
    expect(taken).toBeLessThanOrEqual(200);
    expect(taken).toBeGreaterThanOrEqual(190);
  });
});

describe('learned ceilings recover', () => {
  test.each([
    [29_999, 4],
    [30_000, 5],
    [39_999, 5],
    [40_000, 7],
    [49_999, 7],
    [50_000, 10],
    [500_000, 10],
  ])('hinted 4/s under a configured 10/s: %i ms after the hint the ceiling is %f/s (steps of 1, 2, then 4 capped)', async (after, perSecond) => {
    const h = harness([{ name: 'k', ...paced(10) }, 'other']);
    h.eps.k!.then(fail({ class: 'rate-limited', ceilingPerSecond: 4 }));
    await h.pool.execute(h.op);
    const t0 = h.clock.now();
    await h.clock.advance(after);
    // Reads change nothing: the steps due are the next success's to apply, each dated when it fell due.
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(4);
    await h.pool.execute(h.op, { pin: 'k' });
    const s = h.pool.stats()[0]!;
    expect(s.ceilingPerSecond).toBeCloseTo(perSecond, 9);
    expect(h.pool.capacity()).toBeCloseTo(perSecond + Number.POSITIVE_INFINITY);
    if (after >= 30_000) {
      expect(s.ceilingChangedAtMs).toBe(t0 + Math.min(after - ((after - 30_000) % 10_000), 50_000));
      expect(h.events.filter((e) => e.type === 'endpoint-recalibrated' && e.reason === 'recovery')).not.toHaveLength(0);
    }
  });

  test('another rate-limited answer restarts the quiet period; a success applies due steps', async () => {
    const h = harness([{ name: 'k', ...paced(10) }], { deadlineMs: 60_000 });
    const run = async (): Promise<void> => {
      const c = start(h.pool.execute(h.op));
      await h.clock.advance(2000);
      await c.promise;
    };
    const t0 = h.clock.now();
    h.eps.k!.then(fail({ class: 'rate-limited', ceilingPerSecond: 4 }));
    await run(); // the hint at t0, the retry after the 1 s cooldown
    await h.clock.advance(t0 + 25_000 - h.clock.now());
    h.eps.k!.then(fail('rate-limited'));
    await run(); // a 429 without a number at t0 + 25 s: quiet again until t0 + 55 s
    await h.clock.advance(t0 + 54_000 - h.clock.now());
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(4);
    await h.clock.advance(t0 + 56_000 - h.clock.now());
    await run();
    const recovered = h.events.filter((e) => e.type === 'endpoint-recalibrated' && e.reason === 'recovery');
    expect(recovered).toHaveLength(1);
    expect(recovered[0]).toMatchObject({ perSecond: 5 });
  });

  test('without a configured rate the target is the highest rate the server announced', async () => {
    const h = harness(['k', 'other']);
    h.eps.k!.then(fail({ class: 'rate-limited', ceilingPerSecond: 8 }), fail({ class: 'rate-limited', ceilingPerSecond: 2 }));
    await h.pool.execute(h.op);
    await h.clock.advance(2000);
    await h.pool.execute(h.op, { pin: 'k', retry: 'none' }).catch(() => undefined);
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(2);
    await h.clock.advance(1_000_000);
    await h.pool.execute(h.op, { pin: 'k' });
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(8);
  });
});

describe('learned ceilings recover sooner while callers are turned away', () => {
  test('within the 30 s quiet period the ceiling rises only if callers were turned away', async () => {
    for (const turnAway of [true, false]) {
      const h = harness([{ name: 'k', ...paced(10) }], { maxQueueWaitMs: 1100, deadlineMs: 60_000 });
      h.eps.k!.then(fail({ class: 'rate-limited', ceilingPerSecond: 1 }));
      const first = start(h.pool.execute(h.op));
      await h.clock.advance(1100);
      await first.promise;
      const t0 = h.clock.now() - 1100;
      await h.clock.advance(7000);
      if (turnAway) {
        // Four calls at 1/s with a 1.1 s bound: the last ones have no turn in time and fail at once.
        const burst = [0, 1, 2, 3].map(() => start(h.pool.execute(h.op).catch((e: PoolError) => e.code)));
        await h.clock.advance(0);
        expect(burst.filter((c) => c.settled && c.value === 'RATE_LIMITED').length).toBeGreaterThan(0);
        await h.clock.advance(5000);
        await Promise.all(burst.map((c) => c.promise));
      } else await h.clock.advance(5000);
      expect(h.clock.now() - t0).toBeLessThan(30_000);
      const last = start(h.pool.execute(h.op));
      await h.clock.advance(1100);
      await last.promise;
      const ceiling = h.pool.stats()[0]!.ceilingPerSecond!;
      if (turnAway) expect(ceiling).toBeGreaterThanOrEqual(2);
      else expect(ceiling).toBe(1);
    }
  });
});

describe('a ceiling that falls under a queue', () => {
  test('calls whose turn now comes too late leave at once (RATE_LIMITED); those that stay keep the wait they were admitted with', async () => {
    const h = harness([{ name: 'k', ...paced(10) }], { maxQueueWaitMs: 2000, deadlineMs: 30_000 });
    // The first answer says the key takes 2/s, not 10: the queue behind it now moves 5x slower.
    h.eps.k!.then(fail({ class: 'rate-limited', ceilingPerSecond: 2 }));
    const t0 = h.clock.now();
    const took: (number | string)[] = [];
    const calls = Array.from({ length: 15 }, () => h.pool.execute(h.op).then(() => took.push(h.clock.now() - t0), (e: PoolError) => took.push(`${e.code}@${h.clock.now() - t0}`)));
    await h.clock.advance(10_000);
    await Promise.all(calls);
    const shed = took.filter((x) => typeof x === 'string');
    const served = took.filter((x): x is number => typeof x === 'number');
    // At 2/s a wait of 2 s holds about four calls: the others are shed as soon as the answer came.
    expect(shed.length).toBeGreaterThanOrEqual(10);
    // A call admitted on a turn that then comes later than estimated (here one re-selected
    // before the refused call was back at the front) is shed when the bound is spent, never served past it.
    const late = shed.filter((x) => !/^RATE_LIMITED@[0-9]$/.test(x));
    expect(late.length).toBeLessThanOrEqual(1);
    expect(late.every((x) => x === 'RATE_LIMITED@2000')).toBe(true);
    expect(served.length).toBe(15 - shed.length);
    expect(Math.max(...served)).toBeLessThanOrEqual(2000);
  });

  test("a member's own ceiling learned under a queue: the recheck counts the slot the answer skips and the refused call", async () => {
    const h = harness([{ name: 'k1', ...paced(10) }, { name: 'k2', ...paced(10) }], { groups: [['k1', 'k2']], maxQueueWaitMs: 1500, deadlineMs: 30_000 });
    // k1's first answer, 50 ms after it left: k1 alone takes 1/s. Calls pinned to k1 queue behind it.
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 1, ceilingScope: 'key' }, 50));
    const t0 = h.clock.now();
    const waits: (number | string)[] = [];
    const calls = Array.from({ length: 4 }, () =>
      start(h.pool.execute(async (ep, ctx) => (waits.push(h.clock.now() - t0), h.op(ep, ctx)), { pin: 'k1' }).catch((e: PoolError) => e.code)),
    );
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    // The first call's retry and at most one more fit in 1.5 s at 1/s after the skipped slot; the rest are shed at once.
    expect(calls.map((c) => c.value).filter((v) => v === 'RATE_LIMITED').length).toBeGreaterThanOrEqual(2);
    // The calls the recheck takes out select again at once, before the refused call is back
    // at the front, so one of them may be admitted one interval of the new ceiling too
    // optimistically (counting the refused call while they select made generated profile
    // 1834463631's served p99 at 110 % worse, 4.7 -> 5.4 s). The bound holds anyway: such a
    // call leaves the queue when maxQueueWaitMs is spent (it started at 2,075 ms before that).
    expect(Math.max(...waits.map(Number))).toBeLessThanOrEqual(1500);
  });

  test.each([
    ['the same Retry-After: the second is told the wait behind the first', { class: 'rate-limited' as const, retryAfterMs: 1000 }, ['RATE_LIMITED', 'k']],
    ["no hint: the second answer's doubled cooldown moves the first's turn past the bound too", { class: 'rate-limited' as const }, ['RATE_LIMITED', 'RATE_LIMITED']],
  ])('two calls refused at once go back to the front; %s; none waits past maxQueueWaitMs', async (_, verdict, codes) => {
    const h = harness([{ name: 'k', rateLimit: { perSecond: 1, burst: 2 } }], { maxQueueWaitMs: 1500, deadlineMs: 30_000 });
    h.eps.k!.then(fail(verdict), fail(verdict));
    const t0 = h.clock.now();
    const starts: number[] = [];
    const calls = [0, 1].map(() => start(h.pool.execute(async (ep, ctx) => (starts.push(h.clock.now() - t0), h.op(ep, ctx))).catch((e: PoolError) => e.code)));
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    expect(calls.map((c) => c.value).sort()).toEqual(codes);
    expect(Math.max(...starts)).toBeLessThanOrEqual(1500);
  });

  test('a call refused elsewhere that comes to the front of a queue sheds, at once, the calls it puts past maxQueueWaitMs', async () => {
    const h = harness([{ name: 'a', ...paced(1) }, { name: 'b', ...paced(1) }], { maxQueueWaitMs: 1500, deadlineMs: 60_000, strategy: 'ordered' });
    // Call 0's attempt on a is refused 50 ms after it left: a cools down, so it queues again at the
    // front of b's queue, where call 3 was promised b's next turn (1,025 ms).
    h.eps.a!.then(fail({ class: 'rate-limited' }, 50));
    const t0 = h.clock.now();
    const log: string[] = [];
    const calls = Array.from({ length: 5 }, (_, i) =>
      start(h.pool.execute(async (ep, ctx) => (log.push(`${i}:${ctx.endpoint}@${h.clock.now() - t0}`), h.op(ep, ctx))).catch((e: PoolError) => log.push(`${i}:${e.code}@${h.clock.now() - t0}`))),
    );
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    // Call 3's turn is now 2,050 ms away: past the bound, it fails when call 0 takes its place, not at 1,500 ms.
    expect(log).toEqual(['0:a@0', '1:b@0', '4:RATE_LIMITED@0', '3:RATE_LIMITED@50', '0:b@1025', '2:a@1050']);
  });

  test.each([
    ['its day is spent', { class: 'rate-limited' as const, dailyQuotaExhausted: true }],
    ['it is an invalid key', { class: 'permanent' as const, disableEndpoint: true }],
  ])('a key out for good (%s): the calls queued for it select again at once, not at the turn they were promised', async (_, verdict) => {
    const h = harness([{ name: 'a', ...paced(1) }, { name: 'b', ...paced(0.25) }], { maxQueueWaitMs: 10_000, deadlineMs: 60_000, strategy: 'ordered' });
    // Call 0 leaves on a, whose answer 100 ms later puts a out; call 1 takes b; calls 2 and 3 queue
    // for a's next turns (1 s, 2 s: b's next is 4 s away).
    h.eps.a!.then(fail(verdict, 100));
    const t0 = h.clock.now();
    const log: string[] = [];
    const run = (i: number) =>
      start(
        h.pool
          .execute(async (ep, ctx) => (log.push(`${i}:${ctx.endpoint}@${h.clock.now() - t0}`), h.op(ep, ctx)), i === 0 ? { pin: 'a', retry: 'none' } : {})
          .catch((e: PoolError) => log.push(`${i}:${e.code}@${h.clock.now() - t0}`)),
      );
    const calls = [0, 1, 2, 3].map(run);
    await h.clock.advance(500);
    // Call 4 comes after a went out: calls 2 and 3 are already queued for b (4.1 s and 8.2 s with
    // the margin), so its turn (12.3 s) is past the bound and it fails at once. Had they stayed
    // queued for a, it would have queued for b's 4.1 s turn and failed 600 ms later, when call 2
    // came back to b's front at the turn it had been promised on a (seen without the change).
    calls.push(run(4));
    await h.clock.advance(20_000);
    await Promise.all(calls.map((c) => c.promise));
    expect(log.slice(3)).toEqual(['4:RATE_LIMITED@500', '2:b@4100', '3:b@8200']);
    expect(log.slice(0, 3).sort()).toEqual(['0:RETRIES_EXHAUSTED@100', '0:a@0', '1:b@0']);
  });

  test("in a group, a key whose own day is spent takes its own queued calls out, and leaves its sibling's", async () => {
    const h = harness([{ name: 'k1', ...paced(1) }, { name: 'k2', ...paced(1) }], { groups: [['k1', 'k2']], maxQueueWaitMs: 10_000, deadlineMs: 60_000 });
    h.eps.k1!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }, 100));
    const t0 = h.clock.now();
    const log: string[] = [];
    // One account at 1/s: calls pinned to k2, k1, k2 queue behind the first for its turns.
    const calls = ['k1', 'k2', 'k1', 'k2'].map((pin, i) =>
      start(
        h.pool
          .execute(async (ep, ctx) => (log.push(`${i}:${ctx.endpoint}@${h.clock.now() - t0}`), h.op(ep, ctx)), { pin, retry: 'none' })
          .catch((e: PoolError) => log.push(`${i}:${e.code}@${h.clock.now() - t0}`)),
      ),
    );
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    // k1 is parked at 100 ms: call 2 (pinned to it) fails then, and call 3 moves up to its turn.
    expect(log).toEqual(['0:k1@0', '0:RETRIES_EXHAUSTED@100', '2:PIN_UNAVAILABLE@100', '1:k2@1025', '3:k2@2050']);
  });

  test('a call whose attempt was rate-limited queues again at the front, not behind the calls that arrived meanwhile', async () => {
    const h = harness([{ name: 'k', ...paced(2) }], { deadlineMs: 60_000 });
    const order: string[] = [];
    // a's attempt is refused 50 ms after it left, while b and c queue behind it.
    h.eps.k!.then(fail({ class: 'rate-limited' }, 50));
    const run = (tag: string) => start(h.pool.execute(async (ep, ctx) => (order.push(tag), h.op(ep, ctx))));
    const calls = [run('a'), run('b'), run('c')];
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    expect(order).toEqual(['a', 'a', 'b', 'c']);
  });

  test('back at the front, its turn is judged against its deadline from the front, not from behind the queue', async () => {
    // Paced at 2/s, a's attempt is refused at 50 ms while b..h (7 calls) queue behind it: from
    // the back its turn would be 3.5 s away, past its 2 s deadline, but it goes back to the
    // front, so its next turn is the next token's (500 ms). Judged from the back it failed
    // RATE_LIMITED at once (a mutant of waits.ts's lateTurn, thirty-third session).
    const h = harness([{ name: 'k', ...paced(2) }], { deadlineMs: 60_000 });
    const order: string[] = [];
    h.eps.k!.then(fail({ class: 'rate-limited' }, 50));
    const run = (tag: string, deadlineMs: number) => start(h.pool.execute(async (ep, ctx) => (order.push(tag), h.op(ep, ctx)), { deadlineMs }));
    const a = run('a', 2000);
    const rest = ['b', 'c', 'd', 'e', 'f', 'g', 'h'].map((tag) => run(tag, 60_000));
    await h.clock.advance(10_000);
    await Promise.all([a, ...rest].map((c) => c.promise));
    expect(a.error).toBeUndefined();
    expect(order.slice(0, 3)).toEqual(['a', 'a', 'b']);
  });

  test('a call back at the front behind another waits for its turn after that one: one it cannot make fails at once', async () => {
    // At 2/s (burst 2) a and b go at once and are both refused with a hint of 0.5/s: a at 50 ms,
    // b at 100 ms. Both go back to the front, a first: a's turn is at 1,100 ms, b's one
    // interval of the new ceiling later (3,100 ms), past b's 2.5 s deadline, so b fails
    // RATE_LIMITED at once. Judging b by the limit's own wait alone (the calls already back at the
    // front left out: a mutant of waits.ts's lateTurn) let it wait to its deadline for nothing.
    const h = harness([{ name: 'k', rateLimit: { perSecond: 2, burst: 2 } }], { deadlineMs: 30_000 });
    h.eps.k!.then(fail({ class: 'rate-limited', ceilingPerSecond: 0.5 }, 50), fail({ class: 'rate-limited', ceilingPerSecond: 0.5 }, 100));
    const t0 = h.clock.now();
    const log: string[] = [];
    const run = (tag: string, deadlineMs: number) =>
      start(h.pool.execute(async (ep, ctx) => (log.push(`${tag}@${h.clock.now() - t0}`), h.op(ep, ctx)), { deadlineMs }).then(
        () => log.push(`${tag} ok@${h.clock.now() - t0}`),
        (e: PoolError) => log.push(`${tag} ${e.code}@${h.clock.now() - t0}`),
      ));
    const calls = [run('a', 30_000), run('b', 2500)];
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    expect(log).toEqual(['a@0', 'b@0', 'b RATE_LIMITED@100', 'a@1100', 'a ok@1100']);
  });

  test('a call that queues again before its attempt is one rate-limit wait (one event, one count)', async () => {
    // y queues for a's next token (1 s); at 500 ms a's breaker opens, y selects again and
    // queues for b's (2 s): one wait, one rate-limit-wait event, one count, its first delay.
    // (Each queueing counted: a mutant of waits.ts's queueFor, thirty-third session.)
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1, burst: 1 } }, { name: 'b', rateLimit: { perSecond: 0.5, burst: 1 } }], {
      strategy: 'ordered',
      deadlineMs: 30_000,
      maxQueueWaitMs: 10_000,
      breaker: { threshold: 1, cooldownMs: 60_000 },
    });
    h.eps.a!.then(fail('transient', 500));
    h.eps.b!.then(ok('b0', 100));
    const log: string[] = [];
    const run = (tag: string) => start(h.pool.execute(async (ep, ctx) => (log.push(`${tag}->${ep.name}`), h.op(ep, ctx)), { retry: 'none' }));
    const calls = [run('x'), run('w'), run('y')];
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    expect(log).toEqual(['x->a', 'w->b', 'y->b']);
    expect(calls[2]!.value).toBe('b');
    expect(h.events.filter((e) => e.type === 'rate-limit-wait')).toEqual([{ type: 'rate-limit-wait', callId: 3, endpoint: 'a', delayMs: 1000 }]);
    expect(h.metrics.counter('endpoint_pool_rate_limit_waits_total')).toBe(1);
  });

  test.each([
    [4000, ['x@0', 'x ok@0', 'y@1000', 'z RATE_LIMITED@1050', 'y@2050', 'y ok@2050']],
    [4500, ['x@0', 'x ok@0', 'y@1000', 'y@2050', 'y ok@2050', 'z@4050', 'z ok@4050']],
  ])('a ceiling that falls under a queued call counts the time it already waited against maxQueueWaitMs (%i ms)', async (maxQueueWaitMs, expected) => {
    // 1/s: x goes at once, y's turn is at 1 s, z's at 2 s. y is refused at 1,050 ms with a hint of
    // 0.5/s: y goes back to the front (2,050 ms) and z's turn moves to 4,050 ms, 4,050 ms after
    // z began to wait. Over a 4 s bound z is shed at once; under 4.5 s it waits and is served.
    // (Counting only the wait still to come, z was never shed: a mutant of waits.ts's lateTurn.)
    const h = harness([{ name: 'k', rateLimit: { perSecond: 1, burst: 1 } }], { deadlineMs: 30_000, maxQueueWaitMs });
    await h.clock.advance(10_000);
    h.eps.k!.then(ok(), fail({ class: 'rate-limited', ceilingPerSecond: 0.5 }, 50));
    const t0 = h.clock.now();
    const log: string[] = [];
    const run = (tag: string) =>
      start(h.pool.execute(async (ep, ctx) => (log.push(`${tag}@${h.clock.now() - t0}`), h.op(ep, ctx))).then(
        () => log.push(`${tag} ok@${h.clock.now() - t0}`),
        (e: PoolError) => log.push(`${tag} ${e.code}@${h.clock.now() - t0}`),
      ));
    const calls = [run('x'), run('y'), run('z')];
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    expect(log).toEqual(expected);
  });
});

describe('two levels in a group', () => {
  const group = () =>
    harness(
      [
        { name: 'k1', ...paced(6) },
        { name: 'k2', ...paced(6) },
        { name: 'other', ...paced(1) },
      ],
      { groups: [['k1', 'k2']], strategy: 'round-robin', deadlineMs: 60_000 },
    );

  test("a key's own limit paces that key and never lowers its siblings", async () => {
    const h = group();
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    await h.pool.execute(h.op);
    const [k1, k2] = h.pool.stats();
    expect([k1!.ceilingPerSecond, k1!.ownCeilingPerSecond]).toEqual([3, 3]);
    expect([k2!.ceilingPerSecond, k2!.ownCeilingPerSecond]).toEqual([6, undefined]);
    expect(k2!.status).toBe('ok'); // the key's cooldown is its own too
    expect(h.events.find((e) => e.type === 'endpoint-recalibrated')).toMatchObject({ endpoint: 'k1', scope: 'key', perSecond: 3 });
    expect(h.pool.capacity()).toBe(6 + 1);
  });

  test('a key repeating its own number never lowers the group; the same number from a sibling does', async () => {
    const h = group();
    const once = (pin: string) => h.pool.execute(h.op, { pin, retry: 'none' }).catch(() => undefined);
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }), fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    await once('k1');
    await h.clock.advance(5000);
    await once('k1');
    expect(h.pool.stats()[1]!.ceilingPerSecond).toBe(6);
    // Refused again at the pace it named: k1 goes 5 % under its number (limits/ceiling.ts).
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBeCloseTo(2.85, 9);
    h.eps.k2!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    await h.clock.advance(5000);
    await once('k2');
    const [k1, k2] = h.pool.stats();
    expect(k1!.ceilingPerSecond).toBeCloseTo(2.85, 9);
    expect(k2!.ceilingPerSecond).toBe(3);
    expect(h.events.filter((e) => e.type === 'endpoint-recalibrated').map((e) => e.type === 'endpoint-recalibrated' && e.scope)).toEqual(['key', 'key', 'group']);
  });

  test("a key refused with its number again at its lowest pace for it (a fifth under) is not over its own limit: the group is lowered, on a guess", async () => {
    const h = group();
    const once = (pin: string) => h.pool.execute(h.op, { pin, retry: 'none' }).catch(() => undefined);
    const seen: number[] = [];
    // k1 says 3 seven times, each sent at the pace in force: 3, then 5 % under a time down to 2.4.
    for (let i = 0; i < 7; i++) {
      h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
      await once('k1');
      seen.push(h.pool.stats()[1]!.ceilingPerSecond!);
      await h.clock.advance(2000);
    }
    const scopes = h.events.flatMap((e) => (e.type === 'endpoint-recalibrated' ? [e.scope] : []));
    expect(scopes).toEqual(['key', 'key', 'key', 'key', 'key', 'key', 'group']);
    expect(seen).toEqual([6, 6, 6, 6, 6, 6, 3]); // k2's ceiling: the group's
    expect(h.pool.stats()[0]!.ownCeilingPerSecond).toBeCloseTo(2.4, 9);
  });

  test('a number that lowered the group is used up: after the group recovers, a key whose own limit is that same number lowers only itself', async () => {
    const h = harness(
      [
        { name: 'k1', ...paced(6) },
        { name: 'k2', ...paced(6) },
        { name: 'other', ...paced(1) },
      ],
      { groups: [['k1', 'k2']], strategy: 'round-robin', deadlineMs: 60_000, ceilingRecovery: { quietMs: 30_000, stepMs: 1000, stepFraction: 1 } },
    );
    const once = (pin: string) => start(h.pool.execute(h.op, { pin, retry: 'none' }).catch(() => undefined));
    const t0 = h.clock.now();
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    await once('k1').promise;
    await h.clock.advance(t0 + 1000 - h.clock.now());
    h.eps.k2!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    await once('k2').promise;
    expect(h.pool.stats()[1]!.ceilingPerSecond).toBe(3); // two keys, one number: the account
    // 30 s later the account is back at 6/s; k1 then says 3 again (its own limit, as it turns out).
    await h.clock.advance(t0 + 31_000 - h.clock.now());
    const ok = once('k2');
    await h.clock.advance(0);
    await ok.promise;
    await h.clock.advance(1000);
    expect(h.pool.stats()[1]!.ceilingPerSecond).toBe(6);
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    const c = once('k1');
    await h.clock.advance(0);
    await c.promise;
    const [k1, k2] = h.pool.stats();
    expect([k1!.ceilingPerSecond, k2!.ceilingPerSecond]).toEqual([3, 6]);
  });

  test("two keys' equal numbers are a guess at the account's limit: that ceiling probes up after a quarter of quietMs, one the server said of the account after quietMs", async () => {
    // k1 and k2 both say 3 (their own limits, as it turns out): the group is lowered to 3. A
    // number the classifier says is the account's (ceilingScope) waits the whole quietMs.
    const recovery = { quietMs: 20_000, stepMs: 1000, stepFraction: 1 };
    const rises = async (hints: (readonly [string, 'key' | 'group' | undefined])[]): Promise<number> => {
      const h = harness(
        [
          { name: 'k1', ...paced(6) },
          { name: 'k2', ...paced(6) },
          { name: 'other', ...paced(1) },
        ],
        { groups: [['k1', 'k2']], strategy: 'round-robin', deadlineMs: 60_000, ceilingRecovery: recovery },
      );
      const t0 = h.clock.now();
      for (const [pin, ceilingScope] of hints) {
        h.eps[pin]!.then(fail(ceilingScope === undefined ? { class: 'rate-limited', ceilingPerSecond: 3 } : { class: 'rate-limited', ceilingPerSecond: 3, ceilingScope }));
        await h.pool.execute(h.op, { pin, retry: 'none' }).catch(() => undefined);
        await h.clock.advance(500);
      }
      expect(h.pool.stats()[1]!.ceilingPerSecond).toBe(3);
      const lowered = h.clock.now() - 500;
      // A success every 250 ms: each applies the steps due.
      while (h.pool.stats()[1]!.ceilingPerSecond === 3 && h.clock.now() - t0 < 60_000) {
        const c = start(h.pool.execute(h.op, { pin: 'k1' }));
        await h.clock.advance(250);
        while (!c.settled) await h.clock.advance(50);
      }
      return h.clock.now() - lowered;
    };
    const guessed = await rises([
      ['k1', undefined],
      ['k2', undefined],
    ]);
    expect(guessed).toBeGreaterThanOrEqual(recovery.quietMs / 4);
    expect(guessed).toBeLessThanOrEqual(recovery.quietMs / 4 + recovery.stepMs + 250);
    const said = await rises([['k1', 'group']]);
    expect(said).toBeGreaterThanOrEqual(recovery.quietMs);
  });

  test('the same number from two keys does not lower a group just seen carrying more than that', async () => {
    const h = group();
    const once = (pin: string) => start(h.pool.execute(h.op, { pin, retry: 'none' }).catch(() => undefined));
    // Four calls accepted within about half a second: the account admits more than 3 a second.
    const warm = ['k1', 'k2', 'k1', 'k2'].map(once);
    await h.clock.advance(600);
    await Promise.all(warm.map((c) => c.promise));
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    h.eps.k2!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    const limited = [once('k1'), once('k2')];
    await h.clock.advance(400);
    await Promise.all(limited.map((c) => c.promise));
    const scopes = h.events.flatMap((e) => (e.type === 'endpoint-recalibrated' ? [e.scope] : []));
    expect(scopes).toEqual(['key', 'key']);
    expect(h.pool.stats().slice(0, 2).map((e) => [e.ceilingPerSecond, e.ownCeilingPerSecond])).toEqual([
      [3, 3],
      [3, 3],
    ]);
    expect(h.pool.capacity()).toBe(6 + 1);
  });

  test.each([
    ['group', [3, 3]],
    ['key', [3, 6]],
  ] as const)('the classifier can say which level: ceilingScope %s', async (scope, ceilings) => {
    const h = group();
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3, ceilingScope: scope }));
    await h.pool.execute(h.op);
    expect(h.pool.stats().slice(0, 2).map((s) => s.ceilingPerSecond)).toEqual(ceilings);
  });

  test("a key's own limit recovers to the group's level and then goes away", async () => {
    const h = group();
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    await h.pool.execute(h.op);
    await h.clock.advance(1_000_000);
    expect(h.pool.stats()[0]).toMatchObject({ ceilingPerSecond: 3, ownCeilingPerSecond: 3 });
    await h.pool.execute(h.op, { pin: 'k1' });
    expect(h.pool.stats()[0]).toMatchObject({ ceilingPerSecond: 6, ownCeilingPerSecond: undefined });
  });
});

describe('a spent daily quota in a group', () => {
  test('parks the key that said so, not its siblings', async () => {
    const h = harness(['k1', 'k2', 'other'], { groups: [['k1', 'k2']] });
    h.eps.k1!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    expect(await h.pool.execute(h.op, { exclude: ['other'] })).toBe('k2');
    const [k1, k2] = h.pool.stats();
    expect(k1!.status).toBe('parked');
    expect(k1!.parkedUntilMs).toBeGreaterThan(h.clock.now());
    expect(k2!.status).toBe('ok');
    expect(h.pool.capacity()).toBe(Number.POSITIVE_INFINITY);
  });
});
