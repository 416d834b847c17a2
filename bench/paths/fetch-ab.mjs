/**
 * Pooled `fetch` against a bare `fetch` of the same loopback URL, in CPU time of the main
 * thread, with an A/A check and confidence intervals (issue 16):
 *   node bench/paths/fetch-ab.mjs '{"callers":1,"ms":30000}'
 *   node bench/paths/fetch-ab.mjs '{"callers":100,"ms":30000,"dist2":"file:///…/other/dist/"}'
 *
 * What it answers for, and how (see docs/performance.md, "fetch, tenth session"):
 * - The server is another process (the same node, not measured): only the client's work counts.
 * - CPU time of this process's main thread (`/proc/thread-self/schedstat`, ns; else
 *   `process.threadCpuUsage`, else process CPU): the collector's helper threads and V8's
 *   compiler threads, which keep compiling fetch's code in bursts for tens of thousands of
 *   requests on Node 26, are left out; what they do on the main thread counts for every client.
 * - Clients run in short blocks, in rounds; each round runs every client twice, in an order
 *   rotated from round to round (so no client keeps the first or the middle place), and a
 *   round's ratio is a client's CPU over the bare `fetch`'s in that round.
 * - `bare2` is a second bare `fetch` (the same code): its ratio shows what the method
 *   reports for no difference at all on this machine at this moment.
 * - Prints, per client: CPU µs per request, the geometric mean of the round ratios with a 95 %
 *   interval (mean of logs ± 1.96 standard errors), the median round ratio, and the ratios of
 *   the low quantiles (10th, 25th percentile) of the blocks' CPU time to the bare `fetch`'s:
 *   the blocks the host left alone (and that no collection hit: allocation is measured apart).
 * The guest's CPU time on these VMs also counts time the host takes from the virtual CPU
 * (no steal accounting), so single runs and short runs spread widely: read the interval and
 * the A/A ratio, not one figure.
 *
 * Options: `callers` (1), `ms` (measuring time, 20,000), `warm` (requests per client first,
 * 3,000), `block` (requests per client and block: 50 at 1 caller, 5 per caller at more),
 * `only` (client names; `bare` and `bare2` are always in), `init` ("headers" or "post": the bare and pooled requests' init), `dist` / `dist2` / `dist3` (builds: `pooled`,
 * `pooled2`, `pooled3`, `execute`), `server: "inproc"` (the server in this process, as fetch-worker.mjs).
 * More clients for `only` (decomposition): `timeout`, `passthrough`, `passNew`, `initEmpty`, `initKey`, `wrap`,
 * `refTwice`, `execute`, `executeUntimed`, `execStub`, `execStub2` (see their comments).
 */
import fs from 'node:fs';
import { loopback } from '../lib/loopback.mjs';

const args = JSON.parse(process.argv[2] ?? '{}');
const { callers = 1, ms = 20_000, warm = 3000, block = callers === 1 ? 50 : 5, only } = args;
const dist = args.dist ?? new URL('../../dist/', import.meta.url).href;

const server = await loopback({ child: args.server !== 'inproc' });
const base = server.base;
const url = `${base}/x`;
// `init`: every request of the bare and pooled clients carries it: "headers" (a GET with a key
// header) or "post" (a JSON POST, which the adapter guards against replay).
const INITS = {
  headers: { headers: { 'x-api-key': 'k' } },
  post: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' },
};
const init = args.init === undefined ? undefined : INITS[args.init];
if (args.init !== undefined && init === undefined) throw new Error(`init: one of ${Object.keys(INITS).join(', ')}`);

