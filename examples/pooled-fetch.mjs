// Run: npx tsup && node examples/pooled-fetch.mjs
// A fetch over two base URLs: the first answers 503, the second serves.
import { createServer } from 'node:http';
import { createPooledFetch } from 'endpoint-pool/fetch';

const listen = (handler) =>
  new Promise((resolve) => {
    const server = createServer(handler).listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${server.address().port}` }));
  });
const down = await listen((_req, res) => {
  res.statusCode = 503;
  res.end();
});
const up = await listen((req, res) => res.end(JSON.stringify({ path: req.url })));

const pooledFetch = createPooledFetch({
  endpoints: [
    { name: 'eu', url: down.url },
    { name: 'us', url: up.url },
  ],
  attemptTimeoutMs: 2_000,
});

const res = await pooledFetch('/v1/items?limit=2', { headers: { accept: 'application/json' } });
console.log(res.status, await res.json());
console.table(pooledFetch.pool.stats().map(({ name, attempts, failures }) => ({ name, attempts, failures })));

await pooledFetch.pool.close();
down.server.close();
up.server.close();
