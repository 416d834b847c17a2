/**
 * One process of a fleet test: a pool on the built package (dist/), sharing its quotas
 * through Redis, calling as fast as its endpoints allow, logging when each call reaches
 * the (fake) upstream. Driven by its parent over IPC: config → 'ready' → go → results.
 */
import Redis from 'ioredis';
import { Pool } from '../../dist/index.js';
import { createRedisStore, fromIoredis } from '../../dist/redis/index.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

process.once('message', async (cfg) => {
  const redis = new Redis({ host: '127.0.0.1', port: cfg.port, enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  redis.on('error', () => undefined);
  await new Promise((resolve) => redis.once('ready', resolve));
  const store = createRedisStore(fromIoredis(redis), { ...cfg.storeOptions, prefix: cfg.prefix });
  const events = [];
  const pool = new Pool({
    endpoints: cfg.endpoints.map((e) => ({ ...e, conn: e.name })),
    groups: cfg.groups,
    classify: () => 'transient',
    strategy: 'round-robin',
    deadlineMs: cfg.deadlineMs ?? 3000,
    sharedQuota: { store, timeoutMs: cfg.timeoutMs, retryAfterMs: cfg.retryAfterMs, degradedShare: cfg.degradedShare },
    onEvent: (e) => {
      if (e.type === 'store-degraded' || e.type === 'store-recovered') events.push({ type: e.type, t: Date.now() });
    },
  });
  const log = [];
  const failed = {};
  let ok = 0;
  process.send({ ready: true });
  const go = await new Promise((resolve) => process.once('message', resolve));
  await sleep(Math.max(0, go.startAt - Date.now()));
  const end = go.startAt + go.durationMs;
  const loop = async () => {
    while (Date.now() < end) {
      try {
        await pool.execute(async (name) => {
          log.push([name, Date.now()]);
          await sleep(cfg.opMs);
        });
        ok++;
      } catch (e) {
        failed[e.code] = (failed[e.code] ?? 0) + 1;
        await sleep(10);
      }
    }
  };
  await Promise.all(Array.from({ length: cfg.concurrency }, loop));
  await pool.close();
  process.send({ log, events, ok, failed });
  redis.disconnect();
  process.disconnect();
});
