/**
 * A call that walks the pool: N endpoints, all down but the last (transient failures, the
 * breakers kept closed), each call trying them one after another (the default `maxAttempts`
 * lets a call try every endpoint once). CPU per attempt, against N. Before the thirty-eighth
 * session each selection searched the call's tried list for every endpoint it walked past
 * (tried × endpoints, so N³ a call): 127 µs an attempt at 1,000 endpoints on Node 20, the
 * selection nine tenths of it; selection/marks.ts marks a long list on its endpoints instead.
 *
 *   npm run build && node bench/paths/walk-scale.mjs [--sizes 10,100,300,1000] [--dist ../../dist]
 */
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const dist = opt('--dist', new URL('../../dist', import.meta.url).pathname);
const { Pool } = await import(`${dist}/index.js`);
const sizes = opt('--sizes', '10,100,300,1000').split(',').map(Number);

for (const n of sizes) {
  const pool = new Pool({ endpoints: Array.from({ length: n }, (_, i) => ({ name: `e${i}`, conn: i })), classify: () => 'transient', breaker: { threshold: 1e9 }, deadlineMs: 1e9 });
  let attempts = 0;
  const down = new Error('down');
  const op = async (c) => {
    attempts++;
    if (c !== n - 1) throw down;
    return c;
  };
  for (let i = 0; i < 2; i++) await pool.execute(op); // warm-up
  attempts = 0;
  const calls = Math.max(3, Math.round(20_000 / n));
  const t0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) await pool.execute(op);
  const u = process.cpuUsage(t0);
  console.log(`${String(n).padStart(5)} endpoints: ${((u.user + u.system) / attempts).toFixed(2)} µs CPU per attempt (${attempts / calls} attempts a call)`);
  await pool.close();
}
