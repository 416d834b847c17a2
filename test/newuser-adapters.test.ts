/**
 * The adapters' own options, tried as a new user would (NOTES-newuser.md, finding 13): each
 * wrong one throws `INVALID_OPTIONS` naming the field, without echoing a URL.
 */
import { http } from 'viem';
import { describe, expect, test } from 'vitest';
import { Pool, Refresher, isPoolError } from '../src/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import { createRedisHealth, createRedisStore } from '../src/redis/index.js';
import { poolTransport } from '../src/viem/index.js';

const URL_WITH_KEY = 'https://rpc.example/v2/SECRET';

function failure(make: () => unknown): unknown {
  try {
    const made = make() as { destroy?: () => void; pool?: { close(): Promise<void> } } | undefined;
    made?.destroy?.();
    void made?.pool?.close();
  } catch (error) {
    return error;
  }
  return undefined;
}

function expectInvalid(error: unknown, field: string): void {
  expect(isPoolError(error) && [error.code, error.field]).toEqual(['INVALID_OPTIONS', field]);
  expect((error as Error).message).not.toContain('SECRET');
}

describe('poolTransport', () => {
  const ok = { endpoints: [{ name: 'a', url: URL_WITH_KEY }], http };
  test.each([
    ['endpoints[0].url', { endpoints: [{ name: 'a', url: 'not a url SECRET' }], http }],
    ['endpoints[0].url', { endpoints: [{ name: 'a' }], http }],
    ['endpoints[0].transport', { endpoints: [{ name: 'a', transport: URL_WITH_KEY }] }],
    ['endpoints[0]', { endpoints: [URL_WITH_KEY], http }],
    ['passSignal', { ...ok, passSignal: 'no' }],
    ['rememberUnsupportedMs', { ...ok, rememberUnsupportedMs: -1 }],
    ['keccak256', { ...ok, keccak256: 5 }],
    ['classify', { ...ok, classify: 'permanent' }],
    ['http', { endpoints: [{ name: 'a', url: URL_WITH_KEY }], http: 'viem' }],
  ])('%s: %j', (field, options) => {
    expectInvalid(
      failure(() => poolTransport(options as never)),
      field,
    );
  });
});

describe('PooledJsonRpcProvider', () => {
  test.each([
    ['endpoints[0].url', { endpoints: [{ url: 'nope SECRET' }] }],
    ['endpoints[0].url', { endpoints: [{ url: 'ftp://rpc.example/SECRET' }] }],
    ['endpoints[0].headers', { endpoints: [{ url: URL_WITH_KEY, headers: 'x-api-key: SECRET' }] }],
    ['maxRetryAfterMs', { endpoints: [{ url: URL_WITH_KEY }], maxRetryAfterMs: -1 }],
    ['classify', { endpoints: [{ url: URL_WITH_KEY }], classify: 5 }],
  ])('%s: %j', (field, options) => {
    expectInvalid(
      failure(() => new PooledJsonRpcProvider({ network: 1, ...options } as never)),
      field,
    );
  });
});

describe('Refresher and the Redis helpers', () => {
  test('Refresher: order and onRefresh', async () => {
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient' });
    const base = { candidates: [], check: async () => true };
    expectInvalid(
      failure(() => new Refresher(pool, { ...base, order: 'fastest' } as never)),
      'order',
    );
    expectInvalid(
      failure(() => new Refresher(pool, { ...base, onRefresh: 'log' } as never)),
      'onRefresh',
    );
    await pool.close();
  });

  test('createRedisStore and createRedisHealth: INVALID_OPTIONS, not a bare TypeError', () => {
    const client = { send: async () => null };
    expectInvalid(
      failure(() => createRedisStore(client, { prefix: '{SECRET}' })),
      'prefix',
    );
    expectInvalid(
      failure(() => createRedisStore(client, { maxPending: 0 })),
      'maxPending',
    );
    expectInvalid(
      failure(() => createRedisStore(client, { maxReserveMs: -1 })),
      'maxReserveMs',
    );
    expectInvalid(
      failure(() => createRedisHealth(client, { maxAgeMs: -1 })),
      'maxAgeMs',
    );
  });
});
