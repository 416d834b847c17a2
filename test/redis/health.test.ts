/**
 * Shared health on a real Redis: marks published from pool events, read back by another
 * pool through `exclude`, expiring on their own; and one survivor refresh for the fleet.
 */
import type Redis from 'ioredis';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { Pool, Refresher } from '../../src/index.js';
import { createRedisHealth, fromIoredis } from '../../src/redis/index.js';
import { client, describeRedis, ready, useRedis } from './redis-env.js';
import { sleep } from './fleet.js';

describeRedis('Redis shared health', (server) => {
  const connected = useRedis(server);
  let redis: Redis;
  beforeEach(() => {
    redis = connected();
  });

  test('a breaker that opens in one pool is skipped by another until it closes or the cooldown ends', async () => {
    const health = createRedisHealth(fromIoredis(redis));
    const make = () =>
      new Pool<string>({
        endpoints: [
          { name: 'x', conn: 'x' },
          { name: 'y', conn: 'y' },
        ],
        classify: () => 'transient',
        breaker: { threshold: 1, cooldownMs: 5000 },
        maxAttempts: 2,
        onEvent: (e) => void health.publish(e),
      });
    const seenA: string[] = [];
    const a = make();
    await a.execute(async (conn) => {
      seenA.push(conn);
      if (conn === 'x') throw new Error('down');
    });
    await sleep(20);
    const marks = await health.marks();
    expect(marks).toEqual([{ endpoint: 'x', status: 'open', remainingMs: expect.any(Number) }]);
    expect(marks[0]!.remainingMs).toBeGreaterThan(4000);
    expect(marks[0]!.remainingMs).toBeLessThanOrEqual(5000);

    // Another process: its own breaker knows nothing, the shared view does.
    const other = createRedisHealth(fromIoredis(redis));
    const b = make();
    await other.refresh();
    const seenB: string[] = [];
    for (let i = 0; i < 3; i++) await b.execute(async (conn) => void seenB.push(conn), { exclude: other.exclude(b.endpointNames) });
    expect(seenB).toEqual(['y', 'y', 'y']);

    await health.publish({ type: 'breaker-closed', endpoint: 'x' });
    await other.refresh();
    expect(other.exclude(b.endpointNames)).toEqual([]);
  });

  test('disabled and parked endpoints are marked for their TTL; enabling clears; marks and the key expire on their own', async () => {
    const health = createRedisHealth(fromIoredis(redis), { disabledTtlMs: 150, prefix: 'h:' });
    await health.publish({ type: 'endpoint-disabled', endpoint: 'k1' });
    await health.publish({ type: 'endpoint-parked', endpoint: 'k2', untilMs: Date.now() + 60_000 });
    await health.publish({ type: 'endpoint-disabled', endpoint: 'k3' });
    await health.publish({ type: 'endpoint-enabled', endpoint: 'k3' });
    const marks = await health.marks();
    expect(marks.map((m) => `${m.status}:${m.endpoint}`).sort()).toEqual(['disabled:k1', 'parked:k2']);
    expect(marks.find((m) => m.endpoint === 'k2')!.remainingMs).toBeGreaterThan(55_000);
    expect(await redis.pttl('{h:}v2:health:marks')).toBeGreaterThan(55_000);
    await sleep(250);
    expect((await health.marks()).map((m) => m.endpoint)).toEqual(['k2']);
    await health.clear('k2');
    expect(await health.marks()).toEqual([]);
    // Events that say nothing about health write nothing (the emptied set is gone).
    await health.publish({ type: 'store-recovered' });
    expect(await redis.keys('*')).toEqual([]);
    await health.mark('k9', 'open', 50);
    await sleep(120);
    await health.marks();
    expect(await redis.exists('{h:}v2:health:marks')).toBe(0);
  });

  test('exclude() answers at once from the last view, refreshes it in the background, and never excludes every name', async () => {
    const health = createRedisHealth(fromIoredis(redis), { maxAgeMs: 50 });
    await health.mark('a', 'open', 10_000);
    // The background fetch lands when it lands (a busy machine): wait for the answer, bounded.
    const settlesTo = async (want: string[]): Promise<string[]> => {
      let got = health.exclude(['a', 'b']);
      for (const until = Date.now() + 5000; JSON.stringify(got) !== JSON.stringify(want) && Date.now() < until; ) {
        await sleep(5);
        got = health.exclude(['a', 'b']);
      }
      return got;
    };
    // Nothing fetched yet: nothing excluded, a fetch starts.
    expect(health.exclude(['a', 'b'])).toEqual([]);
    expect(await settlesTo(['a'])).toEqual(['a']);
    await health.mark('b', 'disabled', 10_000);
    await sleep(60); // the view is stale: the next exclude() refreshes it
    health.exclude(['a', 'b']);
    // Both marked: the pool's own breakers decide rather than a NO_ENDPOINT from a stale view.
    expect(await settlesTo([])).toEqual([]);
    expect(health.exclude(['a', 'b', 'c']).sort()).toEqual(['a', 'b']);
    expect(health.exclude().sort()).toEqual(['a', 'b']);
  });

  test('with Redis failing, nothing throws or rejects: failures go to onError and nothing is excluded', async () => {
    const errors: unknown[] = [];
    const health = createRedisHealth({ send: () => Promise.reject(new Error('connection lost')) }, { onError: (e) => errors.push(e) });
    await expect(health.publish({ type: 'breaker-opened', endpoint: 'a', cooldownMs: 1000 })).resolves.toBeUndefined();
    await expect(health.marks()).resolves.toEqual([]);
    expect(health.exclude(['a', 'b'])).toEqual([]);
    await expect(health.readSurvivors()).resolves.toBeUndefined();
    await expect(health.refreshSurvivors(async () => ['x'], { ttlMs: 1000 })).resolves.toBeUndefined();
    expect(errors.length).toBeGreaterThanOrEqual(4);
  });

  test('survivors: one process runs the check for the fleet, the others read its list while it is fresh', async () => {
    const checks: number[] = [];
    const check = async () => {
      checks.push(Date.now());
      await sleep(50);
      return ['https://rpc-1.example', 'https://rpc-3.example'];
    };
    const fleet = Array.from({ length: 5 }, () => createRedisHealth(fromIoredis(redis)));
    const first = await Promise.all(fleet.map((h) => h.refreshSurvivors(check, { ttlMs: 300 })));
    expect(checks).toHaveLength(1);
    expect(first.filter((l) => l !== undefined)).toHaveLength(1);
    const later = await Promise.all(fleet.map((h) => h.refreshSurvivors(check, { ttlMs: 300, lockMs: 100 })));
    expect(later).toEqual(Array(5).fill(['https://rpc-1.example', 'https://rpc-3.example']));
    expect(checks).toHaveLength(1);
    // Fresh for ttlMs, kept (stale) for maxStaleMs more; all in the pool's hash slot.
    const fresh = await redis.pttl('{endpoint-pool:}v2:survivors:fresh');
    expect(fresh).toBeGreaterThan(0);
    expect(fresh).toBeLessThanOrEqual(300);
    expect(await redis.pttl('{endpoint-pool:}v2:survivors:list')).toBeGreaterThan(3000);
  });

  test('regression (issue 19): a stale list is served by every process while exactly one re-checks in the background', async () => {
    let checks = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const check = async () => {
      checks++;
      await gate;
      return ['new'];
    };
    const fleet = Array.from({ length: 5 }, () => createRedisHealth(fromIoredis(redis)));
    await fleet[0]!.publishSurvivors(['old'], 50);
    await sleep(80);
    const t0 = Date.now();
    const got = await Promise.all(fleet.map((h) => h.refreshSurvivors(check, { ttlMs: 50 })));
    // Nobody waited for the check, nobody fell back: all five got the stale list.
    expect(got).toEqual(Array(5).fill(['old']));
    expect(Date.now() - t0).toBeLessThan(500);
    expect(checks).toBe(1);
    const winner = fleet.find((h) => h.revalidating !== undefined)!;
    release();
    await winner.revalidating;
    expect(await fleet[1]!.refreshSurvivors(check, { ttlMs: 5000 })).toEqual(['new']);
    expect(checks).toBe(1);
  });

  test('survivors: a failed re-check keeps the stale list and frees the lock; with Redis down each process keeps its last list', async () => {
    const errors: unknown[] = [];
    const health = createRedisHealth(fromIoredis(redis), { onError: (e) => errors.push(e) });
    await health.publishSurvivors(['old'], 30);
    await sleep(60);
    expect(await health.refreshSurvivors(() => Promise.reject(new Error('check failed')), { ttlMs: 30, lockMs: 10_000 })).toEqual(['old']);
    await health.revalidating;
    expect(errors).toHaveLength(1);
    expect(await redis.exists('{endpoint-pool:}v2:survivors:lock')).toBe(0);
    expect(await health.readSurvivors()).toEqual(['old']);
    let down = false;
    const io = fromIoredis(redis);
    const flaky = createRedisHealth({ send: (a) => (down ? Promise.reject(new Error('connection lost')) : io.send(a)) }, { onError: () => undefined });
    expect(await flaky.refreshSurvivors(async () => ['x'], { ttlMs: 10_000 })).toEqual(['old']);
    await flaky.revalidating;
    down = true;
    expect(await flaky.refreshSurvivors(async () => ['y'], { ttlMs: 10_000 })).toEqual(['x']);
  });

  test('Refresher wired to the shared list: one process checks, the others install its survivors without checking', async () => {
    const candidates = ['a', 'b', 'c'].map((n) => ({ name: n, conn: n }));
    let checks = 0;
    const make = () => {
      const pool = new Pool<string>({ endpoints: [{ name: 'seed', conn: 'seed' }], classify: () => 'transient' });
      const health = createRedisHealth(fromIoredis(redis));
      const refresher = new Refresher(pool, { candidates, check: async (c) => (checks++, await sleep(20), c !== 'b'), shared: health, intervalMs: 10_000 });
      return { pool, refresher };
    };
    const fleet = [make(), make(), make()];
    await fleet[0]!.refresher.refresh();
    const results = await Promise.all(fleet.slice(1).map((m) => m.refresher.refresh()));
    expect(checks).toBe(3);
    for (const m of fleet) expect(m.pool.endpointNames).toEqual(['a', 'c']);
    for (const r of results) expect(r).toMatchObject({ fromShared: true, checked: 0 });
  });
});
