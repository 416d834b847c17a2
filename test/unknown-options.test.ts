import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type PoolOptions } from '../src/index.js';
import { nearest } from '../src/options/validate.js';
import { FakeClock } from '../src/testing/index.js';

const base = (): Record<string, unknown> => ({ endpoints: [{ name: 'a', conn: 'x' }], classify: () => 'transient' });

function rejection(fn: () => unknown): { message: string; field: string | undefined } {
  try {
    fn();
  } catch (e) {
    if (!isPoolError(e)) throw e;
    expect(e.code).toBe('INVALID_OPTIONS');
    return { message: e.message, field: e.field };
  }
  throw new Error('expected INVALID_OPTIONS');
}

describe('unknown option keys are rejected, naming the nearest valid option', () => {
  test.each<[string, (o: Record<string, unknown>) => void, string]>([
    ['breaker typo', (o) => (o.breaker = { threshhold: 3 }), "breaker.threshhold: unknown option; did you mean 'threshold'?"],
    ['retries', (o) => (o.retries = 5), "retries: unknown option; did you mean 'maxAttempts'?"],
    ['timeout', (o) => (o.timeout = 5), "timeout: unknown option; did you mean 'attemptTimeoutMs'?"],
    ['case', (o) => (o.deadlinems = 5), "deadlinems: unknown option; did you mean 'deadlineMs'?"],
    ['endpoint config', (o) => (o.endpoints = [{ name: 'a', conn: 1, wieght: 2 }]), "endpoints[0].wieght: unknown option; did you mean 'weight'?"],
    ['endpoint url', (o) => (o.endpoints = [{ name: 'a', url: 'http://x' }]), "endpoints[0].url: unknown option; did you mean 'conn'?"],
    ['rateLimit', (o) => (o.endpoints = [{ name: 'a', conn: 1, rateLimit: { perSec: 3 } }]), "endpoints[0].rateLimit.perSec: unknown option; did you mean 'perSecond'?"],
    ['hedge', (o) => (o.hedge = { afterMS: 3 }), "hedge.afterMS: unknown option; did you mean 'afterMs'?"],
    ['latency', (o) => (o.latency = { decay: 3 }), "latency.decay: unknown option; did you mean 'decayMs'?"],
    ['health', (o) => (o.health = { windowMS: 3 }), "health.windowMS: unknown option; did you mean 'windowMs'?"],
    ['sharedQuota', (o) => (o.sharedQuota = { store: { acquire: () => Promise.resolve(0) }, timeout: 5 }), "sharedQuota.timeout: unknown option; did you mean 'timeoutMs'?"],
    ['retryBudget', (o) => (o.retryBudget = { ratioo: 0.2 }), "retryBudget.ratioo: unknown option; did you mean 'ratio'?"],
    ['backoff', (o) => (o.backoff = { initialDelayMs: 3 }), "backoff.initialDelayMs: unknown option; did you mean 'initialMs'?"],
    ['nothing close', (o) => (o.backoff = { zzzzzz: 3 }), "backoff.zzzzzz: unknown option; valid options are 'initialMs', 'maxMs', 'jitter'"],
  ])('%s', (_, mutate, message) => {
    const o = base();
    mutate(o);
    const r = rejection(() => new Pool(o as unknown as PoolOptions<unknown>));
    expect(r.message).toBe(message);
    expect(r.field).toBe(message.slice(0, message.indexOf(':')));
  });

  test('setEndpoints checks the same keys', () => {
    const pool = new Pool(base() as unknown as PoolOptions<unknown>);
    expect(rejection(() => pool.setEndpoints([{ name: 'b', conn: 1, priorty: 'low' } as never])).message).toBe(
      "endpoints[0].priorty: unknown option; did you mean 'priority'?",
    );
  });

  test.each<[string, unknown, string]>([
    ['retries', { retries: 2 }, "retries: unknown option; did you mean 'retry'?"],
    ['timeout', { timeout: 2 }, "timeout: unknown option; did you mean 'attemptTimeoutMs'?"],
    ['retry object', { retry: { attempts: 2 } }, "retry.attempts: unknown option; did you mean 'maxAttempts'?"],
    ['backoff', { backoff: { max: 2 } }, "backoff.max: unknown option; did you mean 'maxMs'?"],
    ['hedge', { idempotent: true, hedge: { after: 2 } }, "hedge.after: unknown option; did you mean 'afterMs'?"],
  ])('execute() rejects %s', async (_, options, message) => {
    const pool = new Pool({ ...(base() as unknown as PoolOptions<unknown>), clock: new FakeClock() });
    await expect(pool.execute(() => Promise.resolve(1), options as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message });
  });

  test('every documented option is still accepted', () => {
    expect(
      () =>
        new Pool<number>({
          endpoints: [{ name: 'a', conn: 1, priority: 'high', weight: 1, maxInFlight: 2, rateLimit: { perSecond: 1, mode: 'bucket', burst: 1, marginMs: 1, perDay: 10, dailyStopFraction: 0.9 } }],
          classify: () => 'transient',
          breaker: { threshold: 2, cooldownMs: 1, maxCooldownMs: 2, mode: 'consecutive', failureRate: 0.5, windowMs: 10, minThroughput: 2, slowCallMs: 5, ejectionGrowth: true, jitter: 0 },
          backoff: { initialMs: 1, maxMs: 2, jitter: 'none' },
          hedge: { afterMs: 1, percentile: 0.9, maxHedges: 1 },
          latency: { decayMs: 1, failurePenaltyMs: 1, coldStartMs: 1 },
          health: { windowMs: 1, longWindowMs: 2, maxWaitForHealthyMs: 0 },
          retryBudget: { ratio: 0.1, minPerSecond: 1, windowMs: 1000 },
        }),
    ).not.toThrow();
  });

  test('nearest: typos, swaps and containment; nothing for a stranger', () => {
    expect(nearest('thresohld', ['threshold', 'cooldownMs'])).toBe('threshold');
    expect(nearest('cooldown', ['threshold', 'cooldownMs'])).toBe('cooldownMs');
    expect(nearest('banana', ['threshold', 'cooldownMs'])).toBeUndefined();
  });
});

