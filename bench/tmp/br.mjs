import { custom } from 'viem';
const t = custom({ request: async () => 42 })({ retryCount: 0 });
const plain = new AbortController().signal;
const tracked = new AbortController().signal;
const H = Symbol('h'); tracked[H] = 1;
const list = [];
tracked.addEventListener = function (t, l) { list.push(l); };
tracked.removeEventListener = function (t, l) { list.pop(); };
async function run(name, opts) {
  for (let i = 0; i < 20000; i++) await t.request({ method: 'eth_blockNumber' }, opts);
  const s = process.hrtime.bigint();
  for (let i = 0; i < 50000; i++) await t.request({ method: 'eth_blockNumber' }, opts);
  console.log(name, Number(process.hrtime.bigint() - s) / 50000);
}

await run('plain', { retryCount: 0, signal: plain });
await run('tracked', { retryCount: 0, signal: tracked });

await run('tracked', { retryCount: 0, signal: tracked });
await run('none', { retryCount: 0 });
await run('tracked', { retryCount: 0, signal: tracked });
