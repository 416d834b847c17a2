/**
 * The feature table (src/features.ts): a `PoolCore` built without a feature refuses the
 * options and methods that need it, naming the feature, and works for everything else;
 * `Pool` has every feature.
 */
import { describe, expect, test } from 'vitest';
import { PoolCore } from '../src/pool-core.js';
import { feature, type Features } from '../src/features.js';
import { ALL_FEATURES, authRefresh, hedging } from '../src/features-all.js';
import { Pool, isPoolError, type PoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/fake-clock.js';
import { reusesSignals } from '../src/base/signals.js';

const endpoints = [{ name: 'a', conn: 1 }, { name: 'b', conn: 2 }];
/** Every slot, to hand single features to a PoolCore. */
const ALL = ALL_FEATURES as unknown as Features;
const classify = () => 'transient' as const;

function refusal(fn: () => unknown): { code: string; message: string; field: unknown } | undefined {
  try {
    fn();
  } catch (error) {
    if (!isPoolError(error)) throw error;
    return { code: error.code, message: error.message, field: (error as { field?: unknown }).field };
  }
  return undefined;
}

describe('a pool built without optional features', () => {
  test('serves calls with its default options', async () => {
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, []);
    await expect(pool.execute(async (conn) => conn * 10)).resolves.toBe(10);
    await pool.close();
  });

  test('refuses retryBudget, naming the missing feature', () => {
    const r = refusal(() => new PoolCore({ endpoints, classify, retryBudget: { ratio: 0.1 } }, []));
    expect(r?.code).toBe('INVALID_OPTIONS');
    expect(r?.field).toBe('retryBudget');
    expect(r?.message).toMatch(/retryBudget needs the budget feature/);
  });

  test('rejects probeHealth, naming the missing feature', async () => {
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, []);
    await expect(pool.probeHealth(async () => true)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/probe feature/) });
    await pool.close();
  });

  test.each([
    ['strategy', { strategy: 'latency' as const }, /strategy needs the latency feature/],
    ['latency', { latency: { decayMs: 5_000 } }, /latency needs the latency feature/],
    ['strategy', { strategy: 'health' as const }, /^strategy needs the health feature.*add healthSelection to its features/],
    ['health', { health: { windowMs: 60_000 } }, /^health needs the health feature/],
    ['strategy', { strategy: 'random' as const }, /^strategy needs the random feature.*add randomSelection to its features/],
    ['maxEjectedPercent', { maxEjectedPercent: 50 }, /^maxEjectedPercent needs the panic feature.*add panicMode to its features/],
  ])('refuses %s (%j) without the feature it needs, naming it', (field, extra, message) => {
    const r = refusal(() => new PoolCore({ endpoints, classify, ...extra }, []));
    expect(r).toMatchObject({ code: 'INVALID_OPTIONS', field });
    expect(r?.message).toMatch(message);
  });

  test('with the latency feature, strategy latency moves to the faster endpoint', async () => {
    const clock = new FakeClock();
    // Every selection draws a, then b: the cheaper estimate decides (a tie goes to a).
    let draw = 0;
    const random = () => (draw++ % 2 === 0 ? 0 : 0.9);
    const pool = new PoolCore({ endpoints, classify, clock, random, strategy: 'latency', latency: { coldStartMs: 10 } }, [feature({ latency: ALL.latency! })]);
    const used: number[] = [];
    for (let i = 0; i < 3; i++) {
      // a (conn 1) answers after 50 ms, b at once.
      const p = pool.execute((conn) => new Promise<number>((resolve) => clock.setTimeout(() => resolve(conn), conn === 1 ? 50 : 0)));
      await clock.advance(50);
      used.push(await p);
    }
    expect(used).toEqual([1, 2, 2]);
    await pool.close();
  });

  test('with the health feature, strategy health sends the next call to the endpoint that did not fail', async () => {
    const clock = new FakeClock();
    const pool = new PoolCore({ endpoints, classify, clock, strategy: 'health', health: { windowMs: 60_000 } }, [feature({ health: ALL.health! })]);
    const first: number[] = [];
    let n = 0;
    // The first attempt (on a) fails; every other succeeds.
    const run = () => pool.execute(async (conn) => (n++ === 0 ? Promise.reject(new Error('down')) : conn));
    const call = run();
    await clock.advance(1_000);
    first.push(await call);
    first.push(await run());
    // a failed in the window: b ranks first (ordered would go back to a).
    expect(first).toEqual([2, 2]);
    await pool.close();
  });

  test('with the random feature, strategy random starts where the random source points', async () => {
    const draws = [0.9, 0, 0.6];
    let i = 0;
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock(), strategy: 'random', random: () => draws[i++ % draws.length]! }, [feature({ random: ALL.random! })]);
    const used: number[] = [];
    // One draw per selection for the high tier (the low tier is empty: no draw).
    for (let k = 0; k < 3; k++) used.push(await pool.execute(async (conn) => conn));
    expect(used).toEqual([2, 1, 2]);
    await pool.close();
  });

  test('with the panic feature, a tier whose endpoints are all ejected still serves, and says it panics', async () => {
    const events: unknown[] = [];
    const options = { endpoints, classify, clock: new FakeClock(), maxAttempts: 2, breaker: { threshold: 1, cooldownMs: 60_000 }, maxEjectedPercent: 50, onEvent: (e: { type: string }) => e.type === 'panic' && events.push(e) };
    const pool = new PoolCore(options, [feature({ panic: ALL.panic! })]);
    // Both endpoints fail once: both breakers open.
    await expect(pool.execute(async () => Promise.reject(new Error('down')))).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    // With both out (more than 50 %), the tier panics: the breakers are ignored.
    await expect(pool.execute(async (conn) => conn)).resolves.toBeTypeOf('number');
    expect(events).toEqual([{ type: 'panic', priority: 'high', active: true }]);
    await pool.close();
  });

  test.each([
    ['breaker.mode', { mode: 'failure-rate' as const }],
    ['breaker.failureRate', { failureRate: 0.5 }],
    ['breaker.windowMs', { windowMs: 10_000 }],
    ['breaker.minThroughput', { minThroughput: 4 }],
  ])('refuses %s without the failureRate feature, naming it; consecutive mode is fine', (field, breaker) => {
    const r = refusal(() => new PoolCore({ endpoints, classify, breaker }, []));
    expect(r).toEqual({ code: 'INVALID_OPTIONS', field, message: expect.stringMatching(new RegExp(`^${field} needs the failureRate feature.*add failureRates to its features`)) });
    expect(refusal(() => new PoolCore({ endpoints, classify, breaker: { mode: 'consecutive', threshold: 2 } }, []))).toBeUndefined();
  });

  test('with the failureRate feature, a breaker in failure-rate mode opens on the share of failures', async () => {
    const clock = new FakeClock();
    const breaker = { mode: 'failure-rate' as const, failureRate: 0.5, minThroughput: 4, windowMs: 10_000, threshold: 1 };
    const pool = new PoolCore({ endpoints: [{ name: 'a', conn: 1 }], classify, clock, maxAttempts: 1, breaker }, [feature({ failureRate: ALL.failureRate! })]);
    const fail = () => pool.execute(async () => Promise.reject(new Error('down')));
    // Threshold 1 is not the rule in this mode: one success and two failures (3 < 4 attempts) keep it closed.
    await pool.execute(async (conn) => conn);
    await expect(fail()).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    await expect(fail()).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    expect(pool.breakerState('a')).toBe('closed');
    // The fourth attempt fails: 3 of 4 failed, at least half.
    await expect(fail()).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    await pool.close();
  });

  test('refuses the pool hedge without the hedge feature, naming it', () => {
    const r = refusal(() => new PoolCore({ endpoints, classify, hedge: { afterMs: 50 } }, []));
    expect(r).toMatchObject({ code: 'INVALID_OPTIONS', field: 'hedge' });
    expect(r?.message).toMatch(/hedge needs the hedge feature/);
  });

  test.each([true, { afterMs: 5 }])('rejects a call hedge %j without the hedge feature; hedge: false is fine', async (hedge) => {
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, []);
    await expect(pool.execute(async (conn) => conn, { idempotent: true, hedge })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/hedge needs the hedge feature/) });
    await expect(pool.execute(async (conn) => conn, { idempotent: true, hedge: false })).resolves.toBe(1);
    await pool.close();
  });

  test('a hedge percentile needs the latency feature as well', async () => {
    const r = refusal(() => new PoolCore({ endpoints, classify, hedge: { percentile: 0.9 } }, [feature({ hedge: ALL.hedge! })]));
    expect(r).toMatchObject({ code: 'INVALID_OPTIONS', field: 'hedge.percentile' });
    expect(r?.message).toMatch(/hedge\.percentile needs the latency feature/);
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, [feature({ hedge: ALL.hedge! })]);
    await expect(pool.execute(async (conn) => conn, { idempotent: true, hedge: { percentile: 0.5 } })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/latency feature/) });
    await pool.close();
  });

  test('with the hedge feature alone, a slow first attempt is hedged after the fixed delay', async () => {
    const clock = new FakeClock();
    const pool = new PoolCore({ endpoints, classify, clock, strategy: 'ordered', hedge: { afterMs: 20 } }, [feature({ hedge: ALL.hedge! })]);
    // a (conn 1) answers after 500 ms, b at once.
    const p = pool.execute((conn) => new Promise<number>((resolve) => clock.setTimeout(() => resolve(conn), conn === 1 ? 500 : 0)), { idempotent: true });
    let value: number | undefined;
    void p.then((v) => (value = v));
    await clock.advance(20);
    expect(value).toBe(2);
    await pool.close();
  });

  test.each(['refreshAuth', 'refreshTimeoutMs'] as const)('refuses %s, naming the auth feature', (option) => {
    const value = option === 'refreshAuth' ? async () => undefined : 1000;
    const r = refusal(() => new PoolCore({ endpoints, classify, [option]: value }, []));
    expect(r).toEqual({ code: 'INVALID_OPTIONS', field: option, message: expect.stringMatching(new RegExp(`^${option} needs the auth feature`)) });
  });

  test('fails an unauthorized answer with UNAUTHORIZED at once, as a pool with no refreshAuth does', async () => {
    const conns: number[] = [];
    const op = async (conn: number) => {
      conns.push(conn);
      throw new Error('401');
    };
    const core = new PoolCore({ endpoints, classify: () => 'unauthorized' as const, clock: new FakeClock() }, []);
    const full = new Pool({ endpoints, classify: () => 'unauthorized' as const, clock: new FakeClock() });
    for (const pool of [core, full]) {
      await expect(pool.execute(op)).rejects.toMatchObject({ code: 'UNAUTHORIZED', attempts: 1, endpoint: 'a', message: 'endpoint "a" answered unauthorized' });
      await pool.close();
    }
    expect(conns).toEqual([1, 1]);
  });

  test('with the auth feature handed in, refreshAuth refreshes and replays', async () => {
    let token = 0;
    const pool = new PoolCore(
      { endpoints, classify: () => 'unauthorized' as const, clock: new FakeClock(), refreshAuth: async () => void token++ },
      [feature({ auth: (ALL_FEATURES as unknown as Features).auth! })],
    );
    await expect(pool.execute(async (conn) => (token > 0 ? conn : Promise.reject(new Error('401'))))).resolves.toBe(1);
    expect(token).toBe(1);
    await pool.close();
  });

  test('refuses sharedQuota, naming the store feature', () => {
    const store = { acquire: () => Promise.resolve(0) };
    const r = refusal(() => new PoolCore({ endpoints, classify, sharedQuota: { store } }, []));
    expect(r).toEqual({ code: 'INVALID_OPTIONS', field: 'sharedQuota', message: expect.stringMatching(/^sharedQuota needs the store feature/) });
  });

  test('refuses sharedQuota without the limits feature (the store counts rate limits)', () => {
    const store = { acquire: () => Promise.resolve(0) };
    const r = refusal(() => new PoolCore({ endpoints, classify, sharedQuota: { store } }, [feature({ store: (ALL_FEATURES as unknown as Features).store! })]));
    expect(r).toEqual({ code: 'INVALID_OPTIONS', field: 'sharedQuota', message: expect.stringMatching(/^sharedQuota needs the limits feature/) });
  });

  test('with the store feature handed in, sharedQuota asks the store, subscribes to it and unsubscribes on close', async () => {
    const asked: string[] = [];
    let listening = 0;
    const store = {
      acquire: (limit: { key: string }) => {
        asked.push(limit.key);
        return Promise.resolve(0);
      },
      subscribe: () => {
        listening++;
        return () => void listening--;
      },
    };
    const limited = endpoints.map((e) => ({ ...e, rateLimit: { perSecond: 10 } }));
    const pool = new PoolCore({ endpoints: limited, classify, clock: new FakeClock(), sharedQuota: { store } }, [feature({ store: (ALL_FEATURES as unknown as Features).store!, limits: (ALL_FEATURES as unknown as Features).limits! })]);
    expect(listening).toBe(1);
    await expect(pool.execute(async (conn) => conn)).resolves.toBe(1);
    expect(asked).toEqual(['endpoint:a']);
    await pool.close();
    expect(listening).toBe(0);
  });

  test('with a feature handed in, its option works', async () => {
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock(), retryBudget: { ratio: 0.1 } }, [feature({ budget: (ALL_FEATURES as unknown as Features).budget! })]);
    await expect(pool.execute(async (conn) => conn)).resolves.toBe(1);
    await expect(pool.probeHealth(async () => true)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await pool.close();
  });

  test('refuses a features value that is not an array', () => {
    expect(refusal(() => new PoolCore({ endpoints, classify }, {} as never))).toMatchObject({ code: 'INVALID_OPTIONS', field: 'features' });
  });
});