describe("the adapters' options", () => {
  test('createPooledFetch: its own keys and the pool keys, with suggestions from both', async () => {
    const { createPooledFetch } = await import('../src/fetch/index.js');
    expect(rejection(() => createPooledFetch({ endpoints: ['http://127.0.0.1:1'], throwOnHttpErrors: true } as never)).message).toBe(
      "throwOnHttpErrors: unknown option; did you mean 'throwOnHttpError'?",
    );
    expect(rejection(() => createPooledFetch({ endpoints: ['http://127.0.0.1:1'], retries: 2 } as never)).message).toBe("retries: unknown option; did you mean 'maxAttempts'?");
    expect(rejection(() => createPooledFetch({ endpoints: [{ url: 'http://127.0.0.1:1', wieght: 2 }] } as never)).message).toBe(
      "endpoints[0].wieght: unknown option; did you mean 'weight'?",
    );
  });

  test('poolTransport', async () => {
    const { poolTransport } = await import('../src/viem/index.js');
    expect(rejection(() => poolTransport({ endpoints: [], passSignals: false } as never)).message).toBe("passSignals: unknown option; did you mean 'passSignal'?");
  });

  test('createRedisStore and createRedisHealth', async () => {
    const { createRedisStore, createRedisHealth } = await import('../src/redis/index.js');
    const client = { send: () => Promise.resolve(0) };
    expect(() => createRedisStore(client as never, { prefx: 'a:' } as never)).toThrow("createRedisStore options.prefx: unknown option; did you mean 'prefix'?");
    expect(() => createRedisHealth(client as never, { maxAge: 5 } as never)).toThrow("createRedisHealth options.maxAge: unknown option; did you mean 'maxAgeMs'?");
  });
});
