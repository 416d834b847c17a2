/**
 * The feature table (src/features.ts): a `PoolCore` built without a feature refuses the
 * options and methods that need it, naming the feature, and works for everything else;
 * `Pool` has every feature.
 */
import { describe, expect, test } from 'vitest';
import { PoolCore } from '../src/pool-core.js';
import { NO_FEATURES } from '../src/features.js';
import { ALL_FEATURES } from '../src/features-all.js';
import { Pool, isPoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/fake-clock.js';

const endpoints = [{ name: 'a', conn: 1 }, { name: 'b', conn: 2 }];
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
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, NO_FEATURES);
    await expect(pool.execute(async (conn) => conn * 10)).resolves.toBe(10);
    await pool.close();
  });

  test('refuses retryBudget, naming the missing feature', () => {
    const r = refusal(() => new PoolCore({ endpoints, classify, retryBudget: { ratio: 0.1 } }, NO_FEATURES));
    expect(r?.code).toBe('INVALID_OPTIONS');
    expect(r?.field).toBe('retryBudget');
    expect(r?.message).toMatch(/retryBudget needs the budget feature/);
  });

  test('rejects probeHealth, naming the missing feature', async () => {
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock() }, NO_FEATURES);
    await expect(pool.probeHealth(async () => true)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/probe feature/) });
    await pool.close();
  });

  test.each(['refreshAuth', 'refreshTimeoutMs'] as const)('refuses %s, naming the auth feature', (option) => {
    const value = option === 'refreshAuth' ? async () => undefined : 1000;
    const r = refusal(() => new PoolCore({ endpoints, classify, [option]: value }, NO_FEATURES));
    expect(r).toEqual({ code: 'INVALID_OPTIONS', field: option, message: expect.stringMatching(new RegExp(`^${option} needs the auth feature`)) });
  });

  test('fails an unauthorized answer with UNAUTHORIZED at once, as a pool with no refreshAuth does', async () => {
    const conns: number[] = [];
    const op = async (conn: number) => {
      conns.push(conn);
      throw new Error('401');
    };
    const core = new PoolCore({ endpoints, classify: () => 'unauthorized' as const, clock: new FakeClock() }, NO_FEATURES);
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
      { auth: ALL_FEATURES.auth },
    );
    await expect(pool.execute(async (conn) => (token > 0 ? conn : Promise.reject(new Error('401'))))).resolves.toBe(1);
    expect(token).toBe(1);
    await pool.close();
  });

  test('refuses sharedQuota, naming the store feature', () => {
    const store = { acquire: () => Promise.resolve(0) };
    const r = refusal(() => new PoolCore({ endpoints, classify, sharedQuota: { store } }, NO_FEATURES));
    expect(r).toEqual({ code: 'INVALID_OPTIONS', field: 'sharedQuota', message: expect.stringMatching(/^sharedQuota needs the store feature/) });
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
    const pool = new PoolCore({ endpoints: limited, classify, clock: new FakeClock(), sharedQuota: { store } }, { store: ALL_FEATURES.store });
    expect(listening).toBe(1);
    await expect(pool.execute(async (conn) => conn)).resolves.toBe(1);
    expect(asked).toEqual(['endpoint:a']);
    await pool.close();
    expect(listening).toBe(0);
  });

  test('with a feature handed in, its option works', async () => {
    const pool = new PoolCore({ endpoints, classify, clock: new FakeClock(), retryBudget: { ratio: 0.1 } }, { budget: ALL_FEATURES.budget });
    await expect(pool.execute(async (conn) => conn)).resolves.toBe(1);
    await expect(pool.probeHealth(async () => true)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await pool.close();
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
