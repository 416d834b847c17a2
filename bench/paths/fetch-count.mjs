/**
 * Instructions per pooled / bare loopback `fetch` request, for valgrind (issue 16):
 *   valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
 *     <node> --single-threaded bench/paths/fetch-count.mjs '{"client":"pooled","n":2000,"warm":1500}'
 * or, doing the runs, the arithmetic and the interleaving itself: bench/paths/fetch-count.sh.
 *
 * Why not CPU time: on this project's VMs the guest's CPU time also counts time the host takes
 * the virtual CPU away (no steal accounting: /proc/stat's steal column stays 0), so the same
 * fixed loop costs 23-35 ms of CPU from one run to the next, and an A/A check (a bare `fetch`
 * against itself) in fetch-variants.mjs lands anywhere in 1.0-1.5x at load 7. Instructions
 * executed in user space do not depend on the host.
 *
 * Why the server is another process (not under valgrind, spawned with the same node): with
 * the server in the measured thread, how many event-loop turns, reads and `epoll` calls a
 * request takes depends on timing, and session 9's in-process counts moved 25-60 % between
 * windows. Here the measured thread is the client alone; under valgrind it is so slow that the
 * server's answer is always there when it polls.
 *
 * `client`: `bare`, `pooled` (endpoint-pool/fetch from `dist`), `pooled2` (from `dist2`),
 * `execute` (`pool.execute` around a bare `fetch`), `timeout` (a bare `fetch` with
 * `AbortSignal.timeout`), `controller` (a fresh controller's signal). `warm` requests first,
 * then `n` more; per-request instructions = (total(n2) - total(n1)) / (n2 - n1) over two runs.
 */
import { loopback } from '../lib/loopback.mjs';

const args = JSON.parse(process.argv[2] ?? '{}');
const { client, n, warm = 1500, callers = 1 } = args;
const dist = args.dist ?? new URL('../../dist/', import.meta.url).href;

const server = await loopback({ child: true });
const base = server.base;
const url = `${base}/x`;
// Under valgrind, loading undici on the first request can outlast a 10 s attempt timeout:
// load it first, and give the pools long timeouts (the same code path).
await (await fetch(url)).text();
const slow = { attemptTimeoutMs: 600_000, deadlineMs: 1_200_000 };
let close = async () => {};
const clients = {
  bare: async () => (await fetch(url)).text(),
  controller: async () => (await fetch(url, { signal: new AbortController().signal })).text(),
  timeout: async () => (await fetch(url, { signal: AbortSignal.timeout(600_000) })).text(),
};
if (client === 'pooled' || client === 'pooled2') {
  const { createPooledFetch } = await import(new URL('fetch/index.js', client === 'pooled' ? dist : args.dist2).href);
  const pooled = createPooledFetch({ endpoints: [base], ...slow });
  clients[client] = async () => (await pooled('/x')).text();
  close = () => pooled.pool.close();
}
if (client === 'execute') {
  const { Pool } = await import(new URL('index.js', dist).href);
  const pool = new Pool({ endpoints: [{ name: 'a', conn: url }], classify: () => 'transient', ...slow });
  clients.execute = async () => (await pool.execute((u) => fetch(u))).text();
  close = () => pool.close();
}
const call = clients[client];
if (call === undefined) throw new Error(`unknown client ${client}`);
// `marks`: a line on stdout every so many requests (to place --trace-opt lines, say).
const { marks = 0 } = args;
async function run(total) {
  const loops = [];
  let done = 0;
  const one = marks === 0 ? call : async () => { await call(); if (++done % marks === 0) console.log('# mark', done); };
  for (let k = 0; k < callers; k++) loops.push((async () => { for (let i = 0; i < total / callers; i++) await one(); })());
  await Promise.all(loops);
}
await run(warm);
if (args.mark) console.log('# window start');
await run(n);
if (args.mark) console.log('# window end');
await close();
await server.close();
console.log('done', client, n);
