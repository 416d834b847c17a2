// Run: npx tsup && node examples/refresher.mjs
// Keep a pool's endpoints to the candidates that pass a health check, in the background.
import { createServer } from 'node:http';
import { Pool, Refresher } from 'endpoint-pool';

const listen = (status) =>
  new Promise((resolve) => {
    const server = createServer((_q, res) => {
      res.statusCode = status;
      res.end();
    }).listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${server.address().port}` }));
  });
const servers = await Promise.all([listen(200), listen(500), listen(200)]);
const candidates = servers.map((s, i) => ({ name: `candidate-${i}`, conn: s.url }));
const seed = [{ name: 'seed', conn: servers[0].url }];

const pool = new Pool({ endpoints: seed, classify: () => 'transient' });
const refresher = new Refresher(pool, {
  candidates,
  fallback: seed,
  intervalMs: 60_000,
  timeoutMs: 1_000,
  concurrency: 4,
  check: async (url, signal) => (await fetch(url, { signal })).ok,
  onRefresh: (r) => console.log('refreshed:', r.installed),
}).start();

console.log('before the first refresh:', pool.endpointNames); // calls never wait for it
await refresher.refresh(); // joins the refresh start() began
console.log('after:', pool.endpointNames);

refresher.stop();
await pool.close();
for (const s of servers) s.server.close();
