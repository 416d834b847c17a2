/**
 * The pooled fetch's own path on Node's hot path (the global `fetch`, an attempt's dispatcher)
 * with no network, builds side by side in one process (fetch6, issue 16):
 *   node bench/paths/fetch-stub-ab.mjs '{"ms":15000,"block":2000,"init":"post","dists":{"base":"file:///…/a/dist/","baseCopy":"file:///…/copy-of-a/dist/","new":"file:///…/b/dist/"}}'
 * The global `fetch` is a stub that calls `init.dispatcher` (as undici does) and a stub global
 * dispatcher that answers at once, so the probe learns the dispatcher path. Rounds run every build
 * twice in rotated order; a round's ratio is a build's CPU over the first build's; prints ns per
 * request, the geometric mean ratio with a 95 % interval, and the median. CPU is the process's
 * (`process.cpuUsage`: exact; the thread's schedstat only moves at ticks, too coarse for blocks
 * of a few ms). For the A/A check give a copy of a build in another directory: the same URL twice
 * is one module, one set of compiled code, and shows 1.00 whatever the method's spread (copies of
 * one build differed by 3-4 % in one process, fetch6). Differences of tens of ns show here that no
 * loopback measurement can resolve (a loopback request is 100-300 µs).
 */
const args = JSON.parse(process.argv[2]);
const { ms = 15000, block = 200, warm = 20000 } = args;
// `"init"` sends each request with an init: "headers" (a GET with a key header), "post" (a JSON
// POST, not replayable: the adapter guards it), "post-idempotent" (the same marked idempotent),
// "signal" (the caller's signal), "pool-options" (a per-call deadline). `"token": true` gives the
// pooled fetch a `getToken` (a bearer token in every request's headers).
const BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';
const INITS = {
  headers: { headers: { 'x-api-key': 'k' } },
  post: { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY },
  'post-idempotent': { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY, idempotent: true },
  // The caller's own signal (one for every request, never aborted) and per-call pool options.
  signal: { signal: new AbortController().signal },
  'pool-options': { pool: { deadlineMs: 5_000 } },
};
const init = args.init === undefined ? undefined : INITS[args.init];
if (args.init !== undefined && init === undefined) throw new Error(`init: one of ${Object.keys(INITS).join(', ')}`);
const dists = args.dists; // {name: url}
const res = new Response('ok');
const ctl = { abort() {} };
globalThis[Symbol.for('undici.globalDispatcher.2')] = globalThis[Symbol.for('undici.globalDispatcher.1')] = {
  dispatch(opts, h) { h.onRequestStart(ctl, {}); h.onResponseStart(ctl, 200, {}, 'OK'); h.onResponseEnd(ctl, {}); return true; },
};
globalThis.fetch = function stubFetch(url, init) {
  const d = init?.dispatcher;
  if (d !== undefined) d.dispatch({}, { onRequestStart() {}, onResponseStart() {}, onResponseData() {}, onResponseEnd() {}, onResponseError() {} });
  return Promise.resolve(res);
};
const all = {};
const closers = [];
for (const [name, d] of Object.entries(dists)) {
  const { createPooledFetch } = await import(new URL('fetch/index.js', d).href);
  const p = createPooledFetch({ endpoints: ['http://127.0.0.1:1'], ...(args.token === true ? { getToken: async () => 'token' } : {}) });
  all[name] = init === undefined ? () => p('/x') : () => p('/x', init);
  closers.push(() => p.pool.close());
}
const names = Object.keys(all);
const threadNs = () => { const u = process.cpuUsage(); return (u.user + u.system) * 1000; };
async function runBlock(call, n) { for (let i = 0; i < n; i++) await call(); }
for (let i = 0; i < warm; i += block) for (const n of names) await runBlock(all[n], block);
const logs = Object.fromEntries(names.map((n) => [n, []]));
const cpu = Object.fromEntries(names.map((n) => [n, 0]));
const end = Date.now() + ms; let r = 0;
while (Date.now() < end) {
  const spent = Object.fromEntries(names.map((n) => [n, 0]));
  const k = r++ % names.length;
  const order = [...names.slice(k), ...names.slice(0, k)];
  for (const n of [...order, ...order.reverse()]) { const t0 = threadNs(); await runBlock(all[n], block); spent[n] += threadNs() - t0; }
  for (const n of names) { cpu[n] += spent[n]; logs[n].push(Math.log(spent[n] / spent[names[0]])); }
}
for (const c of closers) await c();
const count = r * 2 * block;
const out = { node: process.version, rounds: r };
for (const n of names) {
  const l = logs[n]; const mean = l.reduce((a, b) => a + b, 0) / l.length;
  const sd = Math.sqrt(l.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, l.length - 1)); const half = 1.96 * sd / Math.sqrt(l.length);
  const sorted = [...l].sort((a, b) => a - b);
  out[n] = { nsPerReq: Math.round(cpu[n] / count), ratio: +Math.exp(mean).toFixed(4), ci95: [+Math.exp(mean - half).toFixed(4), +Math.exp(mean + half).toFixed(4)], median: +Math.exp(sorted[sorted.length >> 1]).toFixed(4) };
}
console.log(JSON.stringify(out));
