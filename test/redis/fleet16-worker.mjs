/**
 * One process of the 16-process fleet test: two pools on the built package sharing one
 * Redis store, their calls going to the upstream over HTTP. Keys in `cfg.rolling` are
 * `bucket` in the first pool and `paced` in the second; this process moves those keys'
 * callers from the first to the second at `switchAt` (a rolling deploy that changes `mode`).
 * Reports every call's duration, the store events and its event-loop lag.
 */
import { Agent, request } from 'node:http';
import Redis from 'ioredis';
import { Pool } from '../../dist/index.js';
import { createRedisStore, fromIoredis } from '../../dist/redis/index.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

process.once('message', async (cfg) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const get = (key) =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: cfg.upstreamPort, path: `/${key}`, agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end();
    });
  const redis = new Redis({ host: '127.0.0.1', port: cfg.port, enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  redis.on('error', () => undefined);
  await new Promise((resolve) => redis.once('ready', resolve));
  const store = createRedisStore(fromIoredis(redis), { prefix: cfg.prefix, slotGraceMs: cfg.guardMs });
  const events = [];
  const make = (name, rollingMode) =>
    new Pool({
      endpoints: cfg.keys.map((k) => {
        const rateLimit = { ...k.rateLimit };
        if (cfg.rolling.includes(k.name) && rollingMode === 'paced') {
          rateLimit.mode = 'paced';
          delete rateLimit.burst;
        }
        return { name: k.name, conn: k.name, rateLimit };
      }),
      classify: () => 'transient',
      deadlineMs: cfg.deadlineMs,
      maxAttempts: 1,
      sharedQuota: { store, timeoutMs: cfg.timeoutMs, retryAfterMs: cfg.retryAfterMs, degradedShare: cfg.degradedShare },
      onEvent: (e) => {
        if (e.type === 'store-degraded' || e.type === 'store-recovered') events.push({ pool: name, type: e.type, t: Date.now() });
      },
    });
  const before = make('before', 'bucket');
  const after = make('after', 'paced');
  // Warm up: connection up and script loaded before the clock starts.
  await store.acquire({ key: 'warmup', perSecond: 1000, burst: 1000, mode: 'bucket', marginMs: 0, perDay: undefined, dailyStopFraction: 1, dailyResetUtcHour: 0 });
  // Open the HTTP connections before the clock starts: a connection set up mid-run delays its first request.
  await Promise.all(Array.from({ length: cfg.keys.length * cfg.loopsPerKey }, () => get('warmup')));
  process.send({ ready: true });
  const go = await new Promise((resolve) => process.once('message', resolve));
  await sleep(Math.max(0, go.startAt - Date.now()));
  const end = go.startAt + go.durationMs;
  const switchAt = go.startAt + cfg.switchAtMs;
  let maxLagMs = 0;
  const lagTimer = setInterval(() => {
    const t = Date.now();
    setImmediate(() => (maxLagMs = Math.max(maxLagMs, Date.now() - t)));
  }, 50);
  const durations = [];
  const sent = [];
  const failed = {};
  let ok = 0;
  const byPool = { before: 0, after: 0 };
  const loop = async (key) => {
    while (Date.now() < end) {
      const pool = cfg.rolling.includes(key) && Date.now() >= switchAt ? after : before;
      const t0 = Date.now();
      try {
        await pool.execute(() => (sent.push([key, Date.now()]), get(key)), { pin: key });
        ok++;
        byPool[pool === before ? 'before' : 'after']++;
      } catch (e) {
        failed[e.code] = (failed[e.code] ?? 0) + 1;
        await sleep(20);
      }
      durations.push(Date.now() - t0);
    }
  };
  await Promise.all(cfg.keys.flatMap((k) => Array.from({ length: cfg.loopsPerKey }, () => loop(k.name))));
  clearInterval(lagTimer);
  await Promise.all([before.close(), after.close()]);
  process.send({ sent, events, ok, failed, byPool, maxCallMs: Math.max(0, ...durations), calls: durations.length, maxLagMs, roundTrips: store.roundTrips });
  agent.destroy();
  redis.disconnect();
  process.disconnect();
});
