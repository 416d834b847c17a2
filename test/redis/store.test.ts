/**
 * The Redis store in one process, against a real redis-server: the admission script's
 * semantics (bucket, paced, daily, groups), expiries, the NOSCRIPT fallback, and the
 * failure contract (never a synchronous throw, prompt rejection on a broken client).
 */
import type Redis from 'ioredis';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { Pool, type LimiterStore, type PoolEvent, type SharedLimit } from '../../src/index.js';
import { createRedisStore, fromIoredis, fromNodeRedis, RedisStoreError, type RedisCommander } from '../../src/redis/index.js';
import { client, describeRedis, ready, useRedis } from './redis-env.js';
import { sleep } from './fleet.js';

const base: SharedLimit = { key: 'endpoint:a', perSecond: 5, burst: undefined, mode: 'bucket', marginMs: 25, perDay: undefined, dailyStopFraction: 0.95, dailyResetUtcHour: 0 };
const limit = (over: Partial<SharedLimit>): SharedLimit => ({ ...base, ...over });

async function times(store: LimiterStore, l: SharedLimit, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await store.acquire(l));
  return out;
}

describeRedis('Redis store (one process)', (server) => {
  const connected = useRedis(server);
  let redis: Redis;
  beforeEach(() => {
    redis = connected();
  });

  test('bucket: admits `burst` at once, then asks to wait about one interval (GCRA = the local token bucket)', async () => {
    const store = createRedisStore(fromIoredis(redis));
    const got = await times(store, limit({ perSecond: 5, burst: 3 }), 5);
    expect(got.slice(0, 3)).toEqual([0, 0, 0]);
    // A full interval is 200 ms; a few ms may have passed between calls.
    for (const w of got.slice(3)) expect(w).toBeGreaterThan(150);
    for (const w of got.slice(3)) expect(w).toBeLessThanOrEqual(200);
  });

  test('bucket: the default burst is perSecond rounded up, as locally', async () => {
    const store = createRedisStore(fromIoredis(redis));
    const got = await times(store, limit({ perSecond: 2.5 }), 4);
    expect(got.map((w) => w === 0)).toEqual([true, true, true, false]);
  });

  test('paced: the second call waits 1000 / perSecond + marginMs; once spaced, the rolling second caps the count', async () => {
    const store = createRedisStore(fromIoredis(redis));
    const l = limit({ key: 'endpoint:p', mode: 'paced', perSecond: 4, marginMs: 50 });
    expect(await store.acquire(l)).toBe(0);
    const w = await store.acquire(l);
    expect(w).toBeGreaterThan(250);
    expect(w).toBeLessThanOrEqual(300);
  });

  test('daily: stops at floor(perDay × stopFraction), on its own key expiring after the reset', async () => {
    const store = createRedisStore(fromIoredis(redis));
    const l = limit({ key: 'endpoint:d', perSecond: undefined, perDay: 10, dailyStopFraction: 0.5 });
    const got = await times(store, l, 7);
    expect(got.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    const [, day] = store.keysOf(l);
    const ttl = await redis.pttl(day);
    // Refused until the next reset (at most a day away), and the key outlives it by an hour at most.
    expect(got[5]).toBeGreaterThan(0);
    expect(got[5]).toBeLessThanOrEqual(86_400_000);
    expect(ttl).toBeGreaterThan(got[5]!);
    expect(ttl).toBeLessThanOrEqual(got[5]! + 3_600_000 + 1000);
    expect(await redis.hget(day, 'n')).toBe('5');
  });

  test.each([0, 7, 23])('daily: refused until the next reset at %i:00 UTC, on Redis time', async (hour) => {
    const store = createRedisStore(fromIoredis(redis));
    const l = limit({ key: `endpoint:h${hour}`, perSecond: undefined, perDay: 1, dailyStopFraction: 1, dailyResetUtcHour: hour });
    expect(await store.acquire(l)).toBe(0);
    const wait = await store.acquire(l);
    const now = Date.now();
    const day = 86_400_000;
    const offset = hour * 3_600_000;
    const nextReset = (Math.floor((now - offset) / day) + 1) * day + offset;
    // Redis and this process share the host clock here; a second covers the round trip.
    expect(Math.abs(now + wait - nextReset)).toBeLessThan(1000);
  });

  test('a refused call counts nothing: the daily count is untouched while the per-second limit refuses', async () => {
    const store = createRedisStore(fromIoredis(redis));
    const l = limit({ key: 'endpoint:both', perSecond: 1, perDay: 100 });
    await times(store, l, 4);
    expect(await redis.hget(store.keysOf(l)[1], 'n')).toBe('1');
  });

  test('groups are just a key; every key written has an expiry', async () => {
    const store = createRedisStore(fromIoredis(redis), { prefix: 't:' });
    await store.acquire(limit({ key: 'group:k1+k2', perDay: 50 }));
    await store.acquire(limit({ key: 'endpoint:p', mode: 'paced' }));
    const keys = (await redis.keys('*')).sort();
    expect(keys).toEqual(['t:{endpoint:p}:rate', 't:{group:k1+k2}:day', 't:{group:k1+k2}:rate']);
    for (const k of keys) expect(await redis.pttl(k), k).toBeGreaterThan(0);
    // The per-second state outlives its use by about a second, not more.
    expect(await redis.pttl('t:{endpoint:p}:rate')).toBeLessThanOrEqual(2225 + 50);
  });

  test('after SCRIPT FLUSH (or a Redis restart) the store falls back to EVAL and goes on', async () => {
    const sent: string[] = [];
    const io = fromIoredis(redis);
    const store = createRedisStore({ send: (args) => (sent.push(args[0]!), io.send(args)) });
    const l = limit({ perSecond: 100 });
    expect(await store.acquire(l)).toBe(0);
    await redis.script('FLUSH');
    expect(await store.acquire(l)).toBe(0);
    expect(await store.acquire(l)).toBe(0);
    expect(sent).toEqual(['SCRIPT', 'EVALSHA', 'EVALSHA', 'EVAL', 'EVALSHA']);
  });

  test('concurrent acquires on one key share a refusal: one script run, not one each', async () => {
    const sent: string[] = [];
    const io = fromIoredis(redis);
    const store = createRedisStore({ send: (args) => (sent.push(args[0]!), io.send(args)) });
    const l = limit({ perSecond: 2, burst: 1 });
    expect(await store.acquire(l)).toBe(0);
    sent.length = 0;
    const waits = await Promise.all(Array.from({ length: 10 }, () => store.acquire(l)));
    expect(waits.every((w) => w > 0)).toBe(true);
    expect(sent).toEqual(['EVALSHA']);
    // Once the bucket has a token, the call ahead is admitted and the others ask in turn: one more wins nothing.
    await sleep(600);
    const after = await Promise.all(Array.from({ length: 3 }, () => store.acquire(l)));
    expect(after.filter((w) => w === 0)).toHaveLength(1);
  });

  test('the node-redis adapter sends the same words through sendCommand', async () => {
    const io = fromIoredis(redis);
    const store = createRedisStore(fromNodeRedis({ sendCommand: (args) => io.send(args) }));
    expect(await times(store, limit({ perSecond: 1 }), 2)).toEqual([0, expect.any(Number)]);
  });

  test.each<[string, RedisCommander['send']]>([
    ['throws', () => {
      throw new Error('boom');
    }],
    ['returns a non-promise', () => 42 as never],
    ['rejects', () => Promise.reject(new Error('connection closed'))],
  ])('a client that %s: acquire never throws, it rejects at once with a RedisStoreError', async (_, send) => {
    const store = createRedisStore({ send });
    let p: Promise<number> | undefined;
    expect(() => (p = store.acquire(base))).not.toThrow();
    await expect(p).rejects.toBeInstanceOf(RedisStoreError);
  });

  test('a stuck client: beyond maxPending, acquire rejects at once with STORE_BUSY', async () => {
    const store = createRedisStore({ send: () => new Promise(() => undefined) }, { maxPending: 2 });
    void store.acquire(base);
    void store.acquire(base);
    await expect(store.acquire(base)).rejects.toMatchObject({ code: 'STORE_BUSY' });
    expect(store.pending).toBe(2);
  });

  test('a disconnected ioredis client (offline queue off) rejects promptly', async () => {
    const dead = client(server().port);
    await ready(dead);
    dead.disconnect();
    const store = createRedisStore(fromIoredis(dead));
    const t0 = Date.now();
    await expect(store.acquire(base)).rejects.toBeInstanceOf(RedisStoreError);
    expect(Date.now() - t0).toBeLessThan(200);
  });

  test('bad arguments are reported at creation', () => {
    expect(() => createRedisStore({} as never)).toThrow(/fromIoredis\(\) or fromNodeRedis\(\)/);
    expect(() => fromIoredis({} as never)).toThrow(TypeError);
    expect(() => createRedisStore(fromIoredis(redis), { maxPending: 0 })).toThrow(/maxPending/);
  });

  test('two pools in one process share the fleet quota through Redis', async () => {
    const store = createRedisStore(fromIoredis(redis));
    const starts: number[] = [];
    const events: PoolEvent[] = [];
    const make = () =>
      new Pool<string>({
        endpoints: [{ name: 'a', conn: 'a', rateLimit: { perSecond: 10, burst: 1 } }],
        classify: () => 'transient',
        sharedQuota: { store, timeoutMs: 500 },
        onEvent: (e) => events.push(e),
      });
    const pools = [make(), make()];
    const op = async () => {
      starts.push(Date.now());
    };
    const t0 = Date.now();
    await Promise.all(pools.flatMap((p) => Array.from({ length: 6 }, () => p.execute(op))));
    // 12 calls at 10/s with a burst of 1 take at least 1.1 s fleet-wide (each pool alone: 0.5 s).
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    expect(starts).toHaveLength(12);
    expect(events.some((e) => e.type === 'store-degraded')).toBe(false);
  });
});