/**
 * A hedged call's `unauthorized` answer while its other attempt runs (call.ts hands it to
 * `Hedging.reauthBeside`). Without the auth feature there is no refresh: the endpoint is
 * done for the call, the other attempt goes on, and the last running attempt's
 * `unauthorized` ends the call with UNAUTHORIZED, as in a pool with no `refreshAuth`.
 */
describe('a hedged call answered unauthorized', () => {
  /** Per connection (a: 1, b: 2), when it answers and how. */
  type Script = Record<number, { readonly atMs: number; readonly answer: 'ok' | 'unauthorized' }>;
  const unauthorized = (e: unknown) => ((e as Error).message === '401' ? ('unauthorized' as const) : ('transient' as const));
  const hedge = { afterMs: 20 };

  async function run(make: (clock: FakeClock) => PoolCore<number>, script: Script, refreshed?: () => boolean) {
    const clock = new FakeClock();
    const pool = make(clock);
    const sent: string[] = [];
    const op = (conn: number) => {
      sent.push(`${conn}@${clock.now() - start}`);
      const { atMs, answer } = script[conn]!;
      return new Promise<number>((resolve, reject) => clock.setTimeout(() => (answer === 'ok' || refreshed?.() === true ? resolve(conn) : reject(new Error('401'))), atMs));
    };
    const start = clock.now();
    const outcome = pool.execute(op, { idempotent: true }).then(
      (value) => ({ value, at: clock.now() - start }),
      (e: PoolError) => ({ code: e.code, endpoint: e.endpoint, attempts: e.attempts, at: clock.now() - start }),
    );
    await clock.advance(1000);
    const result = await outcome;
    await pool.close();
    return { result, sent };
  }

  const core = (clock: FakeClock) => new PoolCore({ endpoints, classify: unauthorized, clock, strategy: 'ordered', hedge }, [hedging]);
  const full = (clock: FakeClock) => new Pool({ endpoints, classify: unauthorized, clock, strategy: 'ordered', hedge });

  test.each([
    ['the hedge answers unauthorized while the primary runs: the primary\'s answer wins', { 1: { atMs: 500, answer: 'ok' }, 2: { atMs: 10, answer: 'unauthorized' } }, { value: 1, at: 500 }],
    ['the primary answers unauthorized while the hedge runs: the hedge\'s answer wins', { 1: { atMs: 40, answer: 'unauthorized' }, 2: { atMs: 80, answer: 'ok' } }, { value: 2, at: 100 }],
    ['both answer unauthorized: the last ends the call with UNAUTHORIZED', { 1: { atMs: 40, answer: 'unauthorized' }, 2: { atMs: 60, answer: 'unauthorized' } }, { code: 'UNAUTHORIZED', endpoint: 'b', attempts: 2, at: 80 }],
  ] as const)('without the auth feature: %s, as in a pool with no refreshAuth', async (_name, script, expected) => {
    for (const make of [core, full]) {
      const { result, sent } = await run(make, script);
      expect(result).toEqual(expected);
      // No replay anywhere: one request per endpoint.
      expect(sent).toEqual(['1@0', '2@20']);
    }
  });

  test('without the auth feature, the endpoint that answered unauthorized beside the primary is not retried in that call', async () => {
    const three = [...endpoints, { name: 'c', conn: 3 }];
    const script: Script = { 1: { atMs: 100, answer: 'unauthorized' }, 2: { atMs: 10, answer: 'unauthorized' }, 3: { atMs: 10, answer: 'ok' } };
    // The primary's failure (a 503) is transient this time: the call retries, on c rather than on b.
    const fail = (clock: FakeClock) => (conn: number) => new Promise<number>((resolve, reject) => clock.setTimeout(() => (conn === 1 ? reject(new Error('503')) : script[conn]!.answer === 'ok' ? resolve(conn) : reject(new Error('401'))), script[conn]!.atMs));
    for (const make of [
      (clock: FakeClock) => new PoolCore({ endpoints: three, classify: unauthorized, clock, strategy: 'ordered', hedge, random: () => 0 }, [hedging]),
      (clock: FakeClock) => new Pool({ endpoints: three, classify: unauthorized, clock, strategy: 'ordered', hedge, random: () => 0 }),
    ]) {
      const clock = new FakeClock();
      const pool = make(clock);
      const conns: number[] = [];
      const op = fail(clock);
      const outcome = pool.execute((conn) => (conns.push(conn), op(conn)), { idempotent: true }).catch((e: unknown) => e);
      await clock.advance(1000);
      expect(await outcome).toBe(3);
      expect(conns).toEqual([1, 2, 3]);
      await pool.close();
    }
  });

  test('with both features, the hedge\'s endpoint is refreshed and replayed beside the primary', async () => {
    let token = 0;
    const refreshAuth = () => new Promise<void>((resolve) => clockOf.setTimeout(() => (token++, resolve()), 30));
    let clockOf!: FakeClock;
    const make = (clock: FakeClock) => ((clockOf = clock), new PoolCore({ endpoints, classify: unauthorized, clock, strategy: 'ordered', hedge, refreshAuth }, [hedging, authRefresh]));
    // a hangs (answers at 500), b answers unauthorized at 30 (10 ms after its hedge), then, refreshed, after 10 ms.
    const { result, sent } = await run(make, { 1: { atMs: 500, answer: 'ok' }, 2: { atMs: 10, answer: 'unauthorized' } }, () => token > 0);
    expect(token).toBe(1);
    expect(sent).toEqual(['1@0', '2@20', '2@60']);
    expect(result).toEqual({ value: 2, at: 70 });
  });
});

