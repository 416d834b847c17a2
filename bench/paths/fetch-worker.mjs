/**
 * `endpoint-pool/fetch` against a bare `fetch` of the same loopback URL, in one process:
 *   node fetch-worker.mjs '{"callers":1,"ms":2000}'
 * One server on 127.0.0.1 in this process; the two clients alternate in short blocks
 * (ABBA order) so that both see the same machine load, and the per-request times of each
 * are summed over all blocks, in wall time and in process CPU time. Prints
 * `{ bareNs, pooledNs, ratio, bareCpuNs, pooledCpuNs, cpuRatio }`.
 */
import http from 'node:http';

const args = JSON.parse(process.argv[2] ?? '{}');
const { callers = 1, ms = 2000, block = callers === 1 ? 50 : 5 } = args;
const { createPooledFetch } = await import(new URL('../../dist/fetch/index.js', import.meta.url).href);

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

const total = { bare: 0, pooled: 0 };
const count = { bare: 0, pooled: 0 };
const warmEnd = Date.now() + Math.min(300, ms / 4);
while (Date.now() < warmEnd) for (const c of ['bare', 'pooled']) await runBlock(clients[c]);
const end = Date.now() + ms;
while (Date.now() < end) {
  for (const c of ['bare', 'pooled', 'pooled', 'bare']) {
    total[c] += await runBlock(clients[c], c);
    count[c] += block * callers;
  }
}
await pooled.pool.close();
server.closeAllConnections?.();
server.close();
const bareNs = total.bare / count.bare;
const pooledNs = total.pooled / count.pooled;
const bareCpuNs = (cpu.bare * 1000) / count.bare;
const pooledCpuNs = (cpu.pooled * 1000) / count.pooled;
console.log(JSON.stringify({ ...args, requests: count.bare + count.pooled, bareNs, pooledNs, ratio: pooledNs / bareNs, bareCpuNs, pooledCpuNs, cpuRatio: pooledCpuNs / bareCpuNs }));
