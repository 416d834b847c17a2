/**
 * poolTransport with and without `chainId` (viem's `custom` handed in, two EIP-1193 providers
 * answering at once), alternating blocks in one process: the chain check's cost on the plain
 * path once every node has answered (one look-up per request). Run after `npm run build`:
 *   node bench/paths/ab-chain.mjs 1     (callers)
 *   AA=1 node bench/paths/ab-chain.mjs 1   (both without: the noise of the comparison itself)
 */
import { createClient, custom } from 'viem';
import { poolTransport } from '../../dist/viem/index.js';
const request = async ({ method }) => (method === 'eth_chainId' ? '0x1' : 42);
const make = (extra) => { const t = poolTransport({ custom, endpoints: [{ name: 'a', provider: { request } }, { name: 'b', provider: { request } }], ...extra }); const c = createClient({ transport: t }); return () => c.request({ method: 'eth_blockNumber' }); };
const v = { off: make({}), on: make(process.env.AA ? {} : { chainId: 1 }) };
const callers = Number(process.argv[2] ?? 1);
const block = callers === 1 ? 2000 : 50;
async function run(call) { const t = process.hrtime.bigint(); const l = []; for (let k = 0; k < callers; k++) l.push((async () => { for (let i = 0; i < block; i++) await call(); })()); await Promise.all(l); return Number(process.hrtime.bigint() - t); }
for (let i = 0; i < 200; i++) { await run(v.off); await run(v.on); }
const tot = { off: 0, on: 0 }; let n = 0;
const end = Date.now() + 4000;
while (Date.now() < end) { const o = n % 2 ? ['on', 'off'] : ['off', 'on']; for (const k of o) tot[k] += await run(v[k]); n++; }
const per = (k) => tot[k] / (n * block * callers);
console.log(`callers ${callers}: off ${per('off').toFixed(0)} ns, on ${per('on').toFixed(0)} ns, ratio ${(per('on') / per('off')).toFixed(3)}`);
