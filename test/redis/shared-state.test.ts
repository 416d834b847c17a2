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
import { nextDailyReset } from '../../src/limits/daily.js';

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

  async function member(endpoints: { name: string; rateLimit: object }[], groups?: string[][], more: { dailyResetUtcHour?: number } = {}) {
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
      ...more,
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

  test("a group key's spent day parks that key in every pool until the reset (parkEndpoint), never its siblings", async () => {
    const endpoints = [
      { name: 'k1', rateLimit: { perSecond: 100 } },
      { name: 'k2', rateLimit: { perSecond: 100 } },
    ];
    const hour = (new Date().getUTCHours() + 3) % 24;
    const one = await member(endpoints, [['k1', 'k2']], { dailyResetUtcHour: hour });
    const two = await member(endpoints, [['k1', 'k2']], { dailyResetUtcHour: hour });
    const expectedMs = nextDailyReset(Date.now(), hour) - Date.now();
    expect(await one.pool.execute(async (name) => {
      if (name === 'k1') throw new Hint({ class: 'rate-limited', dailyQuotaExhausted: true });
      return name;
    })).toBe('k2');
    await settle(one.store);
    const state = one.store.keysOf({ key: 'group:k1+k2' } as never).state;
    // The mark's end, on Redis's clock: the reset the reporting pool read on its wall clock. The group itself is not parked.
    const replies = (await redis.multi().time().hget(state, 'k:k1').hget(state, 'p').pttl(state).exec())!.map(([, v]) => v);
    const [t, until, groupPark, ttl] = replies as [[string, string], string, string | null, number];
    const [sec, micro] = t;
    const left = Number(until) - (Number(sec) * 1000 + Number(micro) / 1000);
    expect(Math.abs(left - expectedMs)).toBeLessThan(5000);
    expect(groupPark).toBeNull();
    expect(ttl).toBeGreaterThanOrEqual(left - 5000);
    // The other pool (strategy 'ordered': k1 first) hears of it with its admission on the group and never sends to k1.
    const called: string[] = [];
    for (let i = 0; i < 3; i++) expect(await two.pool.execute(async (name) => (called.push(name), name))).toBe('k2');
    expect(called).toEqual(['k2', 'k2', 'k2']);
    const [k1, k2] = two.pool.stats();
    expect(k1!.status).toBe('parked');
    expect(Math.abs(k1!.parkedUntilMs! - Date.now() - expectedMs)).toBeLessThan(5000);
    expect(k2!.status).toBe('ok');
    expect(two.store.stateOf('group:k1+k2')?.parkedEndpoints?.has('k1')).toBe(true);
  });

  test('a parked key is handed out only until its mark runs out on Redis', async () => {
    const limit = { key: 'group:k1+k2', perSecond: 100, burst: undefined, mode: 'bucket' as const, marginMs: 25, perDay: undefined, dailyStopFraction: 0.95, dailyResetUtcHour: 0 };
    const errors: unknown[] = [];
    const writer = createRedisStore(fromIoredis(redis), { prefix: 'share:', onError: (e) => errors.push(e) });
    // A nonsense duration goes to onError, never a rejection.
    await expect(writer.parkEndpoint(limit, 'k1', Number.NaN)).resolves.toBeUndefined();
    expect(errors).toHaveLength(1);
    // A learned ceiling keeps the state hash for a day: the mark must run out on its own.
    await writer.report(limit, { type: 'ceiling', perSecond: 50 });
    await writer.parkEndpoint(limit, 'k1', 150);
    const early = createRedisStore(fromIoredis(redis), { prefix: 'share:' });
    await early.acquire(limit);
    expect(early.stateOf(limit.key)?.parkedEndpoints?.get('k1')).toBeGreaterThan(0);
    // Wait on Redis's own clock (bounded), not on a fixed sleep.
    const until = Number(await redis.hget(writer.keysOf(limit).state, 'k:k1'));
    for (let i = 0; i < 200; i++) {
      const [s, us] = await redis.time();
      if (Number(s) * 1000 + Number(us) / 1000 > until) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const late = createRedisStore(fromIoredis(redis), { prefix: 'share:' });
    await late.acquire(limit);
    expect(late.stateOf(limit.key)?.ceilingPerSecond).toBe(50);
    expect(late.stateOf(limit.key)?.parkedEndpoints?.has('k1')).toBe(false);
  });
});
