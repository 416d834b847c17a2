/**
 * Where a pooled `fetch` request's CPU goes, against a loopback server in this process:
 *   node bench/paths/fetch-variants.mjs '{"callers":1,"ms":4000,"only":["bare","pooled"]}'
 * Like fetch-worker.mjs (blocks in alternating order, CPU summed per client), with steps between a bare
 * `fetch` and `endpoint-pool/fetch`: a fresh controller's signal, a timeout signal,
 * `pool.execute` around `fetch` without and with the attempt's signal. Prints the median of
 * the per-round CPU ratios of each client to the bare `fetch`, and each one's CPU per request.
 */
import http from 'node:http';

const args = JSON.parse(process.argv[2] ?? '{}');
const { callers = 1, ms = 3000, block = callers === 1 ? 50 : 5, only } = args;
const dist = args.dist ?? new URL('../../dist/', import.meta.url).href;
const { createPooledFetch } = await import(new URL('fetch/index.js', dist).href);
const { Pool } = await import(new URL('index.js', dist).href);

let connections = 0;
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
  res.end('ok');
});
server.on('connection', () => connections++);
server.keepAliveTimeout = 60_000;
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;
const url = `${base}/x`;
const pooled = createPooledFetch({ endpoints: [base] });
const pool = new Pool({ endpoints: [{ name: 'a', conn: url }], classify: () => 'transient' });
const all = {
  bare: async () => (await fetch(url)).text(),
  // The same as `bare` (an A/A check: what the harness shows for no difference at all).
  bare2: async () => (await fetch(url)).text(),
  controller: async () => (await fetch(url, { signal: new AbortController().signal })).text(),
  timeout: async () => (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text(),
  execute: async () => (await pool.execute((u) => fetch(u))).text(),
  executeController: async () => (await pool.execute((u) => fetch(u, { signal: new AbortController().signal }))).text(),
  executeSignal: async () => (await pool.execute((u, ctx) => fetch(u, { signal: ctx.signal }))).text(),
  pooled: async () => (await pooled('/x')).text(),
};
// A second build (`"dist2": "file:///path/to/dist/"`): its adapter and pool.execute + ctx.signal as `pooled2`, `executeSignal2`.
if (args.dist2 !== undefined) {
  const second = await import(new URL('fetch/index.js', args.dist2).href);
  const core2 = await import(new URL('index.js', args.dist2).href);
  const pooled2 = second.createPooledFetch({ endpoints: [base] });
  const pool2 = new core2.Pool({ endpoints: [{ name: 'a', conn: url }], classify: () => 'transient' });
  all.pooled2 = async () => (await pooled2('/x')).text();
  all.executeSignal2 = async () => (await pool2.execute((u, ctx) => fetch(u, { signal: ctx.signal }))).text();
}
const names = only ?? Object.keys(all);
if (!names.includes('bare')) names.unshift('bare');

const cpu = {};
const main = {};
const count = {};
// The main thread alone (Node >= 23.9): the rest of process CPU is the collector's and libuv's helper threads.
const thread = typeof process.threadCpuUsage === 'function' ? () => process.threadCpuUsage() : undefined;
async function runBlock(name, record) {
  const call = all[name];
  const c0 = process.cpuUsage();
  const t0 = thread?.();
  const loops = [];
  for (let k = 0; k < callers; k++) loops.push((async () => { for (let i = 0; i < block; i++) await call(); })());
  await Promise.all(loops);
  const d = process.cpuUsage(c0);
  const td = t0 === undefined ? undefined : process.threadCpuUsage(t0);
  if (record) {
    cpu[name] = (cpu[name] ?? 0) + d.user + d.system;
    if (td !== undefined) main[name] = (main[name] ?? 0) + td.user + td.system;
    count[name] = (count[name] ?? 0) + block * callers;
  }
}
const warmEnd = Date.now() + Math.min(500, ms / 4);
while (Date.now() < warmEnd) for (const n of names) await runBlock(n, false);
const c0 = connections;
const rounds = Object.fromEntries(names.map((n) => [n, []]));
const mainRounds = Object.fromEntries(names.map((n) => [n, []]));
const end = Date.now() + ms;
let r = 0;
while (Date.now() < end) {
  const before = { ...cpu };
  const beforeMain = { ...main };
  // Each client takes every position in turn: the rounds rotate the order (an ABCCBA round
  // reversed is itself, so alternating its direction alone left `bare` always at the ends).
  const k = r % names.length;
  const rotated = [...names.slice(k), ...names.slice(0, k)];
  const order = Math.floor(r++ / names.length) % 2 === 0 ? rotated : rotated.reverse();
  for (const n of [...order, ...[...order].reverse()]) await runBlock(n, true);
  const spent = (n) => cpu[n] - (before[n] ?? 0);
  for (const n of names) rounds[n].push(spent(n) / spent('bare'));
  if (thread !== undefined) for (const n of names) mainRounds[n].push((main[n] - (beforeMain[n] ?? 0)) / (main.bare - (beforeMain.bare ?? 0)));
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
await pooled.pool.close();
await pool.close();
server.closeAllConnections?.();
server.close();
const out = { node: process.version, callers, rounds: r, newConnections: connections - c0 };
for (const n of names) out[n] = { usPerReq: +(cpu[n] / count[n]).toFixed(1), roundRatio: +med(rounds[n]).toFixed(3), ratio: +((cpu[n] / count[n]) / (cpu.bare / count.bare)).toFixed(3),
  ...(thread === undefined ? {} : { mainUsPerReq: +(main[n] / count[n]).toFixed(1), mainRoundRatio: +med(mainRounds[n]).toFixed(3) }) };
console.log(JSON.stringify(out));
