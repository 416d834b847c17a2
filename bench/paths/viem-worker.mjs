/**
 * viem clients side by side in one process: `custom` (the floor), `fallback` over two
 * `custom`, `poolTransport` over the same two at its defaults, and `poolTransport` with viem's
 * `custom` handed in over the same two providers (`viem-pool-direct`: no wrapper per endpoint):
 *   node viem-worker.mjs '{"callers":1,"ms":2000}'
 * The three alternate in short blocks (rotating order) so that all see the same machine
 * load; prints ns per request for each, in wall time and in process CPU time.
 */
import { pathContenders } from '../overhead/contenders.mjs';

const args = JSON.parse(process.argv[2] ?? '{}');
const { callers = 1, ms = 2000, block = callers === 1 ? 2_000 : 50 } = args;
const op = async () => 42;
const names = ['viem-custom', 'viem-fallback', 'viem-pool', 'viem-pool-direct'];
const clients = {};
for (const n of names) clients[n] = await pathContenders[n](op);

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

const total = Object.fromEntries(names.map((n) => [n, 0]));
const warmEnd = Date.now() + Math.min(400, ms / 4);
while (Date.now() < warmEnd) for (const n of names) await runBlock(clients[n].call);
const end = Date.now() + ms;
let rounds = 0;
while (Date.now() < end) {
  const order = names.slice(rounds % names.length).concat(names.slice(0, rounds % names.length));
  for (const n of order) total[n] += await runBlock(clients[n].call, n);
  rounds++;
}
for (const n of names) await clients[n].close();
const per = (n) => total[n] / (rounds * block * callers);
const cpuPer = (n) => (cpu[n] * 1000) / (rounds * block * callers);
console.log(JSON.stringify({ ...args, rounds, customNs: per('viem-custom'), fallbackNs: per('viem-fallback'), poolNs: per('viem-pool'), costVsFallback: per('viem-pool') / per('viem-fallback'), customCpuNs: cpuPer('viem-custom'), fallbackCpuNs: cpuPer('viem-fallback'), poolCpuNs: cpuPer('viem-pool'), cpuVsFallback: cpuPer('viem-pool') / cpuPer('viem-fallback'), directNs: per('viem-pool-direct'), directCpuNs: cpuPer('viem-pool-direct'), directCpuVsFallback: cpuPer('viem-pool-direct') / cpuPer('viem-fallback') }));