describe('a pool built without the limits feature', () => {
  test.each([
    ['endpoints[1].rateLimit', { endpoints: [{ name: 'a', conn: 1 }, { name: 'b', conn: 2, rateLimit: { perSecond: 5 } }] }],
    ['groups', { endpoints, groups: [['a', 'b']] }],
    ['dailyResetUtcHour', { endpoints, dailyResetUtcHour: 7 }],
    ['ceilingRecovery', { endpoints, ceilingRecovery: { quietMs: 1000 } }],
  ])('refuses %s, naming the feature', (field, options) => {
    const r = refusal(() => new PoolCore({ classify, ...options }, []));
    expect(r).toMatchObject({ code: 'INVALID_OPTIONS', field });
    expect(r?.message).toContain(`${field} needs the limits feature`);
  });

  test('refuses a rateLimit in setEndpoints, and keeps the endpoints it had', async () => {
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, []);
    expect(refusal(() => pool.setEndpoints([{ name: 'c', conn: 3, rateLimit: { perDay: 100 } }]))).toMatchObject({ code: 'INVALID_OPTIONS', field: 'endpoints[0].rateLimit' });
    expect(pool.stats().map((e) => e.name)).toEqual(['a', 'b']);
    await pool.close();
  });

  test('a rate-limited answer with a ceiling cools the endpoint down as a bare one does (doubling), with no learned ceiling', async () => {
    const clock = new FakeClock();
    const events: string[] = [];
    const pool = new PoolCore(
      { endpoints: [{ name: 'a', conn: 1 }], clock, rateLimitCooldownMs: 800, classify: () => ({ class: 'rate-limited', ceilingPerSecond: 2 }), onEvent: (e) => events.push(e.type), maxAttempts: 1 },
      [],
    );
    const limited = () => pool.execute(async () => Promise.reject(new Error('429 (2/sec)')));
    await expect(limited()).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    // With the feature: one interval of 2/s (500 ms), the ceiling 2, and no doubling.
    expect(pool.stats()[0]).toMatchObject({ status: 'cooling', cooldownRemainingMs: 800, ceilingPerSecond: undefined });
    await clock.advance(800);
    await expect(limited()).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    expect(pool.stats()[0]).toMatchObject({ status: 'cooling', cooldownRemainingMs: 1600, ceilingPerSecond: undefined });
    expect(events).not.toContain('endpoint-recalibrated');
    await pool.close();
  });

  test('a spent daily quota cools the endpoint down instead of parking it, and the call moves on', async () => {
    const clock = new FakeClock();
    const events: string[] = [];
    const pool = new PoolCore({ endpoints, clock, classify: () => ({ class: 'permanent', dailyQuotaExhausted: true }), onEvent: (e) => events.push(e.type) }, []);
    await expect(pool.execute(async (conn) => (conn === 1 ? Promise.reject(new Error('day spent')) : 'b'))).resolves.toBe('b');
    const a = pool.stats().find((e) => e.name === 'a')!;
    expect(a).toMatchObject({ status: 'cooling', cooldownRemainingMs: 1000, parkedUntilMs: undefined });
    expect(events).not.toContain('endpoint-parked');
    await pool.close();
  });

  test('a call waiting for a cooling endpoint sleeps through the cooldown, then goes', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const pool = new PoolCore({ endpoints: [{ name: 'a', conn: 1 }], clock, classify: () => ({ class: 'rate-limited', retryAfterMs: 300 }), random: () => 0 }, []);
    const call = pool.execute(async () => (++calls === 1 ? Promise.reject(new Error('429')) : 'ok'));
    await clock.advance(299);
    expect(calls).toBe(1);
    await clock.advance(1);
    await expect(call).resolves.toBe('ok');
    expect(calls).toBe(2);
    await pool.close();
  });

  test('with the limits feature handed in, a rateLimit paces calls', async () => {
    const clock = new FakeClock();
    const pool = new PoolCore({ endpoints: [{ name: 'a', conn: 1, rateLimit: { perSecond: 1, burst: 1 } }], classify, clock }, [feature({ limits: (ALL_FEATURES as unknown as Features).limits! })]);
    const started: number[] = [];
    const calls = [1, 2].map(() => pool.execute(async () => started.push(clock.now())));
    await clock.advance(1000);
    await Promise.all(calls);
    expect(started).toEqual([0, 1000]);
    await pool.close();
  });
});

