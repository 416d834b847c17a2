/**
 * Two builds of the core side by side in one process (before/after a change):
 *   node bench/paths/ab-core.mjs /path/to/before/dist /path/to/after/dist [callers]
 * Each build runs `pool-full` (every core option on) and the same with an operation that
 * reads `ctx.signal`, in alternating blocks so that both see the same machine load; prints the
 * process CPU time per call (ns) of each. On a shared machine, wall time between two fresh
 * processes moves by more than the difference being looked for; this does not.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [distA, distB, callersArg] = process.argv.slice(2);
const A = await import(pathToFileURL(path.resolve(distA, 'index.js')).href);
const B = await import(pathToFileURL(path.resolve(distB, 'index.js')).href);
const noop = { increment() {}, observe() {} };
const mk = (Pool, sig) => { const pool = new Pool({ endpoints: ['a', 'b', 'c'].map((name, i) => ({ name, conn: i, rateLimit: { perSecond: 1e6 } })), classify: () => 'transient', attemptTimeoutMs: 10_000, deadlineMs: 30_000, ...(sig ? {} : { breaker: { threshold: 5, cooldownMs: 5_000 } }), metrics: noop });
  return sig ? () => pool.execute((_c, ctx) => (ctx.signal, Promise.resolve(42))) : () => pool.execute(() => Promise.resolve(42)); };
const callers = Number(callersArg ?? 1);
const clients = { 'before-full': mk(A.Pool, false), 'after-full': mk(B.Pool, false), 'before-signal': mk(A.Pool, true), 'after-signal': mk(B.Pool, true) };
const names = Object.keys(clients); const cpu = {}; const wall = {}; let n = 0;
const block = callers === 1 ? 2000 : 50;
async function run(f) { const loops = []; for (let k = 0; k < callers; k++) loops.push((async () => { for (let i = 0; i < block; i++) await f(); })()); await Promise.all(loops); }
for (let w = 0; w < 20; w++) for (const k of names) await run(clients[k]);
const end = Date.now() + 4000; let rounds = 0;
while (Date.now() < end) { const order = rounds % 2 ? names : [...names].reverse(); for (const k of order) { const c0 = process.cpuUsage(); const t0 = process.hrtime.bigint(); await run(clients[k]); const d = process.cpuUsage(c0); cpu[k] = (cpu[k] ?? 0) + d.user + d.system; wall[k] = (wall[k] ?? 0) + Number(process.hrtime.bigint() - t0); } rounds++; }
const per = (m, k) => m[k] * (m === cpu ? 1000 : 1) / (rounds * block * callers);
console.log(JSON.stringify(Object.fromEntries(names.map((k) => [k, Math.round(per(cpu, k))]))));
