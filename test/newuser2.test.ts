/**
 * Findings of a second new-user pass (NOTES-newuser2.md): options given wrong in ways the
 * first pass did not try, and what a failed call tells its caller. Each test pins one fix.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { RetryBudget } from '../src/limits/budget.js';

const endpoints = [
  { name: 'a', conn: 'a' },
  { name: 'b', conn: 'b' },
];

function invalid(fn: () => unknown): { field: string | undefined; message: string } {
  try {
    fn();
  } catch (e) {
    if (!isPoolError(e)) throw e;
    expect(e.code).toBe('INVALID_OPTIONS');
    return { field: e.field, message: e.message };
  }
  throw new Error('expected INVALID_OPTIONS, nothing was thrown');
}

describe('pool options accepted before and wrong later', () => {
  test('an unknown key in ceilingRecovery is rejected like in every other nested option', () => {
    const r = invalid(() => new Pool({ endpoints, classify: () => 'transient', ceilingRecovery: { quietMS: 1000 } as never }));
    expect(r).toEqual({ field: 'ceilingRecovery.quietMS', message: "ceilingRecovery.quietMS: unknown option; did you mean 'quietMs'?" });
  });

  test('a clock without clearTimeout is rejected at construction, not a TypeError when a call is aborted', () => {
    const fake = new FakeClock();
    const clock = { now: () => fake.now(), setTimeout: (fn: () => void, ms: number) => fake.setTimeout(fn, ms) };
    const r = invalid(() => new Pool({ endpoints, classify: () => 'transient', clock: clock as never }));
    expect(r.field).toBe('clock');
    expect(r.message).toContain('clearTimeout');
  });
});

describe('per-call options', () => {
  const pool = (): Pool<string> => new Pool<string>({ endpoints, classify: () => 'transient', clock: new FakeClock() });

  test.each<[string, unknown, string]>([
    ['idempotent as a string', { idempotent: 'yes' }, 'idempotent'],
    ['idempotent as a number', { idempotent: 1 }, 'idempotent'],
    ['an array for the options', [], 'options'],
    ['retry: {} (maxAttempts left out)', { retry: {} }, 'retry.maxAttempts'],
  ])('%s is INVALID_OPTIONS naming the field', async (_, options, field) => {
    await expect(pool().execute(async () => 'ok', options as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field });
  });

  test('the valid forms still serve', async () => {
    const p = pool();
    expect(await p.execute(async () => 'ok', { idempotent: false })).toBe('ok');
    expect(await p.execute(async () => 'ok', { idempotent: true, retry: { maxAttempts: 2 } })).toBe('ok');
  });
});


describe('what a call that found no endpoint says', () => {
  test('NO_ENDPOINT says why each endpoint takes no call: a spent daily quota is not an open breaker', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({
      endpoints: [
        { name: 'a', conn: 'a', rateLimit: { perDay: 1 } },
        { name: 'b', conn: 'b' },
        { name: 'c', conn: 'c' },
      ],
      classify: () => 'transient',
      breaker: { threshold: 1, cooldownMs: 60_000 },
      maxAttempts: 1,
      clock,
    });
    expect(await pool.execute(async (conn) => conn, { pin: 'a' })).toBe('a'); // a's one call of the day
    await pool.execute(async () => Promise.reject(new Error('reset')), { pin: 'b' }).catch(() => undefined); // b's breaker opens
    const e = await pool.execute(async (conn) => conn, { exclude: ['c'] }).catch((error: unknown) => error);
    expect(e).toMatchObject({ code: 'NO_ENDPOINT', attempts: 0, message: 'no endpoint admits calls: "a" parked, "b" breaker open, "c" excluded' });
    await pool.close();
  });

  test('past six endpoints, the rest are counted', async () => {
    const clock = new FakeClock();
    const names = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8'];
    const pool = new Pool<string>({ endpoints: names.map((name) => ({ name, conn: name })), classify: () => 'transient', clock });
    const e = await pool.execute(async (conn) => conn, { exclude: names }).catch((error: unknown) => error);
    expect(e).toMatchObject({ code: 'NO_ENDPOINT', message: 'no endpoint admits calls: "k1" excluded, "k2" excluded, "k3" excluded, "k4" excluded, "k5" excluded, "k6" excluded and 2 more' });
  });

  test('a pinned endpoint out of its daily quota says so, not that its breaker is open', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a', rateLimit: { perDay: 1 } }], classify: () => 'transient', clock });
    await pool.execute(async (conn) => conn, { pin: 'a' });
    const e = await pool.execute(async (conn) => conn, { pin: 'a' }).catch((error: unknown) => error);
    expect(e).toMatchObject({ code: 'PIN_UNAVAILABLE', message: 'pinned endpoint "a" cannot serve: it is parked (quota spent)' });
  });
});

describe('what a call that failed says about each attempt', () => {
  test('RETRIES_EXHAUSTED lists each attempt: endpoint and class (the cause is only the last error)', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({
      endpoints: [
        { name: 'a', conn: 'a' },
        { name: 'b', conn: 'b' },
        { name: 'c', conn: 'c' },
      ],
      classify: (e) => ((e as Error).message === '429' ? 'rate-limited' : 'transient'),
      attemptTimeoutMs: 1_000,
      clock,
    });
    const op = async (conn: string): Promise<string> => {
      if (conn === 'a') throw new Error('ECONNRESET');
      if (conn === 'b') return new Promise<string>(() => undefined);
      throw new Error('429');
    };
    const e = await clock.runUntilSettled(pool.execute(op)).catch((error: unknown) => error);
    expect(e).toMatchObject({ code: 'RETRIES_EXHAUSTED', attempts: 3, message: 'all 3 attempts failed: "a" transient, "b" timeout, "c" rate-limited' });
    await pool.close();
  });

  test('DEADLINE_EXCEEDED lists the failed attempts too, six at most', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'only', conn: 'x' }], classify: () => 'transient', backoff: { initialMs: 100, maxMs: 100, jitter: 'none' }, breaker: { threshold: 100 }, deadlineMs: 850, clock });
    const e = await clock.runUntilSettled(pool.execute(async () => Promise.reject(new Error('reset')), { retry: 'until-deadline' })).catch((error: unknown) => error);
    const six = Array(6).fill('"only" transient').join(', ');
    expect(e).toMatchObject({ code: 'DEADLINE_EXCEEDED', attempts: 9, message: `the call's deadline of 850 ms passed after 9 attempts (failed: ${six} and 3 more)` });
    await pool.close();
  });
});

describe('a retry budget over a long window', () => {
  test('a huge windowMs builds (it was a RangeError from a typed array of 9e12 buckets) and serves', async () => {
    for (const windowMs of [2 ** 53, 1e300]) {
      const clock = new FakeClock();
      const pool = new Pool<string>({ endpoints, classify: () => 'transient', retryBudget: { windowMs }, clock });
      expect(await clock.runUntilSettled(pool.execute(async (conn) => conn))).toBe('a');
      await pool.close();
    }
  });

  test('an hour-long window still allows minPerSecond × window retries, then none until they age out', () => {
    const budget = new RetryBudget(0, 0.001, 3_600_000); // 3.6 retries an hour
    const granted = [0, 1, 2, 3].map((i) => budget.tryWithdraw(i * 60_000));
    expect(granted).toEqual([true, true, true, false]);
    expect(budget.tryWithdraw(3_600_000 - 1)).toBe(false);
    expect(budget.tryWithdraw(3_600_000 + 36_000 + 120_000)).toBe(true); // the first ones left the window (36 s buckets)
  });
});

test('a call whose own failures opened the last breaker: NO_ENDPOINT lists them too', async () => {
  const clock = new FakeClock();
  const pool = new Pool<string>({ endpoints, classify: () => 'transient', breaker: { threshold: 1 }, clock });
  const e = await clock.runUntilSettled(pool.execute(async () => Promise.reject(new Error('reset')))).catch((error: unknown) => error);
  expect(e).toMatchObject({ code: 'NO_ENDPOINT', attempts: 2, message: 'no endpoint admits calls: "a" breaker open, "b" breaker open (failed: "a" transient, "b" transient)' });
  await pool.close();
});

test("the README Quick start's comment shows the message its first call gets against a primary that resets", async () => {
  const clock = new FakeClock();
  const pool = new Pool<string>({
    endpoints: [
      { name: 'primary', conn: 'https://a.example', rateLimit: { perSecond: 25 } },
      { name: 'backup', conn: 'https://b.example', priority: 'low' },
    ],
    classify: () => 'transient',
    attemptTimeoutMs: 3_000,
    deadlineMs: 10_000,
    clock,
  });
  const e = await clock.runUntilSettled(pool.execute(async () => Promise.reject(new TypeError('fetch failed')))).catch((error: unknown) => error);
  if (!isPoolError(e)) throw e;
  const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');
  expect(readme).toContain(`// e.g. ${e.code} ${e.message}\n`);
  await pool.close();
});

test('applySlice / parseGroups given the key list instead of the index spec do not echo the keys', async () => {
  const { applySlice, parseGroups } = await import('../src/index.js');
  const keys = 'k3y0a1b2c3d4e5f6a7b8c9d0e1f2a3b4,k3y1a1b2c3d4e5f6a7b8c9d0e1f2a3b4';
  for (const fn of [() => applySlice(['a', 'b'], keys), () => parseGroups(keys)]) {
    const r = invalid(fn);
    expect(r.field).toBe('spec');
    expect(r.message).not.toContain('k3y');
    expect(r.message).toBe('endpoint spec (a string of 65 characters, not indices): expected indices like "1-5" or "1,3,7", got (a string of 32 characters, not indices)');
  }
  // A spec that reads as indices is still shown.
  expect(invalid(() => parseGroups('1-3;3,4')).message).toBe('endpoint spec "1-3;3,4": index 3 is in more than one group');
});

test('a PoolError logged as JSON (an event written by JSON.stringify) keeps its message, not its cause', async () => {
  const logged: string[] = [];
  const clock = new FakeClock();
  const pool = new Pool<string>({ endpoints, classify: () => 'transient', maxAttempts: 1, clock, onEvent: (e) => logged.push(JSON.stringify(e)) });
  await pool.execute(async () => Promise.reject(new Error('GET https://a.example/?key=SECRET failed'))).catch(() => undefined);
  const failed = JSON.parse(logged.find((l) => l.includes('call-failed'))!) as { error: Record<string, unknown> };
  expect(failed.error).toEqual({ name: 'PoolError', code: 'RETRIES_EXHAUSTED', message: 'the only attempt allowed failed: "a" transient', attempts: 1, endpoint: 'a' });
  expect(logged.join('\n')).not.toContain('SECRET');
});

test('setEndpoints with groups naming an endpoint not in the new list drops the name (documented), where the constructor refuses it', () => {
  const pool = new Pool<string>({ endpoints, classify: () => 'transient', clock: new FakeClock() });
  expect(() => pool.setEndpoints([{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], [['a', 'b', 'c']])).not.toThrow();
  expect(invalid(() => new Pool<string>({ endpoints, classify: () => 'transient', groups: [['a', 'b', 'c']] })).field).toBe('groups[0][2]');
});

test('prometheusSink: a second pool on the same registry with other label names is refused at creation (its records were all lost)', async () => {
  const client = await import('prom-client');
  const { prometheusSink } = await import('../src/prometheus/index.js');
  const registry = new client.Registry();
  const first = new Pool<string>({ endpoints, classify: () => 'transient', clock: new FakeClock(), metrics: prometheusSink({ client, registry, labels: { pool: 'mainnet' } }) });
  await first.execute(async (conn) => conn);
  // Same label names (or fewer): shared, told apart by their values.
  const same = new Pool<string>({ endpoints, classify: () => 'transient', clock: new FakeClock(), metrics: prometheusSink({ client, registry, labels: { pool: 'base' } }) });
  await same.execute(async (conn) => conn);
  expect((await registry.metrics()).split('\n').filter((l) => l.startsWith('endpoint_pool_attempts_total{'))).toEqual([
    'endpoint_pool_attempts_total{endpoint="a",pool="mainnet"} 1',
    'endpoint_pool_attempts_total{endpoint="a",pool="base"} 1',
  ]);
  const r = invalid(() => prometheusSink({ client, registry, labels: { chain: 'base' } }));
  expect(r.field).toBe('labels');
  expect(r.message).toContain("'chain' is not a label of endpoint_pool_attempts_total");
});
