// node bench/paths/viem-ir.mjs <dist|-> <pool|fallback|custom|wrap> <n> [--alloc]
// n sequential `client.request({ method: 'eth_blockNumber' })` over two viem `custom` transports
// (`pool`: poolTransport at its defaults from <dist>; `fallback`: viem's; `custom`: one alone;
// `wrap`: a transport that only passes each request on to a `custom` instance, the floor of any wrapper).
// For callgrind: instructions per request = (Ir(120000) - Ir(40000)) / 80000 (see NOTES-viem26.md).
// --alloc (Node 26+): also prints the bytes allocated per request over the last n/2 requests.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import { createClient, custom, fallback } from 'viem';

const [dist, kind, nArg, flag] = process.argv.slice(2);
const request = async () => 42;
const req = { method: 'eth_blockNumber' };
let transport;
let close = async () => {};
if (kind === 'pool') {
  const { poolTransport } = await import(pathToFileURL(path.resolve(dist, 'viem/index.js')).href);
  transport = poolTransport({ endpoints: [{ name: 'a', transport: custom({ request }) }, { name: 'b', transport: custom({ request }) }] });
  close = () => transport.pool.close();
} else if (kind === 'wrap') {
  // The floor of any transport over another: one viem transport whose request calls an inner `custom` instance.
  const inner = custom({ request })({ retryCount: 0 });
  const opts = { retryCount: 0 };
  const wrapped = (args) => inner.request(args, opts);
  transport = () => ({ config: { key: 'wrap', name: 'wrap', type: 'wrap', request: wrapped, retryCount: 0 }, request: wrapped, value: {} });
} else if (kind === 'fallback') transport = fallback([custom({ request }), custom({ request })]);
else transport = custom({ request });
const client = createClient({ transport });
const n = Number(nArg ?? 100000);
const half = n >> 1;
for (let i = 0; i < n - half; i++) await client.request(req);
const a0 = v8.getHeapStatistics().total_allocated_bytes;
for (let i = 0; i < half; i++) await client.request(req);
const a1 = v8.getHeapStatistics().total_allocated_bytes;
if (flag === '--alloc') console.log(JSON.stringify({ node: process.version, kind, bytesPerRequest: a0 === undefined ? null : Math.round((a1 - a0) / half) }));
await close();
