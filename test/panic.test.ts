import { describe, expect, test } from 'vitest';
import { EndpointState } from '../src/selection/endpoint.js';
import { resolveBreaker } from '../src/health/breaker.js';
import { Quota } from '../src/limits/quota.js';
import { tierInPanic } from '../src/selection/panic.js';
import { Pool, type PoolEvent } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { fail, harness } from './support.js';

function tier(n: number, open: number): EndpointState<string>[] {
  return Array.from({ length: n }, (_, i) => {
    const ep = new EndpointState(`e${i}`, `e${i}`, 'high', 1, Number.POSITIVE_INFINITY, resolveBreaker({ threshold: 1 }), new Quota(undefined, 0, 0));
    if (i < open) ep.breaker.recordFailure(ep.breaker.generation, 0, 0);
    return ep;
  });
}

describe('panic threshold: at most min(floor(n × p / 100), n − 1) ejected', () => {
  test.each([
    // n, open, percent, panic
    [3, 2, 100, false], // 100 %: n − 1 = 2 may be out
    [3, 3, 100, true], // never the whole tier
    [3, 1, 50, false], // floor(1.5) = 1
    [3, 2, 50, true],
    [4, 2, 50, false],
    [4, 3, 50, true],
    [1, 1, 100, true], // a tier of one is never ejected
    [10, 0, 0, false],
    [10, 1, 0, true], // 0 %: any ejection panics
    [5, 3, 66, false], // floor(3.3) = 3 may be out
    [5, 4, 66, true],
  ])('n=%i, %i open, %i %% → panic %s', (n, open, pct, panic) => {
    expect(tierInPanic(tier(n, open), 1, pct)).toBe(panic);
  });
});

describe('panic mode in the pool', () => {
  test('off by default: when every breaker is open, calls fail with NO_ENDPOINT', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1 }, maxAttempts: 2 });
    for (const e of Object.values(h.eps)) e.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    const err = await h.pool.execute(h.op).catch((e: unknown) => e);
    expect((err as { code: string }).code).toBe('NO_ENDPOINT');
  });

  test('with maxEjectedPercent, a tier whose breakers are all open spreads calls over all of them instead of failing', async () => {
    const h = harness(['a', 'b', 'c'], { breaker: { threshold: 1, cooldownMs: 60_000 }, maxAttempts: 3, maxEjectedPercent: 100 });
    for (const e of Object.values(h.eps)) e.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.stats().map((s) => s.status)).toEqual(['open', 'open', 'open']);
    // The first call in panic goes to an open endpoint instead of failing, and its success closes that breaker.
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(h.pool.stats().map((s) => s.status)).toEqual(['ok', 'open', 'open']);
    expect(h.events.filter((e) => e.type === 'panic')).toEqual([{ type: 'panic', priority: 'high', active: true }]);
    // Two of three out is within the threshold (n − 1): the panic ends and normal selection resumes.
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(h.events.filter((e) => e.type === 'panic').at(-1)).toEqual({ type: 'panic', priority: 'high', active: false });
  });

  test('panic spreads calls over the whole tier rather than the head', async () => {
    const h = harness(['a', 'b', 'c', 'd'], { breaker: { threshold: 1, cooldownMs: 60_000 }, maxAttempts: 4, maxEjectedPercent: 0 });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op);
    // One of four out at 0 %: panic; the endpoints keep failing so the panic lasts.
    for (const e of Object.values(h.eps)) e.fallback = fail('transient');
    for (let i = 0; i < 8; i++) await h.pool.execute(h.op, { retry: 'none' }).catch(() => undefined);
    expect(Object.values(h.eps).map((e) => e.calls)).toEqual([3, 3, 2, 2]);
  });
});

describe('a turn in a rate-limit queue while the tier is in panic', () => {
  /** A FakeClock that gives up after a million reads: a synchronous livelock fails the test instead of hanging it. */
  class BoundedClock extends FakeClock {
    reads = 0;
    override now(): number {
      if (++this.reads > 1_000_000) throw new Error('runaway: a million clock reads without the clock moving on');
      return super.now();
    }
  }

  test('a call queued while the breaker is ignored takes its turn (it was handed the turn, refused it for the open breaker and re-queued at the front, forever)', async () => {
    const clock = new BoundedClock(1_000_000);
    const events: PoolEvent[] = [];
    let n = 0;
    const pool = new Pool<string>({
      endpoints: [{ name: 'b', conn: 'b', rateLimit: { perSecond: 1 } }],
      classify: () => 'transient',
      maxEjectedPercent: 50,
      breaker: { threshold: 1, cooldownMs: 60_000 },
      maxAttempts: 1,
      clock,
      onEvent: (e) => events.push(e),
    });
    const op = (): Promise<string> => (n++ === 0 ? Promise.reject(new Error('down')) : Promise.resolve('ok'));
    await expect(pool.execute(op)).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    expect(pool.breakerState('b')).toMatchObject({ state: 'open' });
    const calls = [pool.execute(op), pool.execute(op)];
    await clock.advance(3000);
    await expect(Promise.all(calls)).resolves.toEqual(['ok', 'ok']);
    expect(events.filter((e) => e.type === 'panic')).toEqual([{ type: 'panic', priority: 'high', active: true }]);
  });
});
