/**
 * A call in flight while `setEndpoints` replaces an endpoint it tried: the replacement is an
 * endpoint the call has not tried, so with `maxAttempts` left unset (every endpoint once) it
 * does not cost the call the attempt that would reach the last endpoint. A call that had tried
 * `a` (refused), then `a`'s replacement and `b` (refused) ran out of its three attempts before
 * `c`, which serves.
 */
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

/** Endpoints a, b, c with connections A, B, C, in that order, every failure classified `cls`. */
function abc(clock: FakeClock, cls: 'unsupported' | 'transient', backoffMs: number, maxAttempts?: number): Pool<string> {
  return new Pool<string>({
    endpoints: [{ name: 'a', conn: 'A' }, { name: 'b', conn: 'B' }, { name: 'c', conn: 'C' }],
    strategy: 'ordered',
    clock,
    ...(maxAttempts === undefined ? {} : { maxAttempts }),
    backoff: { initialMs: backoffMs, maxMs: backoffMs },
    classify: () => cls,
  });
}

/** Endpoints a, b, c (ordered); only C serves. `a` answers after 100 ms, and at 50 ms `setEndpoints` gives it connection A2. */
async function replacedWhileTried(cls: 'unsupported' | 'transient', maxAttempts?: number) {
  const clock = new FakeClock(0);
  const asked: string[] = [];
  const pool = abc(clock, cls, 1, maxAttempts);
  const call = pool.execute(async (conn) => {
    asked.push(conn);
    if (conn === 'A') await new Promise<void>((r) => clock.setTimeout(r, 100));
    if (conn !== 'C') throw new Error(`${conn} refuses`);
    return 'served';
  });
  await clock.advance(50);
  pool.setEndpoints([{ name: 'a', conn: 'A2' }, { name: 'b', conn: 'B' }, { name: 'c', conn: 'C' }]);
  await clock.advance(200);
  const outcome = await call.then((v) => v, (e: unknown) => e);
  await pool.close();
  return { outcome, asked };
}

describe('the attempt cap across a replacement', () => {
  test.each([
    ['unsupported (left out after it refused)', 'unsupported'],
    ['transient (tried)', 'transient'],
  ] as const)('%s: a call still reaches the last endpoint', async (_label, cls) => {
    const { outcome, asked } = await replacedWhileTried(cls);
    expect(outcome).toBe('served');
    expect(asked).toEqual(['A', 'A2', 'B', 'C']);
  });

  test('a cap given is the cap: no attempt more for a replacement', async () => {
    const { outcome, asked } = await replacedWhileTried('unsupported', 3);
    expect(isPoolError(outcome)).toBe(true);
    expect(asked).toEqual(['A', 'A2', 'B']);
  });
});

describe('an endpoint that took itself out of the running, then left the pool, still counts', () => {
  for (const how of ['disabled', 'parked'] as const) {
    test(`${how} by its answer, then removed while the call runs: the call still reaches the last endpoint (swaps generator, seed 42611)`, async () => {
      // Endpoints a, b, c, d (ordered; cap max(3, 4) = 4). a's answer takes it out of the running
      // (an invalid key, a spent day) and a leaves the pool while it answers; b and c refuse, d serves.
      // a was never counted as tried, so the cap fell to max(3, 3) = 3 and the call failed before d.
      const clock = new FakeClock(0);
      const asked: string[] = [];
      const names = ['a', 'b', 'c', 'd'];
      const pool = new Pool<string>({
        endpoints: names.map((name) => ({ name, conn: name.toUpperCase() })),
        strategy: 'ordered',
        clock,
        backoff: { initialMs: 1, maxMs: 1 },
        classify: (e) => {
          const m = (e as Error).message;
          if (m === 'out') return how === 'disabled' ? { class: 'permanent', disableEndpoint: true } : { class: 'rate-limited', dailyQuotaExhausted: true };
          return 'unsupported';
        },
      });
      const call = pool.execute(async (conn) => {
        asked.push(conn);
        if (conn === 'A') {
          pool.setEndpoints(['b', 'c', 'd'].map((name) => ({ name, conn: name.toUpperCase() })));
          throw new Error('out');
        }
        if (conn !== 'D') throw new Error('refuses');
        return 'served';
      });
      await clock.advance(100);
      const outcome = await call.then((v) => v, (e: unknown) => e);
      await pool.close();
      expect(asked).toEqual(['A', 'B', 'C', 'D']);
      expect(outcome).toBe('served');
    });
  }
});

