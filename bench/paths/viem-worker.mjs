/**
 * viem clients side by side in one process: `custom` (the floor), `fallback` over two
 * `custom`, and `poolTransport` over the same two at its defaults:
 *   node viem-worker.mjs '{"callers":1,"ms":2000}'
 * The three alternate in short blocks (rotating order) so that all see the same machine
 * load; prints ns per request for each.
 */
import { pathContenders } from '../overhead/contenders.mjs';

const args = JSON.parse(process.argv[2] ?? '{}');
const { callers = 1, ms = 2000, block = callers === 1 ? 2_000 : 50 } = args;
const op = async () => 42;
const names = ['viem-custom', 'viem-fallback', 'viem-pool'];
const clients = {};
for (const n of names) clients[n] = await pathContenders[n](op);

async function runBlock(call) {
  const loops = [];
  const t = process.hrtime.bigint();
  for (let k = 0; k < callers; k++) loops.push((async () => { for (let i = 0; i < block; i++) await call(); })());
  await Promise.all(loops);
  return Number(process.hrtime.bigint() - t);
}

const total = Object.fromEntries(names.map((n) => [n, 0]));
const warmEnd = Date.now() + Math.min(400, ms / 4);
while (Date.now() < warmEnd) for (const n of names) await runBlock(clients[n].call);
const end = Date.now() + ms;
let rounds = 0;
while (Date.now() < end) {
  const order = names.slice(rounds % 3).concat(names.slice(0, rounds % 3));
  for (const n of order) total[n] += await runBlock(clients[n].call);
  rounds++;
}
for (const n of names) await clients[n].close();
const per = (n) => total[n] / (rounds * block * callers);
console.log(JSON.stringify({ ...args, rounds, customNs: per('viem-custom'), fallbackNs: per('viem-fallback'), poolNs: per('viem-pool'), costVsFallback: per('viem-pool') / per('viem-fallback') }));