const all = {
  bare: async () => (await fetch(url, init)).text(),
  bare2: async () => (await fetch(url, init)).text(),
  timeout: async () => (await fetch(url, { signal: AbortSignal.timeout(600_000) })).text(),
  // A bare `fetch` given a dispatcher that hands the request to undici's global one unchanged:
  // what any `init.dispatcher` costs in undici (the pooled request's floor on Node).
  passthrough: async () => (await fetch(url, init === undefined ? { dispatcher: passthrough } : Object.assign({ dispatcher: passthrough }, init))).text(),
};
const passthrough = {
  dispatch(opts, handler) {
    const g = globalThis[Symbol.for('undici.globalDispatcher.2')] ?? globalThis[Symbol.for('undici.globalDispatcher.1')];
    return g.dispatch(opts, handler);
  },
};
// A fresh plain dispatcher per request (the adapter makes one per attempt), an empty init, a bare
// `fetch` wrapped in one more promise, and a bare `fetch` with a timer's ref/unref around it.
class PassOn { dispatch(opts, handler) { return passthrough.dispatch(opts, handler); } }
all.passNew = async () => (await fetch(url, { dispatcher: new PassOn() })).text();
all.initEmpty = async () => (await fetch(url, {})).text();
// An init with one key (fetch7): undici's Request constructor takes its longer path for any non-empty
// init (a second URL list, the headers list copied), which a dispatcher in the init also pays.
all.initKey = async () => (await fetch(url, { method: 'GET' })).text();
all.wrap = async () => (await new Promise((resolve, reject) => { fetch(url).then(resolve, reject); })).text();
const idleTimer = setTimeout(() => undefined, 1e7);
idleTimer.unref();
all.refTwice = async () => { idleTimer.ref(); const res = await fetch(url); idleTimer.unref(); return res.text(); };
const closers = [() => clearTimeout(idleTimer)];
async function addBuild(d, suffix) {
  const { createPooledFetch } = await import(new URL('fetch/index.js', d).href);
  const { Pool } = await import(new URL('index.js', d).href);
  const pooled = createPooledFetch({ endpoints: [base] });
  const pool = new Pool({ endpoints: [{ name: 'a', conn: url }], classify: () => 'transient' });
  all[`pooled${suffix}`] = init === undefined ? async () => (await pooled('/x')).text() : async () => (await pooled('/x', init)).text();
  all[`execute${suffix}`] = async () => (await pool.execute((u) => fetch(u))).text();
  // The same with no attempt timeout and no deadline: no timer armed, ref'd or unref'd per call.
  const untimed = new Pool({ endpoints: [{ name: 'a', conn: url }], classify: () => 'transient', attemptTimeoutMs: Infinity, deadlineMs: Infinity });
  all[`executeUntimed${suffix}`] = async () => (await untimed.execute((u) => fetch(u))).text();
  // Decomposition (fetch6; run with `only`): the pool's work on a stub operation before a bare `fetch`
  // (once and twice: the second call, warm, costs little), and a bare `fetch` wrapped in one more promise.
  const stubOp = () => Promise.resolve(1);
  all[`execStub${suffix}`] = async () => { await pool.execute(stubOp); return (await fetch(url)).text(); };
  all[`execStub2${suffix}`] = async () => { await pool.execute(stubOp); await pool.execute(stubOp); return (await fetch(url)).text(); };
  closers.push(() => pooled.pool.close(), () => pool.close(), () => untimed.close());
}
await addBuild(dist, '');
if (args.dist2 !== undefined) await addBuild(args.dist2, '2');
if (args.dist3 !== undefined) await addBuild(args.dist3, '3');
const names = [...new Set(['bare', 'bare2', ...(only ?? ['pooled', ...(args.dist2 === undefined ? [] : ['pooled2']), ...(args.dist3 === undefined ? [] : ['pooled3'])])])];

/** CPU time of this thread, ns. */
let clock = 'schedstat';
let threadNs;
try {
  fs.readFileSync('/proc/thread-self/schedstat', 'latin1');
  threadNs = () => Number(fs.readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]);
} catch {
  if (typeof process.threadCpuUsage === 'function') {
    clock = 'threadCpuUsage';
    threadNs = () => { const u = process.threadCpuUsage(); return (u.user + u.system) * 1000; };
  } else {
    clock = 'process cpuUsage';
    threadNs = () => { const u = process.cpuUsage(); return (u.user + u.system) * 1000; };
  }
}

async function runBlock(call, n) {
  const loops = [];
  for (let k = 0; k < callers; k++) loops.push((async () => { for (let i = 0; i < n; i++) await call(); })());
  await Promise.all(loops);
}
for (let i = 0; i < warm; i += block * callers) for (const n of names) await runBlock(all[n], block);

const cpu = Object.fromEntries(names.map((n) => [n, 0]));
const logs = Object.fromEntries(names.map((n) => [n, []]));
const blocks = Object.fromEntries(names.map((n) => [n, []]));
const end = Date.now() + ms;
let r = 0;
while (Date.now() < end) {
  const spent = Object.fromEntries(names.map((n) => [n, 0]));
  const k = r++ % names.length;
  const order = [...names.slice(k), ...names.slice(0, k)];
  for (const n of [...order, ...order.reverse()]) {
    const t0 = threadNs();
    await runBlock(all[n], block);
    const t = threadNs() - t0;
    spent[n] += t;
    blocks[n].push(t);
  }
  for (const n of names) {
    cpu[n] += spent[n];
    logs[n].push(Math.log(spent[n] / spent.bare));
  }
}
for (const c of closers) await c();
await server.close();

const count = r * 2 * block * callers;
const out = { node: process.version, callers, clock, server: args.server ?? 'child', rounds: r, requestsPerClient: count };
const q = (a, p) => [...a].sort((x, y) => x - y)[Math.floor(p * (a.length - 1))];
for (const n of names) {
  const l = logs[n];
  const mean = l.reduce((a, b) => a + b, 0) / l.length;
  const sd = Math.sqrt(l.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, l.length - 1));
  const half = (1.96 * sd) / Math.sqrt(l.length);
  const sorted = [...l].sort((a, b) => a - b);
  out[n] = {
    usPerReq: +(cpu[n] / 1000 / count).toFixed(1),
    ratio: +Math.exp(mean).toFixed(4),
    ci95: [+Math.exp(mean - half).toFixed(4), +Math.exp(mean + half).toFixed(4)],
    median: +Math.exp(sorted[sorted.length >> 1]).toFixed(4),
    // Low quantiles of the blocks' CPU: the blocks the host (and a collection) left alone.
    p10: +(q(blocks[n], 0.1) / q(blocks.bare, 0.1)).toFixed(4),
    p25: +(q(blocks[n], 0.25) / q(blocks.bare, 0.25)).toFixed(4),
  };
}
console.log(JSON.stringify(out));
