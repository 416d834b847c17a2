/**
 * CPU time per call of one build of the core, in a fresh process (the other half of
 * ab-core.mjs: two builds in one process share their JIT's luck and position; fresh
 * processes alternated do not):
 *   node bench/paths/core-cpu.mjs /path/to/dist [full|signal]
 * Runs the same pool as ab-core.mjs (every core option on; `signal`: the operation reads
 * `ctx.signal`), 100,000 calls of warm-up, then prints the process CPU time per call (ns)
 * over 200,000 more. Alternate two builds over ten or so pairs and compare the medians.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [dist, mode = 'full'] = process.argv.slice(2);
const { Pool } = await import(pathToFileURL(path.resolve(dist, 'index.js')).href);
const noop = { increment() {}, observe() {} };
const sig = mode === 'signal';
const pool = new Pool({ endpoints: ['a', 'b', 'c'].map((name, i) => ({ name, conn: i, rateLimit: { perSecond: 1e6 } })), classify: () => 'transient', attemptTimeoutMs: 10_000, deadlineMs: 30_000, ...(sig ? {} : { breaker: { threshold: 5, cooldownMs: 5_000 } }), metrics: noop });
const call = sig ? () => pool.execute((_c, ctx) => (ctx.signal, Promise.resolve(42))) : () => pool.execute(() => Promise.resolve(42));
for (let i = 0; i < 100_000; i++) await call();
const c0 = process.cpuUsage();
for (let i = 0; i < 200_000; i++) await call();
const d = process.cpuUsage(c0);
console.log(Math.round(((d.user + d.system) * 1000) / 200_000));
await pool.close();
