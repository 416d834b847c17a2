/**
 * Two builds of `poolTransport` side by side in one process, with viem's `custom` and
 * `fallback` beside them (issue 16):
 *   node bench/paths/ab-viem.mjs /path/to/before/dist /path/to/after/dist [callers] [ms]
 * Each client runs in short blocks, all of them once per round in rotating order, so that
 * they see the same machine load; per round, each client's process CPU time is divided by
 * `fallback`'s. Prints the median of those ratios over the rounds for each client (and the
 * mean CPU ns per request). On a machine loaded past its cores this is steadier than
 * ratios between fresh processes, which move by tens of percent.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createClient, custom, fallback } from 'viem';

const [distA, distB, callersArg, msArg] = process.argv.slice(2);
const A = await import(pathToFileURL(path.resolve(distA, 'viem/index.js')).href);
const B = await import(pathToFileURL(path.resolve(distB, 'viem/index.js')).href);
const callers = Number(callersArg ?? 1);
const ms = Number(msArg ?? 5000);
const request = async () => 42;
const req = { method: 'eth_blockNumber' };
const mkPool = (poolTransport) => {
  const transport = poolTransport({ endpoints: [{ name: 'a', transport: custom({ request }) }, { name: 'b', transport: custom({ request }) }] });
  const client = createClient({ transport });
  return { call: () => client.request(req), close: () => transport.pool.close() };
};
const viemClient = (transport) => {
  const client = createClient({ transport });
  return { call: () => client.request(req), close() {} };
};
const clients = {
  custom: viemClient(custom({ request })),
  fallback: viemClient(fallback([custom({ request }), custom({ request })])),
  before: mkPool(A.poolTransport),
  after: mkPool(B.poolTransport),
};
// With viem's `custom` handed in (builds that take it): the same two providers as endpoints,
// each request sent to its provider directly. Not part of ab-viem-runs.sh's before/after ratio.
try {
  const transport = B.poolTransport({ custom, endpoints: [{ name: 'a', provider: { request } }, { name: 'b', provider: { request } }] });
  const client = createClient({ transport });
  clients.afterDirect = { call: () => client.request(req), close: () => transport.pool.close() };
} catch {}
const names = Object.keys(clients);
const block = callers === 1 ? 1000 : 20;
async function run(f) {
  const loops = [];
  for (let k = 0; k < callers; k++) loops.push((async () => { for (let i = 0; i < block; i++) await f(); })());
  await Promise.all(loops);
}
const warmEnd = Date.now() + 500;
while (Date.now() < warmEnd) for (const k of names) await run(clients[k].call);
const ratios = Object.fromEntries(names.map((k) => [k, []]));
const cpu = Object.fromEntries(names.map((k) => [k, 0]));
const end = Date.now() + ms;
let rounds = 0;
while (Date.now() < end) {
  const order = names.slice(rounds % names.length).concat(names.slice(0, rounds % names.length));
  const d = {};
  for (const k of order) {
    const c0 = process.cpuUsage();
    await run(clients[k].call);
    const u = process.cpuUsage(c0);
    d[k] = u.user + u.system;
    cpu[k] += d[k];
  }
  for (const k of names) ratios[k].push(d[k] / d.fallback);
  rounds++;
}
for (const c of Object.values(clients)) await c.close();
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
console.log(JSON.stringify({
  node: process.version, callers, rounds,
  cpuVsFallback: Object.fromEntries(names.map((k) => [k, Math.round(median(ratios[k]) * 1000) / 1000])),
  cpuNs: Object.fromEntries(names.map((k) => [k, Math.round((cpu[k] * 1000) / (rounds * block * callers))])),
}));
