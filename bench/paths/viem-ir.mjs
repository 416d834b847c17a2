// node bench/paths/viem-ir.mjs <dist|-> <kind: pool|fallback|custom> <n> : n sequential client.request calls
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createClient, custom, fallback } from 'viem';
const [dist, kind, nArg] = process.argv.slice(2);
const request = async () => 42;
const req = { method: 'eth_blockNumber' };
let transport, close = async () => {};
if (kind === 'pool') {
  const { poolTransport } = await import(pathToFileURL(path.resolve(dist, 'viem/index.js')).href);
  transport = poolTransport({ endpoints: [{ name: 'a', transport: custom({ request }) }, { name: 'b', transport: custom({ request }) }] });
  close = () => transport.pool.close();
} else if (kind === 'fallback') transport = fallback([custom({ request }), custom({ request })]);
else transport = custom({ request });
const client = createClient({ transport });
const n = Number(nArg ?? 100000);
for (let i = 0; i < n; i++) await client.request(req);
await close();
