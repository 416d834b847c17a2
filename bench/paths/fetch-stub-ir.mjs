/**
 * The pooled fetch's own path without a network, for instruction counts (issue 16):
 *   valgrind --tool=callgrind <node> --single-threaded bench/paths/fetch-stub-ir.mjs file:///…/dist/ <n>
 * n requests through `createPooledFetch` over a stub `fetch` that, like undici, leaves an
 * abort listener on the signal it is given. Instructions per request = the difference of
 * two runs' totals (say 60,000 and 20,000) over the difference of n.
 */
const dist = process.argv[2]; const N = Number(process.argv[3]);
const { createPooledFetch } = await import(dist + 'fetch/index.js');
const res = new Response('ok');
// Like undici: leaves an abort listener on the signal.
const stub = async (u, init) => { init.signal.addEventListener('abort', () => {}, { once: true }); return res; };
const pooled = createPooledFetch({ endpoints: ['http://127.0.0.1:1'], fetch: stub });
for (let i = 0; i < N; i++) await pooled('/x');
await pooled.pool.close();
