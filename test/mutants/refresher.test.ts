/**
 * `Refresher` (src/extras/refresher.ts) where the twenty-eighth session's first mutation run
 * found no test holding: `start()` idempotent and dead after `stop()`, `stop()` clearing the
 * next run's timer, no timer at `intervalMs: Infinity`, `refreshing`, `Symbol.dispose`,
 * a stop in the middle of the checks, a `setEndpoints` that refuses the survivors, a source
 * that answers something else than a list, and the constructor's checks.
 */
import { describe, expect, test } from 'vitest';
import { Pool, Refresher, isPoolError, type EndpointConfig, type RefreshResult } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { thrown } from './thrown.js';

const ep = (name: string, conn = name): EndpointConfig<string> => ({ name, conn });

function setup(options: Partial<ConstructorParameters<typeof Refresher<string>>[1]> = {}) {
  const clock = new FakeClock();
  const pool = new Pool<string>({ endpoints: [ep('seed')], classify: () => 'transient', clock });
  const results: RefreshResult[] = [];
  const checks: string[] = [];
  const r = new Refresher(pool, {
    candidates: ['a', 'b'].map((n) => ep(n)),
    check: async (c) => void checks.push(c),
    onRefresh: (x) => results.push(x),
    intervalMs: 10_000,
    ...options,
  });
  return { clock, pool, r, results, checks };
}


describe('Refresher: its life', () => {
  test('start() twice runs one refresh; the next one comes intervalMs after; stop() clears its timer', async () => {
    const { clock, r, checks } = setup();
    r.start();
    r.start();
    await clock.advance(0);
    expect(checks).toEqual(['a', 'b']);
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(10_000);
    expect(checks).toEqual(['a', 'b', 'a', 'b']);
    r.stop();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(60_000);
    expect(checks).toHaveLength(4);
  });

  test('start() after stop() does nothing', async () => {
    const { clock, r, checks } = setup();
    r.stop();
    r.start();
    await clock.advance(60_000);
    expect(checks).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  test('intervalMs Infinity: one refresh at start(), no timer after it', async () => {
    const { clock, r, checks } = setup({ intervalMs: Number.POSITIVE_INFINITY });
    r.start();
    await clock.advance(0);
    expect(checks).toEqual(['a', 'b']);
    expect(clock.pendingTimers).toBe(0);
  });

  test('refreshing is true only while a refresh runs; lastResult is its result; Symbol.dispose stops', async () => {
    let release: () => void = () => undefined;
    const { clock, r, results } = setup({ check: () => new Promise<void>((res) => (release = res)), concurrency: 1, candidates: [ep('a')] });
    expect(r.refreshing).toBe(false);
    const p = r.refresh();
    expect(r.refreshing).toBe(true);
    release();
    const result = await p;
    expect(r.refreshing).toBe(false);
    expect(r.lastResult).toBe(result);
    expect(results).toEqual([result]);
    r.start();
    await clock.advance(0);
    release();
    await clock.advance(0);
    r[Symbol.dispose]();
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('Refresher: runs that end early', () => {
  test('stopped while its checks run: installs nothing, reports nobody healthy', async () => {
    let release: () => void = () => undefined;
    const { pool, r } = setup({ check: () => new Promise<void>((res) => (release = res)), candidates: [ep('a')] });
    const p = r.refresh();
    await Promise.resolve();
    r.stop();
    release();
    const result = await p;
    expect(result).toMatchObject({ checked: 1, healthy: [], installed: undefined, usedFallback: false });
    expect(pool.endpointNames).toEqual(['seed']);
  });

  test('survivors the pool refuses (two of one name): the set stays, the error is reported', async () => {
    const { pool, r } = setup({ candidates: [ep('x', '1'), ep('x', '2')] });
    const result = await r.refresh();
    expect(result.installed).toBeUndefined();
    expect(result.healthy).toEqual(['x', 'x']);
    expect(isPoolError(result.error) && result.error.code).toBe('INVALID_OPTIONS');
    expect(pool.endpointNames).toEqual(['seed']);
  });

  test('a source that answers something else than a list: the refresh fails naming candidates()', async () => {
    const { pool, r } = setup({ candidates: async () => 'https://a.example.com' as never });
    const result = await r.refresh();
    expect(result).toMatchObject({ checked: 0, healthy: [], installed: undefined });
    expect(result.error).toMatchObject({ code: 'INVALID_OPTIONS', field: 'candidates()' });
    expect(pool.endpointNames).toEqual(['seed']);
  });
});

describe('Refresher: its options', () => {
  const pool = new Pool<string>({ endpoints: [ep('seed')], classify: () => 'transient' });
  const check = async () => true;
  test.each([
    ['options null', null, 'options', /an object/],
    ['options a string', 'x', 'options', /an object/],
    ['no check', { candidates: [] }, 'check', /a function \(conn, signal\) => Promise/],
    ['candidates a number', { candidates: 5, check }, 'candidates', /an array of endpoints or a function returning one/],
    ['candidates not a list of configs', { candidates: 'a,b', check }, 'candidates', /an array of endpoints or a function/],
    ['a URL in always', { candidates: [], check, always: ['https://a.example.com'] }, 'always[0]', /\(a URL\? wrap it/],
    ['always not a list', { candidates: [], check, always: 5 }, 'always', /an array of endpoint configs \{ name, conn \}/],
    ['a nameless config in always', { candidates: [], check, always: [{ conn: 1 }] }, 'always[0]', /^always\[0\]: .*an endpoint config \{ name, conn \}(?! \(a URL)/],
    ['a config with no conn in fallback', { candidates: [], check, fallback: [{ name: 'f' }] }, 'fallback[0]', /an endpoint config/],
    ['a number in candidates', { candidates: [7], check }, 'candidates[0]', /an endpoint config \{ name, conn \}/],
    ['shared without refreshSurvivors', { candidates: [], check, shared: {} }, 'shared', /a shared survivor list/],
    ['shared null', { candidates: [], check, shared: null }, 'shared', /a shared survivor list/],
    ['shared a function', { candidates: [], check, shared: () => undefined }, 'shared', /a shared survivor list/],
    ['an unknown key', { candidates: [], check, interval: 5 }, 'interval', /^interval: unknown option; did you mean 'intervalMs'\?$/],
  ] as [string, unknown, string, RegExp][])('%s: INVALID_OPTIONS naming %s', (_name, options, field, message) => {
    const e = thrown(() => new Refresher(pool, options as never));
    expect(e?.code).toBe('INVALID_OPTIONS');
    expect(e?.field).toBe(field);
    expect(e?.message).toMatch(message);
  });

  test('order defaults to given', async () => {
    const clock = new FakeClock();
    const p = new Pool<string>({ endpoints: [ep('seed')], classify: () => 'transient', clock });
    const r = new Refresher(p, { candidates: ['b', 'a'].map((n) => ep(n)), check: async () => true });
    const result = await r.refresh();
    expect(result.installed).toEqual(['b', 'a']);
  });
});
