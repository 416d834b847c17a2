// Run: npx tsup && node examples/viem-failover.mjs
// Two local ganache nodes behind one viem client; the first one dies halfway through.
import ganache from 'ganache';
import { createPublicClient, http } from 'viem';
import { poolTransport } from 'endpoint-pool/viem';

const start = async () => {
  const server = ganache.server({ logging: { quiet: true }, chain: { chainId: 1337 } });
  await server.listen(0, '127.0.0.1');
  return { server, url: `http://127.0.0.1:${server.address().port}` };
};
const [a, b] = await Promise.all([start(), start()]);

const transport = poolTransport({
  endpoints: [
    { name: 'primary', url: a.url },
    { name: 'backup', url: b.url },
  ],
  http, // viem's own http() builds each endpoint's transport
  chainId: 1337, // each node is asked eth_chainId before its first request: one of another chain never serves
  attemptTimeoutMs: 2_000,
  breaker: { threshold: 2, cooldownMs: 30_000 },
});
const client = createPublicClient({ transport });

let errors = 0;
for (let i = 0; i < 20; i++) {
  if (i === 10) await a.server.close(); // the primary goes away
  try {
    await client.getBlockNumber({ cacheTime: 0 });
  } catch {
    errors++;
  }
}
console.log('caller-visible errors:', errors);
console.table(transport.pool.stats().map(({ name, attempts, successes, failures, breaker }) => ({ name, attempts, successes, failures, breaker: typeof breaker === 'string' ? breaker : breaker.state })));

await transport.pool.close();
await b.server.close();
