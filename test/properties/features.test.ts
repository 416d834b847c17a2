/**
 * Every subset of the optional features (a fixed sample of 256 once there are more): an
 * option is refused exactly when a feature it needs is missing, the refusal names a missing
 * one, and a pool with any subset serves calls through failures (a transient error, a
 * rate-limited answer with a ceiling hint and a spent day) at its defaults, on the fake clock.
 */
import { describe, expect, test } from 'vitest';
import { PoolCore, isPoolError, rateLimits, hedging, latencySelection, healthSelection, randomSelection, panicMode, failureRates, retryBudgets, authRefresh, sharedQuotas, healthProbes, reusableSignals, concurrencyLimits, callRouting, type Feature } from '../../src/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

const FEATURES: Record<string, Feature> = { rateLimits, hedging, latencySelection, healthSelection, randomSelection, panicMode, failureRates, retryBudgets, authRefresh, sharedQuotas, healthProbes, reusableSignals, concurrencyLimits, callRouting };
const NAMES = Object.keys(FEATURES);

const store = { acquire: () => Promise.resolve(0) };
/** Each option that needs features, with the values (by export name) it needs. */
const NEEDS: [string, Record<string, unknown>, string[]][] = [
  ['rateLimit', { endpoints: [{ name: 'a', conn: 1, rateLimit: { perSecond: 5 } }] }, ['rateLimits']],
  ['groups', { endpoints: [{ name: 'a', conn: 1 }, { name: 'b', conn: 2 }], groups: [['a', 'b']] }, ['rateLimits']],
  ['dailyResetUtcHour', { dailyResetUtcHour: 3 }, ['rateLimits']],
  ['ceilingRecovery', { ceilingRecovery: { quietMs: 1000 } }, ['rateLimits']],
  ['hedge', { hedge: { afterMs: 50 } }, ['hedging']],
  ['hedge.percentile', { hedge: { percentile: 0.9 } }, ['hedging', 'latencySelection']],
  ['strategy', { strategy: 'latency' }, ['latencySelection']],
  ['latency', { latency: { decayMs: 5000 } }, ['latencySelection']],
  ['strategy health', { strategy: 'health' }, ['healthSelection']],
  ['health', { health: { windowMs: 60_000 } }, ['healthSelection']],
  ['strategy random', { strategy: 'random' }, ['randomSelection']],
  ['maxEjectedPercent', { maxEjectedPercent: 50 }, ['panicMode']],
  ['breaker.mode', { breaker: { mode: 'failure-rate' } }, ['failureRates']],
  ['breaker.minThroughput', { breaker: { minThroughput: 4 } }, ['failureRates']],
  ['retryBudget', { retryBudget: { ratio: 0.1 } }, ['retryBudgets']],
  ['refreshAuth', { refreshAuth: async () => undefined }, ['authRefresh']],
  ['refreshTimeoutMs', { refreshTimeoutMs: 1000 }, ['authRefresh']],
  ['sharedQuota', { sharedQuota: { store } }, ['sharedQuotas', 'rateLimits']],
  ['maxConcurrentCalls', { maxConcurrentCalls: 2 }, ['concurrencyLimits']],
  ['permitScope', { permitScope: 'attempt' }, ['concurrencyLimits']],
];

/** At most this many subsets are tried: all of them while there are few features, else a fixed sample. */
const MAX_SUBSETS = 256;

/**
 * Every subset of the features, or (past MAX_SUBSETS) every subset with at most one feature
 * or at most one missing, and the rest drawn by a fixed-seed generator: the same subsets on
 * every run.
 */
function subsets(): string[][] {
  const n = NAMES.length;
  const masks = new Set<number>();
  if (2 ** n <= MAX_SUBSETS) {
    for (let m = 0; m < 2 ** n; m++) masks.add(m);
  } else {
    const all = 2 ** n - 1;
    masks.add(0).add(all);
    for (let i = 0; i < n; i++) masks.add(1 << i).add(all ^ (1 << i));
    let seed = 16;
    while (masks.size < MAX_SUBSETS) {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      masks.add(seed % (all + 1));
    }
  }
  return [...masks].map((m) => NAMES.filter((_, i) => (m >> i) & 1));
}

describe('PoolCore over every subset of the features', () => {
  test('an option is refused exactly when a feature it needs is missing, naming a missing one', () => {
    let refused = 0;
    for (const have of subsets()) {
      for (const [label, extra, needs] of NEEDS) {
        const missing = needs.filter((n) => !have.includes(n));
        let error: unknown;
        try {
          const pool = new PoolCore({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', ...extra }, have.map((n) => FEATURES[n]!));
          void pool.close();
        } catch (e) {
          error = e;
        }
        if (missing.length === 0) {
          expect(error, `${label} with [${have}]`).toBeUndefined();
          continue;
        }
        refused++;
        expect(isPoolError(error) && error.code === 'INVALID_OPTIONS', `${label} with [${have}]`).toBe(true);
        expect(missing.some((n) => (error as Error).message.includes(`add ${n} to its features`)), `${label} with [${have}]: ${(error as Error).message}`).toBe(true);
      }
    }
    expect(refused).toBeGreaterThan(500);
  });

  test("a call's pin and exclude are refused exactly when callRouting is missing", async () => {
    for (const have of subsets()) {
      const pool = new PoolCore({ endpoints: [{ name: 'a', conn: 1 }, { name: 'b', conn: 2 }], classify: () => 'transient', clock: new FakeClock() }, have.map((n) => FEATURES[n]!));
      for (const options of [{ pin: 'b' }, { exclude: ['a'] }]) {
        const done = pool.execute(async (conn) => conn, options);
        if (have.includes('callRouting')) await expect(done, `${JSON.stringify(options)} with [${have}]`).resolves.toBe(2);
        else await expect(done, `${JSON.stringify(options)} with [${have}]`).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringContaining('add callRouting to its features') });
      }
      await pool.close();
    }
  });

  test('any subset serves calls through a transient failure, a ceiling hint and a spent day', async () => {
    for (const have of subsets()) {
      const clock = new FakeClock();
      const answers = ['transient', 'hint', 'day'];
      const pool = new PoolCore(
        {
          endpoints: [{ name: 'a', conn: 1 }, { name: 'b', conn: 2 }, { name: 'c', conn: 3 }, { name: 'd', conn: 4 }],
          clock,
          classify: (err) => {
            const kind = (err as Error).message;
            if (kind === 'hint') return { class: 'rate-limited', ceilingPerSecond: 2 };
            if (kind === 'day') return { class: 'rate-limited', dailyQuotaExhausted: true };
            return 'transient';
          },
        },
        have.map((n) => FEATURES[n]!),
      );
      let n = 0;
      const done = pool.execute(async (conn) => {
        const kind = answers[n++];
        if (kind !== undefined) throw new Error(kind);
        return conn;
      });
      await clock.advance(60_000);
      await expect(done, `[${have}]`).resolves.toBeTypeOf('number');
      expect(n).toBe(4);
      await pool.close();
    }
  });
});
