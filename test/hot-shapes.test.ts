/**
 * Every object a call reads is reachable from its context (the call itself: its plan, the
 * pool's state, the endpoints, their breakers and limits, the resolved options, the feature
 * table). An object that falls into V8's dictionary mode (built by computed keys, or with
 * properties deleted or added in bulk) turns each read of it into a hash lookup: the resolved
 * options did, at +4-28 % CPU per call (fourteenth session; test/options-shape.test.ts). This
 * walks the whole graph from a context, for pools of every kind, and checks each object with
 * V8's own test; and that contexts of differently configured pools share one shape per kind (a call path
 * seeing several shapes of its call object goes polymorphic).
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, test } from 'vitest';
import { Pool, PoolCore, type AttemptContext, type PoolOptions } from '../src/index.js';

setFlagsFromString('--allow-natives-syntax');
const hasFastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

/** The objects reachable from `root` (own enumerable properties, Map and Set members), arrays and functions aside. */
function reachable(root: object): { slow: string[]; checked: number } {
  const seen = new Set<object>();
  const slow: string[] = [];
  let checked = 0;
  const visit = (label: string, o: unknown, depth: number): void => {
    if (o === null || typeof o !== 'object' || seen.has(o) || depth > 9) return;
    seen.add(o);
    if (o instanceof Map) {
      for (const [k, v] of o) visit(`${label}<${String(k)}>`, v, depth + 1);
      return;
    }
    if (o instanceof Set) {
      for (const v of o) visit(`${label}{}`, v, depth + 1);
      return;
    }
    if (ArrayBuffer.isView(o) || o instanceof Promise || o instanceof AbortSignal || o instanceof AbortController) return;
    if (Array.isArray(o)) {
      o.forEach((v, i) => visit(`${label}[${i}]`, v, depth + 1));
      return;
    }
    checked++;
    if (!hasFastProperties(o)) slow.push(`${label} (${(o as { constructor?: { name?: string } }).constructor?.name ?? 'object'})`);
    for (const [k, v] of Object.entries(o)) visit(`${label}.${k}`, v, depth + 1);
  };
  visit('ctx', root, 0);
  return { slow, checked };
}

const base = (extra: Partial<PoolOptions<number>> = {}): PoolOptions<number> => ({
  endpoints: [
    { name: 'a', conn: 1, rateLimit: { perSecond: 1000 } },
    { name: 'b', conn: 2, priority: 'low' },
  ],
  classify: (e) => ((e as Error).message === 'rate' ? 'rate-limited' : 'transient'),
  ...extra,
});

const every = {
  maxConcurrentCalls: 4,
  retryBudget: { ratio: 0.2 },
  hedge: { afterMs: 50 },
  strategy: 'latency',
  breaker: { threshold: 3, cooldownMs: 1000 },
  attemptTimeoutMs: 5000,
  deadlineMs: 10_000,
} as Partial<PoolOptions<number>>;

/** Runs a success, a call reading its signal and a call that fails once then succeeds; returns the last context. */
async function exercise(pool: { execute<T>(op: (c: number, ctx: AttemptContext) => Promise<T>, opts?: object): Promise<T> }): Promise<AttemptContext[]> {
  const contexts: AttemptContext[] = [];
  await pool.execute((_c, ctx) => (contexts.push(ctx), Promise.resolve(1)));
  await pool.execute((_c, ctx) => (contexts.push(ctx), ctx.signal, Promise.resolve(1)), { deadlineMs: 1000 });
  let n = 0;
  await pool.execute((_c, ctx) => (contexts.push(ctx), n++ === 0 ? Promise.reject(new Error('boom')) : Promise.resolve(1)));
  return contexts;
}

describe('objects a call reads keep fast properties', () => {
  test.each([
    ['Pool, defaults', () => new Pool(base())],
    ['Pool, every core option set', () => new Pool(base(every))],
    ['PoolCore, no feature', () => new PoolCore(base({ endpoints: [{ name: 'a', conn: 1 }, { name: 'b', conn: 2 }] }), [])],
  ])('%s', async (_name, make) => {
    const pool = make();
    const contexts = await exercise(pool);
    for (const ctx of contexts) {
      const { slow, checked } = reachable(ctx);
      // The walk reaches the state, endpoints, breakers, options and features (not only the context).
      expect(checked).toBeGreaterThan(25);
      expect(slow).toEqual([]);
    }
    await pool.close();
  });

  test('contexts of differently configured pools share one shape per kind', async () => {
    const contexts = [
      ...(await exercise(new Pool(base()))),
      ...(await exercise(new Pool(base(every)))),
      ...(await exercise(new PoolCore(base({ endpoints: [{ name: 'a', conn: 1 }] }), []))),
    ];
    expect(contexts.length).toBe(12);
    // A call's first attempt is the call itself; a retry is an attempt object of its own: two
    // classes by design. Each kind has one shape, whatever the pool's options or features.
    const firstOfKind = new Map<unknown, object>();
    for (const ctx of contexts) {
      const kind = ctx.constructor;
      if (!firstOfKind.has(kind)) firstOfKind.set(kind, ctx);
      expect(haveSameMap(ctx, firstOfKind.get(kind)!)).toBe(true);
    }
    expect(firstOfKind.size).toBe(2);
  });
});