describe('a pool built without the signals feature', () => {
  test('gives each attempt that reads ctx.signal a new controller, which still aborts on a timeout', async () => {
    const clock = new FakeClock();
    const pool = new PoolCore({ endpoints, classify, clock, attemptTimeoutMs: 100, maxAttempts: 1 }, []);
    const seen: AbortSignal[] = [];
    for (let i = 0; i < 3; i++) await pool.execute(async (_c, ctx) => void seen.push(ctx.signal));
    expect(new Set(seen).size).toBe(3);
    let cut: AbortSignal | undefined;
    const slow = pool.execute((_c, ctx) => ((cut = ctx.signal), new Promise(() => undefined)));
    await clock.advance(100);
    await expect(slow).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    expect(cut?.aborted).toBe(true);
    await pool.close();
  });

  test.skipIf(!reusesSignals())('with the signals feature handed in, a signal nobody listens to serves the next attempt', async () => {
    const { reusableSignals } = await import('../src/index.js');
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, [reusableSignals]);
    const seen: AbortSignal[] = [];
    for (let i = 0; i < 2; i++) await pool.execute(async (_c, ctx) => void seen.push(ctx.signal));
    expect(seen[1]).toBe(seen[0]);
    await pool.close();
  });
});

describe('a pool built without the concurrency feature', () => {
  test.each([
    ['maxConcurrentCalls', { maxConcurrentCalls: 1 }],
    ['permitScope', { permitScope: 'attempt' as const }],
  ])('refuses %s, naming the feature', (field, extra) => {
    const r = refusal(() => new PoolCore({ endpoints, classify, ...extra }, []));
    expect(r).toMatchObject({ code: 'INVALID_OPTIONS', field });
    expect(r?.message).toContain(`${field} needs the concurrency feature, which this pool was built without (add concurrencyLimits to its features`);
  });

  /** Five calls that each hold on until released one by one; `peak`: the most running at once. */
  async function fiveHeldCalls(pool: PoolCore<number>): Promise<{ pending: number; peak: number }> {
    let running = 0;
    let peak = 0;
    const release: (() => void)[] = [];
    const calls = Array.from({ length: 5 }, () =>
      pool.execute(async (conn) => {
        peak = Math.max(peak, ++running);
        await new Promise<void>((r) => release.push(r));
        running--;
        return conn;
      }),
    );
    await Promise.resolve();
    const pending = pool.pendingCalls;
    for (let i = 0; i < 20 && release.length > 0; i++) {
      release.shift()!();
      for (let k = 0; k < 10; k++) await Promise.resolve();
    }
    await Promise.all(calls);
    expect(pool.pendingCalls).toBe(0);
    await pool.close();
    return { pending, peak };
  }

  test('does not limit calls pool-wide: every call starts at once and none waits for a permit', async () => {
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, []);
    expect(await fiveHeldCalls(pool)).toEqual({ pending: 0, peak: 5 });
  });

  test('with the feature handed in, maxConcurrentCalls queues the calls beyond it', async () => {
    const { concurrencyLimits } = await import('../src/index.js');
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock(), maxConcurrentCalls: 2 }, [concurrencyLimits]);
    expect(await fiveHeldCalls(pool)).toEqual({ pending: 3, peak: 2 });
  });
});

