/**
 * Head-aware routing against the number of endpoints: a viem client over `poolTransport`
 * with `heads` on (a poll every 100 ms) over N `custom` nodes whose heads move every 50 ms,
 * requests back to back for a few seconds; CPU per request (process time, poll included).
 * Before the thirty-sixth session every answer and every request swept all that was known
 * per endpoint against the endpoint list (a cost in N², N³ per poll): 9 / 61 / 637 / 91,885
 * µs per request at 10 / 100 / 300 / 1,000 endpoints on Node 20; 9 / 17 / 64 / 257 after.
 *
 * `--read balance` asks `eth_getBalance` of `latest` instead of the block number: a read that
 * needs a head, so each of its selections also asks routing which endpoints to avoid (the call's
 * `avoid`, forty-ninth session). Its first version read the clock for each endpoint asked and
 * worked out the lagging set each time: 11 / 205 / 11,128 µs per request at 10 / 100 / 1,000
 * endpoints against 9 / 18 / 150 before `avoid` (Node 20). Worked out once per selection now
 * (seeded by the routing the read began with), with linear list checks: 8-10 / 23-27 / 191
 * against 9 / 20 / 161 in the same run.
 *
 * `--quorum N` sends each read through `t.quorum(N)`. Head routing was asked what to avoid once
 * for each endpoint at each leg's launch, and worked the lagging set out each time: 65 / 2,878 /
 * 167,418 µs per read of `--read balance --quorum 3` at 10 / 100 / 1,000 endpoints (fiftieth
 * session). Once per launch of legs now, with sets for the list checks: 31 / 73 / 565.
 *
 *   npm run build && node bench/paths/heads-scale.mjs [--ms 3000] [--sizes 10,100,300,1000] [--read balance] [--quorum N]
 */
import { poolTransport } from '../../dist/viem/index.js';
import { createPublicClient, custom } from 'viem';

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ms = Number(opt('--ms', 3000));
const sizes = opt('--sizes', '10,100,300,1000').split(',').map(Number);
const balance = opt('--read', 'block') === 'balance';
// `--quorum N`: the reads go through `t.quorum(N)` (each a quorum read of N legs).
const quorum = Number(opt('--quorum', 0));
const ZERO = '0x0000000000000000000000000000000000000000';

for (const n of sizes) {
  let block = 100;
  const node = (i) => custom({ request: async ({ method }) => (method === 'eth_blockNumber' ? `0x${(block - (i % 3)).toString(16)}` : '0x1') });
  const t = poolTransport({ endpoints: Array.from({ length: n }, (_, i) => ({ name: `n${i}`, transport: node(i) })), heads: { maxLagBlocks: 1, pollMs: 100 }, strategy: 'round-robin' });
  const client = createPublicClient({ transport: quorum > 0 ? t.quorum(quorum) : t });
  const moving = setInterval(() => block++, 50);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let requests = 0;
  while (performance.now() - t0 < ms) {
    if (balance) await client.getBalance({ address: ZERO });
    else await client.getBlockNumber({ cacheTime: 0 });
    // A turn of the event loop now and then, for the poll's timers and answers.
    if (++requests % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const cpu = process.cpuUsage(cpu0);
  clearInterval(moving);
  await t.close();
  console.log(`${n} endpoints: ${requests} requests, ${Math.round((cpu.user + cpu.system) / requests)} µs of CPU per request`);
}
