/**
 * One process of the Redis benchmark (driven by bench/redis.mjs over IPC): calls every key
 * as fast as the shared limit allows, with endpoint-pool's Redis store or with
 * bottleneck's Redis clustering, and logs when each call reaches the (fake) upstream.
 */
import Bottleneck from 'bottleneck';
import Redis from 'ioredis';
import { Pool } from '../dist/index.js';
import { createRedisStore, fromIoredis } from '../dist/redis/index.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

process.once('message', async (cfg) => {
  const keys = Array.from({ length: cfg.keys }, (_, i) => `k${i}`);
  const log = [];
  const op = (key) => {
    log.push([key, Date.now()]);
    return sleep(cfg.opMs);
  };
  let call;
  let stop;
  let degraded = 0;
  if (cfg.lib === 'pool') {
    const redis = new Redis({ host: '127.0.0.1', port: cfg.port, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    redis.on('error', () => undefined);
    await new Promise((r) => redis.once('ready', r));
    const store = createRedisStore(fromIoredis(redis), { prefix: `${cfg.runId}:` });
    // Warm up: the connection is up and the script loaded before the clock starts.
    await store.acquire({ key: 'warmup', perSecond: 1000, burst: 1000, mode: 'bucket', marginMs: 0, perDay: undefined, dailyStopFraction: 1, dailyResetUtcHour: 0 });
    const pool = new Pool({
      endpoints: keys.map((k) => ({ name: k, conn: k, rateLimit: { perSecond: cfg.perSecond, mode: 'paced', marginMs: 0 } })),
      classify: () => 'transient',
      deadlineMs: 60_000,
      sharedQuota: { store, timeoutMs: cfg.timeoutMs, degradedShare: cfg.degradedShare },
      onEvent: (e) => {
        if (e.type === 'store-degraded') degraded++;
      },
    });
    call = (key) => pool.execute(op, { pin: key });
    stop = async () => {
      await pool.close();
      redis.disconnect();
    };
  } else {
    const connection = new Bottleneck.IORedisConnection({ clientOptions: { host: '127.0.0.1', port: cfg.port }, Redis });
    connection.on('error', () => undefined);
    const limiters = new Map(
      keys.map((k) => [k, new Bottleneck({ id: `${cfg.runId}-${k}`, datastore: 'ioredis', connection, minTime: 1000 / cfg.perSecond, maxConcurrent: null, timeout: 60_000 })]),
    );
    await Promise.all([...limiters.values()].map((l) => l.ready()));
    call = (key) => limiters.get(key).schedule(() => op(key));
    stop = async () => {
      await Promise.all([...limiters.values()].map((l) => l.stop({ dropWaitingJobs: true }).catch(() => undefined)));
      await connection.disconnect();
    };
  }
  process.send({ ready: true });
  const go = await new Promise((r) => process.once('message', r));
  await sleep(Math.max(0, go.startAt - Date.now()));
  const end = go.startAt + go.durationMs;
  let failed = 0;
  const loop = async (key) => {
    while (Date.now() < end) {
      try {
        await call(key);
      } catch {
        failed++;
      }
    }
  };
  const loops = keys.flatMap((k) => Array.from({ length: cfg.loopsPerKey }, () => loop(k)));
  await sleep(Math.max(0, end - Date.now()));
  await stop();
  await Promise.race([Promise.all(loops), sleep(2000)]);
  process.send({ log, degraded, failed });
  process.disconnect();
  setTimeout(() => process.exit(0), 100).unref();
});