describe('a pool built without the routing feature', () => {
  test.each([
    ['pin', { pin: 'b' }],
    ['exclude', { exclude: ['a'] }],
  ])("refuses a call's %s, naming the feature", async (field, options) => {
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, []);
    await expect(pool.execute(async (conn) => conn, options)).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      field,
      message: `${field} needs the routing feature, which this pool was built without (add callRouting to its features, or use Pool, which has them all)`,
    });
    await pool.close();
  });

  test('with the feature handed in, pin and exclude route the call, and an unknown pin is PIN_UNAVAILABLE', async () => {
    const { callRouting } = await import('../src/index.js');
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, [callRouting]);
    await expect(pool.execute(async (conn) => conn, { pin: 'b' })).resolves.toBe(2);
    await expect(pool.execute(async (conn) => conn, { exclude: ['a'] })).resolves.toBe(2);
    await expect(pool.execute(async (conn) => conn, { pin: 'z' })).rejects.toMatchObject({ code: 'PIN_UNAVAILABLE', message: 'pinned endpoint "z" is not in the pool' });
    await expect(pool.execute(async (conn) => conn, { exclude: ['z'] })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'exclude[0]' });
    await pool.close();
  });
});

describe('the exported feature values', () => {
  test('each brings its slot: a PoolCore with rateLimits and retryBudgets takes their options, and names the value it lacks', async () => {
    const { rateLimits, retryBudgets } = await import('../src/index.js');
    const pool = new PoolCore({ endpoints: [{ name: 'a', conn: 1, rateLimit: { perSecond: 5 } }], classify, clock: new FakeClock(), retryBudget: { ratio: 0.1 } }, [rateLimits, retryBudgets]);
    await expect(pool.execute(async (conn) => conn)).resolves.toBe(1);
    await pool.close();
    const r = refusal(() => new PoolCore({ endpoints, classify, hedge: { afterMs: 10 } }, [rateLimits]));
    expect(r?.message).toMatch(/hedge needs the hedge feature.*add hedging to its features/);
  });
});

describe('Pool', () => {
  test('has every feature of the table', async () => {
    const pool = new Pool({ endpoints, classify, clock: new FakeClock(), retryBudget: { ratio: 0.1 } });
    const probes = await pool.probeHealth(async () => true);
    expect(probes.map((p) => [p.endpoint, p.ok])).toEqual([['a', true], ['b', true]]);
    await pool.close();
  });

  test('is still named Pool and is a PoolCore', () => {
    const pool = new Pool({ endpoints, classify });
    expect(pool.constructor.name).toBe('Pool');
    expect(pool).toBeInstanceOf(PoolCore);
    void pool.close();
  });
});