describe('an endpoint tried, then left out, then replaced counts once', () => {
  test('a transient failure on a, then unsupported on a while setEndpoints replaces it: the cap grows by one, not two', async () => {
    // Endpoints a and b (ordered, cap max(3, 2) = 3): a fails (tried), b fails, a again answers
    // unsupported (left out) after setEndpoints gave it connection A2. a counts once on top of
    // the two endpoints: 3 attempts, then RETRIES_EXHAUSTED. (It counted twice, in the tried
    // and in the left-out list, and the call made a 4th attempt on A2: seed 2026120804 of the
    // mixed-options property.)
    const clock = new FakeClock(0);
    const asked: string[] = [];
    const pool = new Pool<string>({
      endpoints: [{ name: 'a', conn: 'A' }, { name: 'b', conn: 'B' }],
      strategy: 'ordered',
      clock,
      backoff: { initialMs: 1, maxMs: 1 },
      classify: (e) => ((e as Error).message === 'unsupported' ? 'unsupported' : 'transient'),
    });
    let aCalls = 0;
    const call = pool.execute(async (conn) => {
      asked.push(conn);
      if (conn === 'A' && ++aCalls === 2) {
        await new Promise<void>((r) => clock.setTimeout(r, 100));
        throw new Error('unsupported');
      }
      throw new Error('refused');
    });
    await clock.advance(50);
    pool.setEndpoints([{ name: 'a', conn: 'A2' }, { name: 'b', conn: 'B' }]);
    await clock.advance(500);
    const outcome = await call.then((v) => v, (e: unknown) => e);
    await pool.close();
    expect(asked).toEqual(['A', 'B', 'A']);
    expect(outcome).toMatchObject({ code: 'RETRIES_EXHAUSTED' });
  });
});

/**
 * `setEndpoints` with the same connection under a name and new settings (a weight, a priority,
 * `maxInFlight`) keeps the endpoint: the calls running know it still. It made a new endpoint
 * before: a pinned call failed `PIN_UNAVAILABLE` ("removed from the pool"), an excluded
 * endpoint served the call, one that answered `unsupported` was asked again, and the breaker
 * started closed (the swaps property, seed 2026120604: a read of `latest` reached a node 41
 * blocks behind, which head-aware routing had excluded, after its weight changed).
 */
