/**
 * `selectEndpoint` as a pure function: endpoint states built by hand, plain numbers for
 * time, no pool, no timers. Plus the `random` strategy through a pool with a scripted
 * random source.
 */
import { describe, expect, test } from 'vitest';
import { EndpointState } from '../src/selection/endpoint.js';
import { TokenBucket } from '../src/limits/bucket.js';
import { resolveBreaker } from '../src/health/breaker.js';
import { Quota } from '../src/limits/quota.js';
import { selectEndpoint } from '../src/selection/selector.js';
import { Pool } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

const BREAKER = resolveBreaker({ threshold: 1, cooldownMs: 1_000, maxCooldownMs: 8_000 });

function ep(name: string, opts: { maxInFlight?: number } = {}): EndpointState<string> {
  return new EndpointState(name, name, 'high', 1, opts.maxInFlight ?? Number.POSITIVE_INFINITY, BREAKER, new Quota(undefined, 0, 0));
}

/** Opens `e`'s breaker at `now` (threshold 1: one failure). */
function trip(e: EndpointState<string>, now: number): void {
  e.breaker.recordFailure(e.breaker.generation, e.breaker.enter(now), now);
}

function pick(tiers: EndpointState<string>[][], now = 0, extra: { starts?: number[]; tried?: EndpointState<string>[]; excluded?: EndpointState<string>[] } = {}) {
  return selectEndpoint({ tiers, starts: extra.starts ?? [0, 0], now, tried: extra.tried, excluded: extra.excluded });
}

function nameOf(sel: ReturnType<typeof pick>): string {
  return sel.kind === 'endpoint' ? `${sel.endpoint.name}${sel.tried ? '(tried)' : ''}` : sel.kind;
}

describe('selectEndpoint (pure)', () => {
  test.each([
    [0, 'a'],
    [1, 'b'],
    [2, 'c'],
  ])('walks the ring from start %i → %s', (start, want) => {
    const ring = [ep('a'), ep('b'), ep('c')];
    const sel = pick([ring, []], 0, { starts: [start, 0] });
    expect(nameOf(sel)).toBe(want);
  });

  test('skips excluded endpoints and open breakers, reporting the earliest probe time', () => {
    const [a, b, c] = [ep('a'), ep('b'), ep('c')];
    trip(a, 0); // open until 1000
    expect(nameOf(pick([[a, b, c], []], 10, { excluded: [b] }))).toBe('c');
    trip(c, 500); // open until 1500
    const none = pick([[a, b, c], []], 600, { excluded: [b] });
    expect(none).toEqual({ kind: 'none', retryAfterMs: 400 });
    // at 1000 a's cooldown is over: half-open, admits one probe
    expect(nameOf(pick([[a, b, c], []], 1_000, { excluded: [b] }))).toBe('a');
  });

  test('prefers an untried endpoint and falls back to a tried one (flagged for backoff)', () => {
    const [a, b] = [ep('a'), ep('b')];
    expect(nameOf(pick([[a, b], []], 0, { tried: [a] }))).toBe('b');
    expect(nameOf(pick([[a, b], []], 0, { tried: [a, b] }))).toBe('a(tried)');
  });

  test('uses the low tier only when the high tier has no admissible endpoint', () => {
    const [a, low] = [ep('a'), ep('low')];
    expect(nameOf(pick([[a], [low]]))).toBe('a');
    trip(a, 0);
    expect(nameOf(pick([[a], [low]], 1))).toBe('low');
  });

  test('a cooling high endpoint means wait, not spill to the low tier', () => {
    const [a, low] = [ep('a'), ep('low')];
    a.quota.cooldownUntil = 300;
    const sel = pick([[a], [low]], 100);
    expect(sel.kind).toBe('wait');
    if (sel.kind === 'wait') {
      expect(sel.waitMs).toBe(200);
      expect(sel.endpoint?.name).toBe('a');
    }
  });

  test('waits for the shortest of several waits (cooldown vs token bucket)', () => {
    const [a, b] = [ep('a'), ep('b')];
    a.quota.cooldownUntil = 900;
    b.quota.rate = new TokenBucket(10, 1, 0); // one token, refills every 100 ms
    b.quota.rate.take(0);
    const sel = pick([[a, b], []], 0);
    expect(sel).toMatchObject({ kind: 'wait', waitMs: 100 });
    expect(sel.kind === 'wait' && sel.endpoint?.name).toBe('b');
  });

  test('a full endpoint (maxInFlight) is a wait of Infinity when nothing else is ready', () => {
    const a = ep('a', { maxInFlight: 1 });
    a.inFlight = 1;
    expect(pick([[a], []])).toMatchObject({ kind: 'wait', waitMs: Number.POSITIVE_INFINITY });
  });

  test('nothing at all: none with Infinity', () => {
    expect(pick([[], []])).toEqual({ kind: 'none', retryAfterMs: Number.POSITIVE_INFINITY });
  });
});

describe("strategy: 'random'", () => {
  test('starts each selection where the injected random source points', async () => {
    const script = [0.1, 0.9, 0.5, 0.34, 0.67];
    let i = 0;
    const used: string[] = [];
    const pool = new Pool<string>({
      endpoints: ['a', 'b', 'c'].map((n) => ({ name: n, conn: n })),
      classify: () => 'transient',
      strategy: 'random',
      clock: new FakeClock(),
      random: () => script[i++ % script.length]!,
    });
    for (let k = 0; k < script.length; k++) used.push(await pool.execute(async (c) => c));
    expect(used).toEqual(['a', 'c', 'b', 'b', 'c']);
  });

  test('a failed attempt goes to another endpoint, never repeating while one is untried', async () => {
    const seen: string[] = [];
    const pool = new Pool<string>({
      endpoints: ['a', 'b', 'c'].map((n) => ({ name: n, conn: n })),
      classify: () => 'transient',
      strategy: 'random',
      clock: new FakeClock(),
      random: () => 0.5, // always starts at b
    });
    await expect(
      pool.execute(async (c) => {
        seen.push(c);
        throw new Error('down');
      }, { retry: { maxAttempts: 3 } }),
    ).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    expect(seen).toEqual(['b', 'c', 'a']);
  });

  test('weights skew the pick: weight 3 vs 1 over a uniform sweep', async () => {
    const n = 400;
    let k = 0;
    const pool = new Pool<string>({
      endpoints: [{ name: 'a', conn: 'a', weight: 3 }, { name: 'b', conn: 'b' }],
      classify: () => 'transient',
      strategy: 'random',
      clock: new FakeClock(),
      random: () => (k++ % n) / n,
    });
    const counts: Record<string, number> = { a: 0, b: 0 };
    for (let j = 0; j < n; j++) counts[await pool.execute(async (c) => c)]!++;
    expect(counts).toEqual({ a: 300, b: 100 });
  });

  test('a random source returning 1 or NaN does not break selection: the draw counts as 0.5', async () => {
    for (const r of [1, Number.NaN, -0.5]) {
      const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], classify: () => 'transient', strategy: 'random', clock: new FakeClock(), random: () => r });
      expect(await pool.execute(async (c) => c)).toBe('b');
    }
  });
});
