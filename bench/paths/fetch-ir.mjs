/**
 * One client's loopback requests, for instruction counts (issue 16; a busy machine's CPU
 * times spread too widely to show a few per cent):
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null <node> --single-threaded \
 *     bench/paths/fetch-ir.mjs '{"client":"pooled","n":2500,"callers":1,"dist":"file:///…/dist/"}'
 * The server runs in this process, as in fetch-worker.mjs (so its work counts for every
 * client alike). `client`: `bare` (a bare `fetch`), `controller` (a bare `fetch` with a fresh
 * controller's signal), `pooled` (`endpoint-pool/fetch` from `dist`), `passthrough` (a bare
 * `fetch` given a dispatcher that hands the request to undici's global one unchanged),
 * `execute` (`pool.execute` around a bare `fetch`, no signal). 500 requests warm up
 * first; instructions per request = the difference of two runs' totals (n = 2500 and 500,
 * say) over the difference of n.
 */
import http from 'node:http';

const { client, n, callers = 1, dist = new URL('../../dist/', import.meta.url).href } = JSON.parse(process.argv[2]);
const { createPooledFetch } = await import(new URL('fetch/index.js', dist).href);
const { Pool } = await import(new URL('index.js', dist).href);
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
  res.end('ok');
});
server.keepAliveTimeout = 60_000;
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;
const url = `${base}/x`;
// Under valgrind on a busy machine, loading undici on the first request can outlast the default
// 10 s attempt timeout: load it first, and give the pools long timeouts (same code path).
await (await fetch(url)).text();
const slow = { attemptTimeoutMs: 600_000, deadlineMs: 1_200_000 };
const pooled = createPooledFetch({ endpoints: [base], ...slow });
const pool = new Pool({ endpoints: [{ name: 'a', conn: url }], classify: () => 'transient', ...slow });
// Hands each request to undici's global dispatcher unchanged: what passing any dispatcher costs.
const passthrough = {
  dispatch(opts, handler) {
    const g = globalThis[Symbol.for('undici.globalDispatcher.2')] ?? globalThis[Symbol.for('undici.globalDispatcher.1')];
    return g.dispatch(opts, handler);
  },
};
const clients = {
  bare: async () => (await fetch(url)).text(),
  controller: async () => (await fetch(url, { signal: new AbortController().signal })).text(),
  pooled: async () => (await pooled('/x')).text(),
  passthrough: async () => (await fetch(url, { dispatcher: passthrough })).text(),
  execute: async () => (await pool.execute((u) => fetch(u))).text(),
};
const call = clients[client];
async function run(total) {
  const loops = [];
  for (let k = 0; k < callers; k++) loops.push((async () => { for (let i = 0; i < total / callers; i++) await call(); })());
  await Promise.all(loops);
}
await run(500);
await run(n);
console.log('done', client, n);
await pooled.pool.close();
await pool.close();
server.closeAllConnections?.();
server.close();
