#!/usr/bin/env node
/**
 * Benchmark of endpoint-pool's Redis store against bottleneck's Redis clustering, on a
 * throwaway redis-server on 127.0.0.1 (run `npm run build` first; `npm run bench:redis`
 * does).
 *
 * 1. Admission overhead: sequential calls through each limiter (a no-op operation, a limit
 *    far above the call rate, so that nothing waits): time per call, and Redis commands
 *    per call.
 * 2. Combined-rate accuracy: 1, 4 and 16 processes share 9 keys limited to 10 calls/s each
 *    (paced: calls spaced 100 ms; bottleneck: minTime 100), every process calling every key
 *    as fast as allowed. From the upstream arrival log: the share of the 90 calls/s of
 *    capacity used, the most calls on one key in any 1 s window (ceiling 10), the share of
 *    gaps on a key under 90 ms, and Redis commands per call.
 *
 * Writes bench/results/redis.md.
 */
import { fork } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Bottleneck from 'bottleneck';
import Redis from 'ioredis';
import { Pool } from '../dist/index.js';
import { createRedisStore, fromIoredis } from '../dist/redis/index.js';
import { redisServerAvailable, startRedis } from '../scripts/redis-server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const KEYS = 9;
const PER_SECOND = 10;
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000);
const OVERHEAD_CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const PROCESS_COUNTS = (process.env.BENCH_PROCESSES ?? '1,4,16').split(',').map(Number);

if (!redisServerAvailable()) {
  console.error('redis-server is not installed (apt-get install -y redis-server)');
  process.exit(1);
}

const server = await startRedis();
const port = server.port;
const admin = new Redis({ host: '127.0.0.1', port });
const commandsProcessed = async () => Number(/total_commands_processed:(\d+)/.exec(await admin.info('stats'))[1]);
/** Script runs sent by clients (EVALSHA + EVAL): one round trip each. */
const scriptRuns = async () => {
  const stats = await admin.info('commandstats');
  let n = 0;
  for (const m of stats.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)) n += Number(m[2]);
  return n;
};
const redisVersion = /redis_version:(\S+)/.exec(await admin.info('server'))[1];

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Sequential calls: mean, p50 and p99 in µs, and Redis commands per call. */
async function overhead(name, run) {
  for (let i = 0; i < 300; i++) await run();
  const before = await commandsProcessed();
  const times = [];
  const t0 = performance.now();
  for (let i = 0; i < OVERHEAD_CALLS; i++) {
    const s = performance.now();
    await run();
    times.push((performance.now() - s) * 1000);
  }
  const total = (performance.now() - t0) * 1000;
  const commands = ((await commandsProcessed()) - before - 1) / OVERHEAD_CALLS;
  times.sort((a, b) => a - b);
  return { name, mean: total / OVERHEAD_CALLS, p50: quantile(times, 0.5), p99: quantile(times, 0.99), commands };
}

async function overheads() {
  const noop = () => Promise.resolve();
  const limit = { perSecond: 1e9, burst: 1e9 };
  const rows = [];
  rows.push(await overhead('(for scale: one bare setTimeout(0))', () => new Promise((r) => setTimeout(r, 0))));
  const local = new Pool({ endpoints: [{ name: 'a', conn: 'a', rateLimit: limit }], classify: () => 'transient' });
  rows.push(await overhead('endpoint-pool, local limits only', () => local.execute(noop)));
  const redis = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false });
  await new Promise((r) => redis.once('ready', r));
  let degraded = 0;
  const shared = new Pool({
    endpoints: [{ name: 'a', conn: 'a', rateLimit: limit }],
    classify: () => 'transient',
    sharedQuota: { store: createRedisStore(fromIoredis(redis), { prefix: 'overhead:' }), timeoutMs: 1000 },
    onEvent: (e) => e.type === 'store-degraded' && degraded++,
  });
  rows.push(await overhead('endpoint-pool + Redis store', () => shared.execute(noop)));
  if (degraded > 0) rows.at(-1).name += ` (${degraded} store timeouts)`;
  const bLocal = new Bottleneck({ minTime: 0, maxConcurrent: null });
  rows.push(await overhead('bottleneck, local', () => bLocal.schedule(noop)));
  const bRedis = new Bottleneck({ id: `overhead-${Date.now()}`, datastore: 'ioredis', clientOptions: { host: '127.0.0.1', port }, Redis, minTime: 0, maxConcurrent: null, timeout: 60_000 });
  bRedis.on('error', () => undefined);
  await bRedis.ready();
  rows.push(await overhead('bottleneck, Redis clustering', () => bRedis.schedule(noop)));
  await bRedis.disconnect();
  redis.disconnect();
  return rows;
}

function maxInWindow(ts, windowMs) {
  let best = 0;
  for (let i = 0, j = 0; j < ts.length; j++) {
    while (ts[j] - ts[i] >= windowMs) i++;
    best = Math.max(best, j - i + 1);
  }
  return best;
}

