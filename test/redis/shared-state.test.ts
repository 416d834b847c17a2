/**
 * Fleet knowledge through a real redis-server: what one pool learns from its classifier (a
 * ceiling, a spent daily quota, an invalid key) reaches another pool, on its own client and
 * store (another process, as far as Redis can tell), with its next admission on that quota.
 */
import type Redis from 'ioredis';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { Pool, type Classification, type ClassifyResult, type PoolEvent } from '../../src/index.js';
import { createRedisStore, fromIoredis, type RedisStore } from '../../src/redis/index.js';
import { client, describeRedis, ready, useRedis } from './redis-env.js';

class Hint extends Error {
  constructor(readonly verdict: Classification) {
    super('hint');
  }
}

const classify = (error: unknown): ClassifyResult => (error instanceof Hint ? error.verdict : 'transient');

describeRedis('Redis store: fleet knowledge shared between pools', (server) => {
  const connected = useRedis(server);
  let redis: Redis;
  const clients: Redis[] = [];
  beforeEach(() => {
    redis = connected();
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect();
  });

  async function member(endpoints: { name: string; rateLimit: object }[], groups?: string[][]) {
    const io = await ready(client(server().port));
    clients.push(io);
    const store = createRedisStore(fromIoredis(io), { prefix: 'share:' });
    const events: PoolEvent[] = [];
    const pool = new Pool<string>({
      endpoints: endpoints.map((e) => ({ ...e, conn: e.name })),
      ...(groups === undefined ? {} : { groups }),
      classify,
      strategy: 'ordered',
      maxAttempts: 2,
      sharedQuota: { store, timeoutMs: 1000 },
      onEvent: (e) => events.push(e),
    });
    return { store, pool, events };
  }

  const settle = (store: RedisStore) => new Promise<void>((resolve) => {
    const t = setInterval(() => {
      if (store.pending === 0) {
        clearInterval(t);
        resolve();
      }
    }, 5);
  });

  test('a ceiling learned by one pool is obeyed by another after one admission: by the script at once, and by its local limiter', async () => {
    const endpoints = [{ name: 'a', rateLimit: { perSecond: 20, mode: 'paced', marginMs: 0 } }, { name: 'z', rateLimit: { perSecond: 1000 } }];
    const one = await member(endpoints);
    const two = await member(endpoints);
    await one.pool.execute(async (name) => {
      if (name === 'a') throw new Hint({ class: 'rate-limited', ceilingPerSecond: 2 });
      return name;
    });
    await settle(one.store);
    expect(await redis.hget(one.store.keysOf({ key: 'endpoint:a' } as never).state, 'c')).toBe('2');
    expect(two.pool.stats()[0]!.ceilingPerSecond).toBe(20);
    // One call through the other pool: its admission answer carries the ceiling.
    await two.pool.execute(async (name) => name, { pin: 'a' });
    expect(two.pool.stats()[0]!.ceilingPerSecond).toBe(2);
    expect(two.events.filter((e) => e.type === 'endpoint-recalibrated')).toEqual([{ type: 'endpoint-recalibrated', endpoint: 'a', perSecond: 2, scope: 'key', reason: 'hint' }]);
    expect(two.store.stateOf('endpoint:a')?.ceilingPerSecond).toBe(2);
    // And the script admits 2 a second on the key, whatever a process configured.
    const raw = createRedisStore(fromIoredis(redis), { prefix: 'share:', maxReserveMs: 0 });
    const limit = { key: 'endpoint:a', perSecond: 20, burst: undefined, mode: 'paced' as const, marginMs: 0, perDay: undefined, dailyStopFraction: 1, dailyResetUtcHour: 0 };
    const wait = await raw.acquire(limit);
    expect(wait).toBeGreaterThan(200);
  });

  test('an endpoint disabled by one pool is disabled in another by its next admission on that quota, and never called there', async () => {
    const endpoints = [{ name: 'a', rateLimit: { perSecond: 100 } }, { name: 'b', rateLimit: { perSecond: 100 } }];
    const one = await member(endpoints);
    const two = await member(endpoints);
    await one.pool.execute(async (name) => {
      if (name === 'a') throw new Hint({ class: 'permanent', disableEndpoint: true });
      return name;
    }).catch(() => undefined);
    await settle(one.store);
    expect(one.pool.stats()[0]!.status).toBe('disabled');
    const called: string[] = [];
    const got = await two.pool.execute(async (name) => (called.push(name), name));
    // Its admission on a brought the mark: a was skipped for b within the same call.
    expect(got).toBe('b');
    expect(called).toEqual(['b']);
    expect(two.pool.stats()[0]!.status).toBe('disabled');
    // Enabled again by hand in one pool: the other follows on its next admission on a's quota.
    one.pool.enableEndpoint('a');
    await settle(one.store);
    await new Promise((r) => setTimeout(r, 20));
    await two.store.acquire({ key: 'endpoint:a', perSecond: 100, burst: undefined, mode: 'bucket', marginMs: 25, perDay: undefined, dailyStopFraction: 0.95, dailyResetUtcHour: 0 });
    expect(two.pool.stats()[0]!.status).not.toBe('disabled');
  });

  test("a key's spent daily quota parks it in every pool: the script refuses at once and the others park it locally", async () => {
    // (In a group, a spent day parks the key that said so, not its siblings: see docs/quotas.md.)
    const endpoints = [
      { name: 'k1', rateLimit: { perSecond: 100, perDay: 1000 } },
      { name: 'z', rateLimit: { perSecond: 100 } },
    ];
    const one = await member(endpoints, []);
    const two = await member(endpoints, []);
    await one.pool.execute(async (name) => {
      if (name !== 'z') throw new Hint({ class: 'rate-limited', dailyQuotaExhausted: true });
      return name;
    });
    await settle(one.store);
    const called: string[] = [];
    expect(await two.pool.execute(async (name) => (called.push(name), name))).toBe('z');
    expect(called).toEqual(['z']);
    const stats = two.pool.stats();
    expect(stats.find((s) => s.name === 'k1')!.status).toBe('parked');
    expect(two.events.some((e) => e.type === 'endpoint-parked')).toBe(true);
  });
});
