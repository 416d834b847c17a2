/**
 * `endpoint-pool/fetch` against a bare `fetch` of the same loopback URL, in one process:
 *   node fetch-worker.mjs '{"callers":1,"ms":2000}'   (optional "dist": another build's dist/ as a file: URL)
 * One server on 127.0.0.1 in this process; the two clients alternate in short blocks
 * (ABCCBA order, rotated each round) so that both see the same machine load, and the per-request times of each
 * are summed over all blocks, in wall time and in process CPU time. A third client is a bare
 * `fetch` given a timeout signal (`AbortSignal.timeout`): what a hand-written call that can
 * be cancelled pays (on Node 20, undici's handling of any signal costs 7-14 % of a loopback
 * request), the floor for a pooled request whose attempt timeout closes its HTTP request.
 * Prints `{ bareNs, pooledNs, ratio, bareCpuNs, pooledCpuNs, cpuRatio, timeoutCpuNs,
 * cpuVsTimeout, roundCpuRatio, roundCpuVsTimeout }` (the last two: medians of the per-round
 * ratios, steadier under load than the totals).
 */
import http from 'node:http';

const args = JSON.parse(process.argv[2] ?? '{}');
const { callers = 1, ms = 2000, block = callers === 1 ? 50 : 5 } = args;
// `"dist": "file:///path/to/dist/"` times another build (a session's start, say).
const { createPooledFetch } = await import(new URL('fetch/index.js', args.dist ?? new URL('../../dist/', import.meta.url).href).href);

const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
  res.end('ok');
});
server.keepAliveTimeout = 60_000;
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;
const url = `${base}/x`;
const pooled = createPooledFetch({ endpoints: [base] });
const clients = {
  bare: async () => (await fetch(url)).text(),
  pooled: async () => (await pooled('/x')).text(),
  timeout: async () => (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text(),
};

/** Process CPU time (user + system, µs) of each client's blocks: steadier than wall time on a loaded machine. */
const cpu = {};
async function runBlock(call, name) {
  const loops = [];
  const c0 = process.cpuUsage();
  const t = process.hrtime.bigint();
  for (let k = 0; k < callers; k++) loops.push((async () => { for (let i = 0; i < block; i++) await call(); })());
  await Promise.all(loops);
  const ns = Number(process.hrtime.bigint() - t);
  const d = process.cpuUsage(c0);
  if (name !== undefined) cpu[name] = (cpu[name] ?? 0) + d.user + d.system;
  return ns;
}

const total = { bare: 0, pooled: 0, timeout: 0 };
const count = { bare: 0, pooled: 0, timeout: 0 };
const rounds = { pooled: [], timeout: [] };
const warmEnd = Date.now() + Math.min(300, ms / 4);
while (Date.now() < warmEnd) for (const c of ['bare', 'pooled', 'timeout']) await runBlock(clients[c]);
const end = Date.now() + ms;
const names = ['bare', 'pooled', 'timeout'];
let r = 0;
while (Date.now() < end) {
  const before = { ...cpu };
  // Each client takes every position in turn (an ABCCBA round put `bare` always at the ends,
  // `timeout` always twice in the middle).
  const k = r++ % names.length;
  const order = [...names.slice(k), ...names.slice(0, k)];
  for (const c of [...order, ...order.reverse()]) {
    total[c] += await runBlock(clients[c], c);
    count[c] += block * callers;
  }
  const spent = (c) => cpu[c] - (before[c] ?? 0);
  rounds.pooled.push(spent('pooled') / spent('bare'));
  rounds.timeout.push(spent('pooled') / spent('timeout'));
}
const med = (a) => a.sort((x, y) => x - y)[a.length >> 1];
await pooled.pool.close();
server.closeAllConnections?.();
server.close();
const bareNs = total.bare / count.bare;
const pooledNs = total.pooled / count.pooled;
const bareCpuNs = (cpu.bare * 1000) / count.bare;
const pooledCpuNs = (cpu.pooled * 1000) / count.pooled;
const timeoutCpuNs = (cpu.timeout * 1000) / count.timeout;
console.log(
  JSON.stringify({
    ...args,
    requests: count.bare + count.pooled + count.timeout,
    bareNs,
    pooledNs,
    ratio: pooledNs / bareNs,
    bareCpuNs,
    pooledCpuNs,
    cpuRatio: pooledCpuNs / bareCpuNs,
    timeoutCpuNs,
    cpuVsTimeout: pooledCpuNs / timeoutCpuNs,
    roundCpuRatio: med(rounds.pooled),
    roundCpuVsTimeout: med(rounds.timeout),
  }),
);