async function fleet(lib, processes) {
  const runId = `${lib}-${processes}-${Date.now()}`;
  const children = [];
  const results = [];
  const readies = [];
  for (let i = 0; i < processes; i++) {
    const child = fork(join(here, 'redis-worker.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(child);
    let onReady;
    readies.push(new Promise((r) => (onReady = r)));
    results.push(new Promise((resolve) => child.on('message', (m) => (m.ready ? onReady() : resolve(m)))));
    child.send({ lib, port, runId, keys: KEYS, perSecond: PER_SECOND, loopsPerKey: 2, opMs: 5, timeoutMs: 250, degradedShare: 1 / processes });
  }
  await Promise.all(readies);
  const startAt = Date.now() + 500;
  const before = await commandsProcessed();
  const runsBefore = await scriptRuns();
  for (const c of children) c.send({ startAt, durationMs: DURATION_MS });
  const all = await Promise.all(results);
  const commands = (await commandsProcessed()) - before - 2;
  const runs = (await scriptRuns()) - runsBefore;
  for (const c of children) if (c.exitCode === null) c.kill();
  const end = startAt + DURATION_MS;
  const perKey = new Map();
  for (const r of all) for (const [k, t] of r.log) if (t >= startAt && t < end) (perKey.get(k) ?? perKey.set(k, []).get(k)).push(t);
  let calls = 0;
  let worst = 0;
  let gaps = 0;
  let shortGaps = 0;
  let minGap = Infinity;
  for (const ts of perKey.values()) {
    ts.sort((a, b) => a - b);
    calls += ts.length;
    worst = Math.max(worst, maxInWindow(ts, 1000));
    for (let i = 1; i < ts.length; i++) {
      const g = ts[i] - ts[i - 1];
      gaps++;
      if (g < 90) shortGaps++;
      minGap = Math.min(minGap, g);
    }
  }
  return {
    lib,
    processes,
    used: calls / ((KEYS * PER_SECOND * DURATION_MS) / 1000),
    worst,
    shortGaps: gaps === 0 ? 0 : shortGaps / gaps,
    minGap,
    commandsPerCall: calls === 0 ? 0 : commands / calls,
    // Every call admitted, counted over the whole run (the log is cut to the window): round trips per admitted call.
    runsPerCall: all.reduce((n, r) => n + r.log.length, 0) === 0 ? 0 : runs / all.reduce((n, r) => n + r.log.length, 0),
    degraded: all.reduce((n, r) => n + r.degraded, 0),
  };
}

const pct = (x) => `${(x * 100).toFixed(1)} %`;
const us = (x) => `${x.toFixed(0)} µs`;

console.log(`redis-server ${redisVersion} on 127.0.0.1:${port}`);
const over = await overheads();
for (const r of over) console.log(r);
const runs = [];
for (const n of PROCESS_COUNTS) {
  for (const lib of ['pool', 'bottleneck']) {
    const r = await fleet(lib, n);
    console.log(r);
    runs.push(r);
  }
}
admin.disconnect();
await server.stop();

const name = (lib) => (lib === 'pool' ? 'endpoint-pool + Redis store (paced)' : 'bottleneck clustering (minTime)');
const md = `# Redis benchmark

Generated by \`npm run bench:redis\` (bench/redis.mjs) on ${new Date().toISOString().slice(0, 10)}: Node ${process.version}, ${cpus().length} cores
(load average at the end ${loadavg()[0].toFixed(1)}), redis-server ${redisVersion} on 127.0.0.1, ioredis client.

## Admission overhead (one process, ${OVERHEAD_CALLS} sequential calls, nothing waits)

| limiter | mean per call | p50 | p99 | Redis commands per call (inside scripts included) |
|---|---|---|---|---|
${over.map((r) => `| ${r.name} | ${us(r.mean)} | ${us(r.p50)} | ${us(r.p99)} | ${r.commands.toFixed(2)} |`).join('\n')}

## Combined rate: ${KEYS} keys × ${PER_SECOND} calls/s, shared by N processes (${DURATION_MS / 1000} s, 2 callers per key per process)

"Capacity used" is calls made over the ${KEYS * PER_SECOND} calls/s the keys allow; "worst 1 s" is the most calls on one key
in any sliding 1 s window (the ceiling is ${PER_SECOND}); "gaps < 90 ms" is the share of consecutive calls on a key closer
than 90 ms (the spacing is 100 ms; arrivals are logged when the operation starts, so a few ms of jitter is expected).

| processes (callers per key) | limiter | capacity used | worst 1 s (ceiling ${PER_SECOND}) | gaps < 90 ms | smallest gap | script runs (round trips) per admitted call | Redis commands per call (inside scripts included) | store timeouts |
|---|---|---|---|---|---|---|---|---|
${runs.map((r) => `| ${r.processes} (${r.processes * 2}) | ${name(r.lib)} | ${pct(r.used)} | ${r.worst} | ${pct(r.shortGaps)} | ${Number.isFinite(r.minGap) ? `${r.minGap} ms` : '–'} | ${r.runsPerCall.toFixed(2)} | ${r.commandsPerCall.toFixed(1)} | ${r.lib === 'pool' ? r.degraded : '–'} |`).join('\n')}

"Script runs per admitted call" counts the EVALSHA and EVAL commands the clients sent (INFO commandstats) over the calls
that reached the upstream: each is one round trip to Redis. endpoint-pool's store reserves a later slot for a refused call
(so it does not ask again) and sends the admissions of callers waiting on one key in one script run.
`;
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(join(here, 'results', 'redis.md'), md);
console.log(md);
process.exit(0);
