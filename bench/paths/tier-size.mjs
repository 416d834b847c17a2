/**
 * What a call costs as a tier grows: every strategy over 2, 10, 100 and 1,000 endpoints in one
 * tier, one caller, an operation that answers at once (so the figure is the pool's own work).
 *   node bench/paths/tier-size.mjs [distDir] [strategy...]
 * `distDir` (default: this checkout's dist) lets two builds be compared in turn. Each figure is
 * the median of 5 rounds of 20,000 calls after 20,000 to warm up, in ns per call.
 */
const root = new URL('../..', import.meta.url).pathname;
const args = process.argv.slice(2);
const dist = args[0]?.includes('/') ? args.shift() : `${root}dist`;
const { Pool } = await import(`${dist}/index.js`);
const strategies = args.length > 0 ? args : ['ordered', 'round-robin', 'random', 'latency', 'health'];
const SIZES = [2, 10, 100, 1000];
const op = async (c) => c;

async function perCall(pool, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await pool.execute(op);
  return Number(process.hrtime.bigint() - t0) / n;
}

const rows = {};
for (const strategy of strategies) {
  rows[strategy] = {};
  for (const size of SIZES) {
    const pool = new Pool({ endpoints: Array.from({ length: size }, (_, i) => ({ name: `e${i}`, conn: i })), strategy, classify: () => 'retryable' });
    await perCall(pool, 20_000);
    const rounds = [];
    for (let r = 0; r < 5; r++) rounds.push(await perCall(pool, 20_000));
    rounds.sort((a, b) => a - b);
    rows[strategy][size] = Math.round(rounds[2]);
    await pool.close();
  }
  console.log(`${strategy.padEnd(12)} ${SIZES.map((s) => `${s}: ${rows[strategy][s]} ns`).join(' | ')}`);
}
console.log(JSON.stringify({ node: process.version, dist, rows }));
