/**
 * A method only one node serves, against the number of endpoints: a viem client over
 * `poolTransport` over N `custom` nodes, all but the last answering "method not found" (-32601)
 * to `trace_x`, which the transport remembers; requests back to back for a few seconds after
 * every node has answered once; CPU per request (process time), beside the same client's
 * `eth_blockNumber` (which every node serves) in the same process.
 * Before the thirty-eighth session each such request looked every remembered answer up in
 * the list of live endpoints (records × endpoints: 13.5 ms per lookup at 3,000 endpoints,
 * 128 µs at 300, in isolation).
 *
 *   npm run build && node bench/paths/unsupported-scale.mjs [--ms 3000] [--sizes 10,100,300,1000]
 */
import { poolTransport } from '../../dist/viem/index.js';
import { createPublicClient, custom } from 'viem';

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ms = Number(opt('--ms', 3000));
const sizes = opt('--sizes', '10,100,300,1000').split(',').map(Number);

/** CPU µs per request of `method`, back to back for `ms`. */
async function cpuPerRequest(client, method) {
  const t0 = process.cpuUsage();
  const until = performance.now() + ms;
  let n = 0;
  while (performance.now() < until) {
    for (let k = 0; k < 20; k++) await client.request({ method });
    n += 20;
  }
  const u = process.cpuUsage(t0);
  return (u.user + u.system) / n;
}

for (const n of sizes) {
  const endpoints = Array.from({ length: n }, (_, i) => ({
    name: `e${i}`,
    provider: {
      request: async ({ method }) => {
        if (method === 'trace_x' && i !== n - 1) throw Object.assign(new Error('the method trace_x does not exist/is not available'), { code: -32601 });
        return '0x1';
      },
    },
  }));
  const client = createPublicClient({ transport: poolTransport({ endpoints, custom, maxAttempts: n + 1 }) });
  await client.request({ method: 'trace_x' }); // every node answers once: the refusals are remembered
  await cpuPerRequest(client, 'eth_blockNumber'); // warm-up
  const plain = await cpuPerRequest(client, 'eth_blockNumber');
  const one = await cpuPerRequest(client, 'trace_x');
  console.log(`${String(n).padStart(5)} endpoints: trace_x ${one.toFixed(1)} µs CPU per request, eth_blockNumber ${plain.toFixed(1)} µs (${(one / plain).toFixed(2)}×)`);
}
