/**
 * A paced key shared by three pools through Redis (`sharedQuota`), each kept busy by ten
 * callers: the calls a second the fleet carries once steady, and the most starts seen in
 * any 1000 ms. Starts its own redis-server (scripts/redis-server.mjs); expects a built dist/.
 *
 *   node bench/fleet-paced.mjs [perSecond=20] [marginMs=25] [ms=6000]
 *
 * `DIST=file:///other/dist/` measures another build (side by side with this one).
 */
import Redis from 'ioredis';
import { startRedis } from '../scripts/redis-server.mjs';
const D = process.env.DIST ?? new URL('../dist/', import.meta.url).href;
const { Pool } = await import(D + 'index.js');
const { createRedisStore, fromIoredis } = await import(D + 'redis/index.js');
const server = await startRedis();
const [perSecond, margin, ms] = [Number(process.argv[2] ?? 20), Number(process.argv[3] ?? 25), Number(process.argv[4] ?? 6000)];
const clients = [], pools = [], starts = [];
const prefix = 'f' + Date.now() + ':';
for (let p = 0; p < 3; p++) {
  const r = new Redis({ host: '127.0.0.1', port: server.port });
  clients.push(r);
  const store = createRedisStore(fromIoredis(r), { prefix });
  pools.push(new Pool({ endpoints: [{ name: 'k', conn: 1, rateLimit: { perSecond, mode: 'paced', marginMs: margin } }], classify: () => 'transient', sharedQuota: { store }, deadlineMs: 60_000, maxQueueWaitMs: 60_000 }));
}
let running = true;
const t0 = performance.now();
const op = async () => { starts.push(performance.now() - t0); return 1; };
const loops = pools.flatMap((pool) => Array.from({ length: 10 }, async () => { while (running) await pool.execute(op).catch(() => {}); }));
await new Promise((r) => setTimeout(r, ms));
running = false;
await Promise.all(pools.map((p) => p.close()));
await Promise.allSettled(loops);
const inside = starts.filter((t) => t >= 1000 && t < ms);
let worst = 0;
const s = starts.slice().sort((a, b) => a - b);
for (let i = 0, j = 0; i < s.length; i++) { while (s[i] - s[j] >= 1000) j++; worst = Math.max(worst, i - j + 1); }
console.log(process.env.LABEL ?? '', `${perSecond}/s margin ${margin}: ${(inside.length / ((ms - 1000) / 1000)).toFixed(2)} calls/s across 3 pools (steady, after 1 s); most in any 1000 ms: ${worst}`);
for (const c of clients) c.disconnect();
await server.stop();
