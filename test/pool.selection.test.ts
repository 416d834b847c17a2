import { describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { fail, harness, hang, ok, start } from './support.js';

describe('selection', () => {
  test('ordered: every call goes to the first endpoint in config order while it is healthy', async () => {
    const h = harness(['a', 'b', 'c']);
    for (let i = 0; i < 5; i++) await h.pool.execute(h.op);
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([5, 0, 0]);
  });

  test('high tier is used before low, whatever the order in the config', async () => {
    const h = harness([{ name: 'low1', priority: 'low' }, { name: 'high1' }, { name: 'low2', priority: 'low' }]);
    await h.pool.execute(h.op);
    expect(h.eps.high1!.calls).toBe(1);
    expect(h.eps.low1!.calls).toBe(0);
  });

  test('round-robin spreads calls in proportion to weights', async () => {
    const h = harness([{ name: 'a', weight: 2 }, { name: 'b', weight: 1 }, { name: 'c', weight: 1 }], { strategy: 'round-robin' });
    for (let i = 0; i < 400; i++) await h.pool.execute(h.op);
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([200, 100, 100]);
  });

  test('round-robin cursor advances even when it lands on a broken endpoint (its slot goes to the successor)', async () => {
    const h = harness(['a', 'b', 'c'], { strategy: 'round-robin', breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.b!.then(fail('transient'));
    // Three calls: a, b (fails, breaker opens, retried at once on c), c.
    for (let i = 0; i < 3; i++) await h.pool.execute(h.op);
    expect(h.pool.breakerState('b')).toMatchObject({ state: 'open' });
    h.eps.a!.calls = h.eps.c!.calls = 0;
    for (let i = 0; i < 30; i++) await h.pool.execute(h.op);
    // b's third of the ring goes to its successor, c.
    expect([h.eps.a!.calls, h.eps.b!.calls - 1, h.eps.c!.calls]).toEqual([10, 0, 20]);
  });

  test('excluded endpoints and endpoints with an open breaker are skipped', async () => {
    const h = harness(['a', 'b', 'c'], { breaker: { threshold: 1, cooldownMs: 1000 } });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op); // a fails and opens, b serves
    await h.pool.execute(h.op, { exclude: ['b'] });
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([1, 1, 1]);
  });

  test('an endpoint without a token is skipped, not waited on', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 2 } }, 'b']);
    for (let i = 0; i < 4; i++) await h.pool.execute(h.op);
    expect([h.eps.a!.calls, h.eps.b!.calls]).toEqual([2, 2]);
  });

  test('low is used only when no high endpoint is admissible; rate-limited high still counts as admissible', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1 } }, { name: 'z', priority: 'low' }]);
    await h.pool.execute(h.op);
    const second = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(second.settled).toBe(false); // waits for a's token rather than spilling to low
    await h.clock.advance(1000);
    await second.promise;
    expect([h.eps.a!.calls, h.eps.z!.calls]).toEqual([2, 0]);
    expect(h.trace((e) => e.type === 'rate-limit-wait')).toEqual(['rate-limit-wait:a']);
    expect(h.metrics.counter('endpoint_pool_rate_limit_waits_total', { endpoint: 'a' })).toBe(1);
  });

  test('low serves when every high breaker is open', async () => {
    const h = harness(['a', { name: 'z', priority: 'low' }], { breaker: { threshold: 1, cooldownMs: 1000 } });
    h.eps.a!.then(fail('transient'));
    expect(await h.pool.execute(h.op)).toBe('z');
    expect(await h.pool.execute(h.op)).toBe('z');
    expect(h.eps.a!.calls).toBe(1);
  });

  test('when every admissible candidate is rate-limited, the call sleeps exactly the shortest wait', async () => {
    const h = harness([
      { name: 'a', rateLimit: { perSecond: 1 } },
      { name: 'b', rateLimit: { perSecond: 4, burst: 1 } },
    ]);
    await h.pool.execute(h.op);
    await h.pool.execute(h.op);
    const t0 = h.clock.now();
    const third = start(h.pool.execute(h.op));
    await h.clock.advance(249);
    expect(third.settled).toBe(false);
    await h.clock.advance(1);
    await third.promise;
    expect(third.value).toBe('b');
    expect(h.eps.b!.startedAt.at(-1)! - t0).toBe(250);
  });

  test('a retry goes at once to an untried endpoint of the tier, and backs off before reusing a tried one', async () => {
    const h = harness(['a', 'b'], { maxAttempts: 3 });
    h.eps.a!.then(fail('transient'), fail('transient'));
    h.eps.b!.then(fail('transient'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect([h.eps.a!.startedAt, h.eps.b!.startedAt]).toEqual([[1_000_000], [1_000_000]]);
    expect(call.settled).toBe(false);
    await h.clock.advance(100); // first backoff (100 ms, no jitter)
    await call.promise;
    expect(h.eps.a!.startedAt).toEqual([1_000_000, 1_000_100]);
    expect(isPoolError(call.error) && call.error.code).toBe('RETRIES_EXHAUSTED');
  });

  test('pin sends every attempt to the pinned endpoint and never substitutes', async () => {
    const h = harness(['a', 'b'], { maxAttempts: 3 });
    h.eps.b!.then(fail('transient'), fail('transient'));
    const call = start(h.pool.execute(h.op, { pin: 'b' }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('b');
    expect([h.eps.a!.calls, h.eps.b!.calls]).toEqual([0, 3]);
  });

  test.each([
    ['unknown name', { pin: 'nope' }, /not in the pool/],
    ['excluded', { pin: 'a', exclude: ['a'] }, /also excluded/],
  ])('a pin that cannot serve fails with PIN_UNAVAILABLE (%s)', async (_, options, message) => {
    const h = harness(['a', 'b']);
    const err = await h.pool.execute(h.op, options).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('PIN_UNAVAILABLE');
    expect((err as Error).message).toMatch(message);
    expect(h.eps.a!.calls + h.eps.b!.calls).toBe(0);
  });

  test('a pin whose breaker is open fails with PIN_UNAVAILABLE and when it may be retried', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 2000 } });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op);
    await h.clock.advance(500);
    const err = await h.pool.execute(h.op, { pin: 'a' }).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('PIN_UNAVAILABLE');
    expect((err as Error).message).toMatch(/breaker is open/);
    expect(isPoolError(err) && err.retryAfterMs).toBe(1500);
  });

  test('unknown names in exclude are a clear error', async () => {
    const h = harness(['a']);
    const err = await h.pool.execute(h.op, { exclude: ['a', 'ghost'] }).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('INVALID_OPTIONS');
    expect((err as Error).message).toBe('exclude[1]: expected the name of an endpoint of this pool, got "ghost"');
  });

  test('per-endpoint maxInFlight makes the next call use another endpoint, and waits when all are full', async () => {
    const h = harness([{ name: 'a', maxInFlight: 1 }, { name: 'b', maxInFlight: 1 }]);
    h.eps.a!.then(ok('a', 100));
    h.eps.b!.then(ok('b', 50));
    const one = start(h.pool.execute(h.op));
    const two = start(h.pool.execute(h.op));
    const three = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect([h.eps.a!.calls, h.eps.b!.calls]).toEqual([1, 1]);
    await h.clock.advance(50);
    expect(two.value).toBe('b');
    await three.promise;
    expect(three.value).toBe('b');
    await h.clock.advance(50);
    await one.promise;
    const s = h.pool.stats();
    expect(s.map((e) => [e.name, e.inFlight, e.peakInFlight])).toEqual([
      ['a', 0, 1],
      ['b', 0, 1],
    ]);
    void hang;
  });
});
