/**
 * Edges of the pure core (breaker, limiter, selector, backoff) that the mutation run
 * showed no other test pinned down.
 */
import { describe, expect, test } from 'vitest';
import { backoffDelay } from '../src/call/backoff.js';
import { Breaker } from '../src/health/breaker.js';
import { resolveBreaker } from '../src/health/breaker.js';
import { TokenBucket } from '../src/limits/bucket.js';
import { harness, fail, start } from './support.js';

const opts = resolveBreaker({ threshold: 1, cooldownMs: 1000, maxCooldownMs: 4000 });

describe('Breaker edges', () => {
  test('openUntil and probing report the current opening and the probe slot', () => {
    const b = new Breaker(opts);
    expect(b.probing).toBe(false);
    b.recordFailure(b.generation, 0, 500);
    expect(b.openUntil).toBe(1500);
    const probe = b.enter(1500);
    expect(probe).not.toBe(0);
    expect(b.probing).toBe(true);
    b.release(probe);
    expect(b.probing).toBe(false);
  });

  test('a reachable answer on a closed breaker is not a transition', () => {
    const b = new Breaker(opts);
    expect(b.recordReachable(0)).toBe(false);
    expect(b.recordSuccess(0)).toBe(false);
  });

  test('a failure from before an opening does not count after the breaker closed again', () => {
    const b = new Breaker({ ...opts, threshold: 2 });
    const old = b.generation;
    b.recordFailure(old, 0, 0);
    b.recordFailure(old, 0, 0);
    expect(b.recordSuccess(0)).toBe(true);
    // A late failure of an attempt that started in the old generation.
    expect(b.recordFailure(old, 0, 10)).toBe(false);
    expect(b.failures).toBe(0);
  });

  test('releasing an ordinary attempt (epoch 0) never frees the probe slot', () => {
    const b = new Breaker(opts);
    b.recordFailure(b.generation, 0, 0);
    const probe = b.enter(1000);
    b.release(0);
    expect(b.probing).toBe(true);
    expect(b.admits(1000)).toBe(false);
    b.release(probe);
    expect(b.admits(1000)).toBe(true);
  });

  test('waitMs is 0 once closed, even before the old cooldown would have ended', () => {
    const b = new Breaker(opts);
    b.recordFailure(b.generation, 0, 0);
    expect(b.waitMs(200)).toBe(800);
    b.recordSuccess(0);
    expect(b.waitMs(200)).toBe(0);
  });
});

describe('TokenBucket edges', () => {
  test('the wait for a partly refilled token is for the missing part only', () => {
    const b = new TokenBucket(1, 1, 0);
    b.take(0);
    expect(b.waitMs(500)).toBe(500);
    expect(b.waitMs(750)).toBe(250);
  });
});

describe('backoff edges', () => {
  test('decorrelated jitter on the first retry spans [initialMs, 3 × initialMs]', () => {
    const o = { initialMs: 100, maxMs: 10_000, jitter: 'decorrelated' as const };
    expect(backoffDelay(1, o, () => 0.5)).toBe(200);
    expect(backoffDelay(1, o, () => 0.999)).toBe(300);
  });
});

describe('selector edges', () => {
  test('NO_ENDPOINT reports the shortest wait among open breakers, wherever it is in the ring', async () => {
    const h = harness(['a', 'b', 'c'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 1000, maxCooldownMs: 60_000 } });
    // c opens first (longest remaining), then a, then b (each 100 ms later).
    h.eps.c!.then(fail('transient'));
    await h.pool.execute(h.op, { pin: 'c' }).catch(() => undefined);
    await h.clock.advance(100);
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op, { pin: 'a' }).catch(() => undefined);
    await h.clock.advance(100);
    h.eps.b!.then(fail('transient'));
    await h.pool.execute(h.op, { pin: 'b' }).catch(() => undefined);
    const err = (await h.pool.execute(h.op).catch((e: unknown) => e)) as { code: string; retryAfterMs: number };
    expect([err.code, err.retryAfterMs]).toEqual(['NO_ENDPOINT', 800]);
  });

  test('when every candidate waits, the call waits for the shortest, even if it is first in the ring', async () => {
    const h = harness([
      { name: 'a', rateLimit: { perSecond: 4, burst: 1 } },
      { name: 'b', rateLimit: { perSecond: 1 } },
    ]);
    await h.pool.execute(h.op);
    await h.pool.execute(h.op);
    const t0 = h.clock.now();
    const third = start(h.pool.execute(h.op));
    await h.clock.advance(250);
    await third.promise;
    expect(third.value).toBe('a');
    expect(h.eps.a!.startedAt.at(-1)! - t0).toBe(250);
    const wait = h.events.find((e) => e.type === 'rate-limit-wait');
    expect(wait).toMatchObject({ endpoint: 'a', delayMs: 250 });
  });
});
