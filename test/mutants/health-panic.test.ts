/**
 * Twenty-sixth session, mutation run of `src/selection/health.ts`, `panic.ts`, `random.ts`,
 * `latency-selector.ts` and `src/health/failure-rate.ts` (never run before: 84.5 % of 401
 * mutants, `latency-selector.ts` 31.8 %): what the survivors showed no test holding.
 *
 * - Health ranking: use in the short window decides before use in the long one, and the long
 *   one breaks the short one's ties, among ready endpoints and among tried ones (whose ties
 *   then go to configuration order).
 * - Latency selection's default cold start: the slowest estimate among endpoints with
 *   history, read again at most every 100 ms.
 * - Panic mode: the low tier's panic is reported as `low`; a call queued for an endpoint whose
 *   breaker opened while its tier is not in panic does not take its turn there.
 */
import { describe, expect, test } from 'vitest';
import { EndpointState } from '../../src/selection/endpoint.js';
import { Quota } from '../../src/limits/quota.js';
import { selectHealthiest } from '../../src/selection/health.js';
import { resolveBreaker } from '../../src/health/breaker.js';
import { Pool, type PoolEvent } from '../../src/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const BREAKER = resolveBreaker({});
const WINDOW = 300_000;
const LONG = 900_000;
const opts = { windowMs: WINDOW, longWindowMs: LONG, maxWaitForHealthyMs: 1500 };
/** The time the selections below are made at: uses at 0 are in the long window only. */
const NOW = 600_000;

/** An endpoint with `recent` uses in the window (at NOW) and `old` in the long window only (at 0). */
function ep(name: string, recent: number, old: number, failures = 0): EndpointState<string> {
  const e = new EndpointState(name, name, 'high', 1, Number.POSITIVE_INFINITY, BREAKER, new Quota(undefined, 0, 0));
  for (let i = 0; i < old; i++) e.usage.add(0);
  for (let i = 0; i < recent; i++) e.usage.add(NOW);
  for (let i = 0; i < failures; i++) e.recentFailures.add(NOW);
  return e;
}

const pick = (ring: EndpointState<string>[], tried?: EndpointState<string>[]) => {
  const sel = selectHealthiest({ tiers: [ring, []], now: NOW, tried, excluded: undefined, ...opts });
  return sel.kind === 'endpoint' ? sel.endpoint.name : sel.kind;
};

describe('health ranking', () => {
  test.each<[string, [number, number][], string]>([
    ['less use in the window wins, whatever the long window says', [[9, 0], [4, 20]], 'e1'],
    ['the same, the better one first', [[4, 20], [9, 0]], 'e0'],
    ['equal use in the window: less in the long window wins', [[4, 10], [4, 2]], 'e1'],
    ['the same, three of them', [[4, 10], [4, 2], [4, 5]], 'e1'],
    ['equal in both: configuration order', [[4, 2], [4, 2]], 'e0'],
  ])('ready endpoints: %s', (_, specs, expected) => {
    expect(pick(specs.map(([r, o], i) => ep(`e${i}`, r, o)))).toBe(expected);
  });

  test.each<[string, [number, number, number][], string]>([
    ['fewer failures', [[0, 0, 2], [0, 0, 1]], 'e1'],
    ['less use in the window, whatever the long window says', [[9, 0, 0], [4, 20, 0]], 'e1'],
    ['equal use in the window: less in the long window', [[4, 10, 0], [4, 2, 0]], 'e1'],
    ['equal in everything: configuration order', [[4, 2, 0], [4, 2, 0], [4, 2, 0]], 'e0'],
  ])('every endpoint tried: %s', (_, specs, expected) => {
    const ring = specs.map(([r, o, f], i) => ep(`e${i}`, r, o, f));
    expect(pick(ring, ring)).toBe(expected);
  });
});

