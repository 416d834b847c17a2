/**
 * Many calls waiting for rate-limit tokens at once: the event loop must stay responsive.
 *
 * N calls are started together on a pool of two keys paced at 500 calls/s each, with a
 * 60 s deadline (so every waiting call also holds a deadline timer), on the real clock.
 * For `--ms` after they are queued, the event loop's delay is sampled
 * (`monitorEventLoopDelay`, 10 ms resolution); then the pool is closed, failing the rest.
 * Goal (issue 14): p99 ≤ 20 ms at 100,000 waiters.
 *
 *   node bench/waiters/run.mjs [--n 100000] [--ms 3000]
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool } from '../../dist/index.js';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};

export async function measure(n, ms) {
  const pool = new Pool({
    endpoints: ['k1', 'k2'].map((name) => ({ name, conn: name, rateLimit: { perSecond: 500, mode: 'paced', marginMs: 0 } })),
    classify: () => 'transient',
    strategy: 'health',
    deadlineMs: 60_000,
  });
  let served = 0;
  let failed = 0;
  const op = async () => served++;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) pool.execute(op).catch(() => failed++);
  const enqueueMs = performance.now() - t0;
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await new Promise((r) => setTimeout(r, ms));
  h.disable();
  const servedInWindow = served;
  const c0 = performance.now();
  await pool.close();
  const closeMs = performance.now() - c0;
  const q = (p) => Math.round(h.percentile(p) / 1e4) / 100;
  return { waiters: n, enqueueMs: Math.round(enqueueMs), windowMs: ms, servedInWindow, loopDelayMs: { p50: q(50), p99: q(99), max: Math.round(h.max / 1e4) / 100 }, closeMs: Math.round(closeMs), failedOnClose: failed };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const ms = arg('ms', 3000);
  const ns = process.argv.includes('--n') ? [arg('n', 100_000)] : [10_000, 50_000, 100_000];
  for (const n of ns) console.log(JSON.stringify(await measure(n, ms)));
}
