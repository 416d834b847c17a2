/**
 * What `new Pool` costs, builds side by side in one process (twenty-second session):
 *   node bench/paths/construct.mjs '{"ms":4000,"sizes":[3,10],"dists":{"old":"file:///…/a/dist/","new":"file:///…/b/dist/"}}'
 * Each build makes pools of each size (default options, endpoints `{ name, conn }`) in
 * alternating blocks; prints the median ns per `new Pool` of each build and size. Matters where
 * pools are made often: one per request in a Worker, a `createPooledFetch` per tenant.
 */
const args = JSON.parse(process.argv[2] ?? '{}');
const { ms = 4000, sizes = [3, 10], block = 200 } = args;
const dists = args.dists ?? { main: new URL('../../dist/', import.meta.url).href };
const makers = {};
for (const [name, d] of Object.entries(dists)) {
  const { Pool } = await import(new URL('index.js', d).href);
  for (const n of sizes) {
    const endpoints = Array.from({ length: n }, (_, i) => ({ name: `e${i}`, conn: i }));
    makers[`${name} ${n}`] = () => new Pool({ endpoints, classify: () => 'transient' });
  }
}
const names = Object.keys(makers);
let sink;
const runBlock = (f) => { const t = process.hrtime.bigint(); for (let i = 0; i < block; i++) sink = f(); return Number(process.hrtime.bigint() - t) / block; };
for (let w = 0; w < 20; w++) for (const n of names) runBlock(makers[n]);
const samples = Object.fromEntries(names.map((n) => [n, []]));
const end = Date.now() + ms;
for (let r = 0; Date.now() < end; r++) for (const n of r % 2 ? names : [...names].reverse()) samples[n].push(runBlock(makers[n]));
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(JSON.stringify({ node: process.version, ...Object.fromEntries(names.map((n) => [n, Math.round(median(samples[n]))])) }), sink === undefined ? '' : '');