describe("latency selection's default cold start", () => {
  test('an endpoint with no history costs what the slowest known one does, read again after 100 ms', async () => {
    const clock = new FakeClock();
    // The power-of-two choice draws two ring indexes: `draws` sets them.
    let draws: number[] = [];
    const random = () => draws.shift() ?? 0.5;
    const [A, B, C, D] = [0.1, 0.3, 0.6, 0.9];
    const pool = new Pool<string>({ endpoints: ['a', 'b', 'c', 'd'].map((name) => ({ name, conn: name })), classify: () => 'transient', strategy: 'latency', clock, random });
    const took: Record<string, number> = { a: 100, b: 300, c: 50, d: 50 };
    const op = (conn: string) => new Promise<string>((resolve) => clock.setTimeout(() => resolve(conn), took[conn]!));
    const call = async (pin?: string) => {
      const p = pool.execute(op, pin === undefined ? undefined : { pin });
      await clock.advance(1000);
      return p;
    };
    await call('a');
    await call('b');
    // c (no history) against a (100 ms): c costs the slowest known, 300 ms: a.
    draws = [C, A];
    expect(await call()).toBe('a');
    // b (300 ms) against c: a tie, which goes to the first drawn.
    draws = [B, C];
    expect(await call()).toBe('b');

    // b slows down to 1,000 ms; a selection reads the cold start (300) 50 ms before b's estimate rises.
    took['b'] = 1000;
    const slow = pool.execute(op, { pin: 'b' });
    await clock.advance(950);
    draws = [A, D];
    const read = pool.execute(op);
    await clock.advance(60);
    expect(await slow).toBe('b');
    // 60 ms after that read the cold start is still 300: c (300) beats b (1,000).
    draws = [B, C];
    const cached = pool.execute(op);
    await clock.advance(1000);
    expect(await read).toBe('a');
    expect(await cached).toBe('c');
    // Read again (over 100 ms later): d costs 1,000 as b does, and the tie goes to b, drawn first.
    draws = [B, D];
    expect(await call()).toBe('b');
  });
});

describe('panic mode', () => {
  test('with a breaker open but no tier in panic, the strategy decides (ordered stays ordered)', async () => {
    const pool = new Pool<string>({ endpoints: ['a', 'b', 'c'].map((name) => ({ name, conn: name })), classify: () => 'transient', maxEjectedPercent: 50, breaker: { threshold: 1, cooldownMs: 60_000 }, clock: new FakeClock() });
    await expect(pool.execute(() => Promise.reject(new Error('down')), { pin: 'a', retry: 'none' })).rejects.toMatchObject({ endpoint: 'a' });
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    const served: string[] = [];
    for (let i = 0; i < 4; i++) served.push(await pool.execute(async (conn) => conn));
    expect(served).toEqual(['b', 'b', 'b', 'b']);
  });

  test("the low tier's panic is reported as low", async () => {
    const clock = new FakeClock();
    const events: PoolEvent[] = [];
    const pool = new Pool<string>({
      endpoints: [{ name: 'h', conn: 'h' }, { name: 'l', conn: 'l', priority: 'low' }],
      classify: () => 'transient',
      breaker: { threshold: 1, cooldownMs: 60_000 },
      maxEjectedPercent: 0,
      clock,
      onEvent: (e) => events.push(e),
    });
    // Each tier's only endpoint fails once (pinned: no panic selection yet), opening its breaker.
    for (const pin of ['l', 'h']) await expect(pool.execute(() => Promise.reject(new Error('down')), { pin, retry: 'none' })).rejects.toMatchObject({ endpoint: pin });
    expect(events.filter((e) => e.type === 'panic')).toEqual([]);
    expect(await pool.execute(async (conn) => conn)).toBe('h');
    expect(events.filter((e) => e.type === 'panic')).toEqual([
      { type: 'panic', priority: 'high', active: true },
      { type: 'panic', priority: 'low', active: true },
    ]);
  });

  test('a call queued for an endpoint whose breaker opened, its tier not in panic, takes no turn there', async () => {
    const clock = new FakeClock(1_000_000);
    const pool = new Pool<string>({
      endpoints: ['a', 'b', 'c'].map((name) => ({ name, conn: name, rateLimit: { perSecond: 1 } })),
      classify: () => 'transient',
      breaker: { threshold: 1, cooldownMs: 60_000 },
      // One of three may be out: a's breaker alone is no panic.
      maxEjectedPercent: 50,
      maxAttempts: 1,
      clock,
    });
    let first = true;
    const op = (conn: string) =>
      new Promise<string>((resolve, reject) =>
        clock.setTimeout(() => {
          if (conn === 'a' && first) {
            first = false;
            reject(new Error('down'));
          } else resolve(conn);
        }, conn === 'a' ? 500 : 1),
      );
    // Each endpoint's token used; a's call fails at 500 ms, opening its breaker.
    const spent = [pool.execute(op), pool.execute(op), pool.execute(op)];
    // This call queues for the soonest turn, a's (first in order), due at 1000 ms.
    const queued = pool.execute(op);
    await clock.advance(2000);
    await Promise.allSettled(spent);
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    expect(await queued).not.toBe('a');
  });
});
