/**
 * Issue 15, "Hangs and unbounded work" and "Defaults that break the promise": each test
 * failed before the fix.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, presets } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { fail, harness, hang, ok, start } from '../support.js';

const code = (e: unknown): unknown => (isPoolError(e) ? e.code : e);

describe("breakerMode: 'wait' never parks with nothing to wait for", () => {
  test('every endpoint answered unsupported: NO_ENDPOINT at once', async () => {
    const h = harness(['a', 'b'], { breakerMode: 'wait' });
    h.eps['a']!.fallback = fail('unsupported');
    h.eps['b']!.fallback = fail('unsupported');
    const c = start(h.pool.execute(h.op));
    await h.clock.flush();
    expect(c.settled).toBe(true);
    expect(code(c.error)).toBe('NO_ENDPOINT');
    expect(h.clock.pendingForegroundTimers).toBe(0);
    expect(h.pool.activeCalls).toBe(0);
  });

  test('presets.essential with every endpoint excluded: NO_ENDPOINT at once', async () => {
    const h = harness(['a', 'b']);
    const c = start(h.pool.execute(h.op, { ...presets.essential, exclude: ['a', 'b'] }));
    await h.clock.flush();
    expect(code(c.error)).toBe('NO_ENDPOINT');
  });

  test('a breaker that will half-open is still waited for', async () => {
    const h = harness(['a'], { breakerMode: 'wait', breaker: { threshold: 1, cooldownMs: 1_000 } });
    h.eps['a']!.then(fail('transient'));
    const first = start(h.pool.execute(h.op, { retry: 'none' }));
    await h.clock.flush();
    expect(code(first.error)).toBe('RETRIES_EXHAUSTED');
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(999);
    expect(c.settled).toBe(false);
    await h.clock.advance(1);
    expect(c.value).toBe('a');
  });
});

describe('a hostile random source goes through the one guard', () => {
  const sources: [string, () => number][] = [
    ['NaN', () => Number.NaN],
    ['throws', () => {
      throw new Error('no entropy');
    }],
    ['Infinity', () => Number.POSITIVE_INFINITY],
  ];
  test.each(sources)("strategy 'latency', breaker jitter and backoff with a random that answers %s", async (_name, random) => {
    const h = harness(['a', 'b'], { strategy: 'latency', random, breaker: { threshold: 1, cooldownMs: 1_000, jitter: 0.2 }, backoff: { initialMs: 100, maxMs: 1_000, jitter: 'full' } });
    h.eps['a']!.then(fail('transient'), fail('transient'));
    h.eps['b']!.then(fail('transient'));
    const results = [start(h.pool.execute(h.op)), start(h.pool.execute(h.op)), start(h.pool.execute(h.op, { retry: 'until-deadline' }))];
    await h.clock.advance(60_000);
    for (const r of results) {
      expect(r.settled).toBe(true);
      if (r.error !== undefined) expect(isPoolError(r.error)).toBe(true);
    }
    expect(h.pool.activeCalls).toBe(0);
    const closed = start(h.pool.close());
    await h.clock.flush();
    expect(closed.settled).toBe(true);
  });

  test("strategy 'random' with a throwing random still serves", async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], classify: () => 'transient', strategy: 'random', clock, random: () => { throw new Error('x'); } });
    expect(['a', 'b']).toContain(await pool.execute(async (c) => c));
  });
});

describe('setEndpoints validates everything, then applies', () => {
  test('an invalid second entry leaves the first unchanged', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1 } }, 'b']);
    const before = h.pool.stats()[0]!.ceilingPerSecond;
    const a = h.eps['a']!;
    expect(() => h.pool.setEndpoints([{ name: 'a', conn: a, rateLimit: { perSecond: 1_000 } }, { name: 'b', conn: h.eps['b']!, weight: -1 }])).toThrow(/endpoints\[1\]\.weight/);
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(before);
    expect(before).toBe(1);
  });

  test('a group whose limits disagree changes no quota', () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1 } }, { name: 'b', rateLimit: { perSecond: 1 } }, { name: 'c', rateLimit: { perSecond: 5 } }]);
    const e = h.eps;
    expect(() =>
      h.pool.setEndpoints(
        [
          { name: 'a', conn: e['a']!, rateLimit: { perSecond: 1 } },
          { name: 'b', conn: e['b']!, rateLimit: { perSecond: 1 } },
          { name: 'c', conn: e['c']!, rateLimit: { perSecond: 5 } },
        ],
        [['a', 'b'], ['a', 'c']],
      ),
    ).toThrow();
    expect(() =>
      h.pool.setEndpoints(
        [
          { name: 'a', conn: e['a']!, rateLimit: { perSecond: 2 } },
          { name: 'b', conn: e['b']!, rateLimit: { perSecond: 1 } },
          { name: 'c', conn: e['c']!, rateLimit: { perSecond: 5 } },
        ],
        [['b', 'c']],
      ),
    ).toThrow(/groups\[0\]/);
    expect(h.pool.stats().map((s) => s.ceilingPerSecond)).toEqual([1, 1, 5]);
  });
});

describe('defaults keep the promise', () => {
  test('with a, b, c down and d healthy, a call with default options reaches d', async () => {
    const h = harness(['a', 'b', 'c', 'd']);
    for (const n of ['a', 'b', 'c']) h.eps[n]!.fallback = fail('transient');
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(1_000);
    expect(c.value).toBe('d');
  });

  test('an explicit maxAttempts is the exact cap', async () => {
    const h = harness(['a', 'b', 'c', 'd'], { maxAttempts: 3 });
    for (const n of ['a', 'b', 'c']) h.eps[n]!.fallback = fail('transient');
    const c = start(h.pool.execute(h.op));
    await h.clock.advance(1_000);
    expect(code(c.error)).toBe('RETRIES_EXHAUSTED');
  });

  test('with every breaker open, a new call’s NO_ENDPOINT carries the last transport error', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 10_000 } });
    h.eps['a']!.fallback = fail('transient');
    h.eps['b']!.fallback = fail('transient');
    const first = start(h.pool.execute(h.op));
    await h.clock.advance(100);
    expect(code(first.error)).toBe('NO_ENDPOINT');
    const c = start(h.pool.execute(h.op));
    await h.clock.flush();
    expect(code(c.error)).toBe('NO_ENDPOINT');
    expect((c.error as Error).cause).toBeInstanceOf(Error);
    expect(((c.error as Error).cause as Error).message).toBe('scripted failure');
  });
});

describe("permitScope: 'attempt'", () => {
  test("a call sleeping in a backoff holds no permit under 'attempt', holds it under 'call'", async () => {
    for (const permitScope of ['attempt', 'call'] as const) {
      const h = harness(['a'], { maxConcurrentCalls: 1, permitScope, backoff: { initialMs: 5_000, maxMs: 5_000, jitter: 'none' } });
      h.eps['a']!.then(fail('transient'));
      const sleeper = start(h.pool.execute(h.op));
      await h.clock.advance(1);
      const other = start(h.pool.execute(h.op, { deadlineMs: 1_000 }));
      await h.clock.advance(10);
      if (permitScope === 'attempt') expect(other.value).toBe('a');
      else expect(other.settled).toBe(false);
      await h.clock.advance(10_000);
      expect(sleeper.value).toBe('a');
      expect(h.pool.activeCalls).toBe(0);
    }
  });

  test("'attempt' never exceeds the permits in flight", async () => {
    const h = harness(['a', 'b'], { maxConcurrentCalls: 2, permitScope: 'attempt' });
    let open = 0;
    let peak = 0;
    const op = (ep: Parameters<typeof h.op>[0], ctx: Parameters<typeof h.op>[1]) => {
      open++;
      peak = Math.max(peak, open);
      return h.op(ep, ctx).finally(() => open--);
    };
    h.eps['a']!.fallback = ok(undefined, 10);
    h.eps['b']!.fallback = ok(undefined, 10);
    const calls = Array.from({ length: 20 }, () => start(h.pool.execute(op)));
    await h.clock.advance(1_000);
    expect(calls.every((c) => c.settled && c.error === undefined)).toBe(true);
    expect(peak).toBe(2);
  });
});

describe('a shared AbortSignal', () => {
  test('gets one listener, whatever the number of calls; aborting reaches each', async () => {
    const h = harness(['a']);
    h.eps['a']!.fallback = hang();
    const ac = new AbortController();
    const calls = Array.from({ length: 1_000 }, () => start(h.pool.execute(h.op, { signal: ac.signal, deadlineMs: Number.POSITIVE_INFINITY, attemptTimeoutMs: Number.POSITIVE_INFINITY })));
    expect(getEventListeners(ac.signal, 'abort').length).toBe(1);
    ac.abort();
    await h.clock.flush();
    expect(calls.every((c) => code(c.error) === 'ABORTED')).toBe(true);
    expect(getEventListeners(ac.signal, 'abort').length).toBe(0);
  });

  test('the listener goes when the last call ends', async () => {
    const h = harness(['a']);
    const ac = new AbortController();
    await Promise.all([h.pool.execute(h.op, { signal: ac.signal }), h.pool.execute(h.op, { signal: ac.signal })]);
    expect(getEventListeners(ac.signal, 'abort').length).toBe(0);
  });
});