describe('the same connection under new settings is the same endpoint', () => {
  const settings = [
    ['a weight', { weight: 3 }],
    ['a priority', { priority: 'low' as const }],
    ['maxInFlight', { maxInFlight: 7 }],
  ] as const;

  async function across(change: Record<string, unknown>, execOptions: { pin?: string; exclude?: string[] }, classify: 'transient' | 'unsupported' = 'transient') {
    const clock = new FakeClock(0);
    const asked: string[] = [];
    const pool = abc(clock, classify, 10);
    let first = true;
    const call = pool.execute(async (conn) => {
      asked.push(conn);
      if (first) {
        first = false;
        await new Promise<void>((r) => clock.setTimeout(r, 100));
        throw new Error(`${conn} fails once`);
      }
      return conn;
    }, execOptions);
    await clock.advance(50);
    // A new priority goes to all three (the order stays a, b, c): `a` alone in the low tier would be out of reach anyway.
    const tier = 'priority' in change ? { priority: change['priority'] as 'low' } : {};
    pool.setEndpoints([{ name: 'a', conn: 'A', ...change }, { name: 'b', conn: 'B', ...tier }, { name: 'c', conn: 'C', ...tier }]);
    await clock.advance(500);
    const outcome = await call.then((v) => v, (e: unknown) => e);
    await pool.close();
    return { outcome, asked };
  }

  test.each(settings)('%s: a call pinned to it goes on there', async (_label, change) => {
    const { outcome, asked } = await across(change, { pin: 'a' });
    expect(outcome).toBe('A');
    expect(asked).toEqual(['A', 'A']);
  });

  test.each(settings)('%s: a call that excluded it never reaches it', async (_label, change) => {
    // b fails (the first attempt); with the endpoint a new one to the call, a served the retry.
    const { outcome, asked } = await across(change, { exclude: ['a'] });
    expect(outcome).toBe('C');
    expect(asked).toEqual(['B', 'C']);
  });

  test.each(settings)('%s: one that answered unsupported is not asked again', async (_label, change) => {
    const { outcome, asked } = await across(change, {}, 'unsupported');
    expect(outcome).toBe('B');
    expect(asked).toEqual(['A', 'B']);
  });

  test('its breaker and counters stay across a change of weight and priority', async () => {
    const clock = new FakeClock(0);
    const pool = new Pool<string>({
      endpoints: [{ name: 'a', conn: 'A' }, { name: 'b', conn: 'B' }],
      strategy: 'ordered',
      clock,
      maxAttempts: 1,
      breaker: { threshold: 1, cooldownMs: 60_000 },
      classify: () => 'transient',
    });
    await pool.execute(async () => Promise.reject(new Error('down'))).catch(() => undefined);
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    pool.setEndpoints([{ name: 'a', conn: 'A', weight: 2, priority: 'low' }, { name: 'b', conn: 'B' }]);
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    expect(pool.stats().find((e) => e.name === 'a')).toMatchObject({ priority: 'low', failures: 1, attempts: 1 });
    expect(await pool.execute(async (conn) => conn)).toBe('B');
    await pool.close();
  });
});

describe('a list setEndpoints refuses changes nothing', () => {
  test("a kept endpoint's new settings are not applied when a later entry, or the groups, are refused", async () => {
    // Settings change in place only once the whole list is valid: a's maxInFlight of 1 held
    // after a refused list that would have lifted it (the mixed-options property, seed
    // 2026120614: two attempts in flight on a with maxInFlight 1).
    const clock = new FakeClock(0);
    const pool = new Pool<string>({
      endpoints: [{ name: 'a', conn: 'A', maxInFlight: 1, rateLimit: { perSecond: 5 } }, { name: 'b', conn: 'B', rateLimit: { perSecond: 5 } }],
      clock,
      classify: () => 'transient',
    });
    const lifted = { name: 'a', conn: 'A', priority: 'low' as const, rateLimit: { perSecond: 5 } };
    expect(() => pool.setEndpoints([lifted, { name: 'b', conn: 'B', weight: 0 }])).toThrow(/weight/);
    expect(() => pool.setEndpoints([lifted, { name: 'b', conn: 'B', rateLimit: { perSecond: 9 } }], [['a', 'b']])).toThrow(/groups/);
    expect(pool.stats().map((e) => [e.name, e.priority])).toEqual([['a', 'high'], ['b', 'high']]);
    let open = 0;
    let most = 0;
    const op = async (conn: string) => {
      most = Math.max(most, ++open);
      await new Promise<void>((r) => clock.setTimeout(r, 100));
      open--;
      return conn;
    };
    const calls = [pool.execute(op, { pin: 'a' }), pool.execute(op, { pin: 'a' })];
    await clock.advance(1000);
    await Promise.all(calls.map((c) => c.catch(() => undefined)));
    expect(most).toBe(1);
    await pool.close();
  });
});
