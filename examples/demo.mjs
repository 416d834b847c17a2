// A short, real demonstration: three HTTP endpoints on 127.0.0.1, started here, behind one
// pool. The primary fails for a while (its breaker opens and traffic moves), then recovers
// (a half-open probe closes the breaker and traffic comes back); the secondary enforces a
// server-side rate limit that the pool's own limiter keeps us under.
//
//   npm run demo
import { createServer } from 'node:http';
import { isPoolError } from 'endpoint-pool';
import { createPooledFetch } from 'endpoint-pool/fetch';

let rateLimitWaits = 0;
const started = Date.now();
const t = () => `${String(Date.now() - started).padStart(5)} ms`;

/** A tiny JSON endpoint whose behaviour the demo switches at run time. */
function startEndpoint(name, { perSecondLimit } = {}) {
  const state = { mode: 'ok', served: 0, rejected: 0, errors: 0, window: [] };
  const server = createServer((req, res) => {
    const now = Date.now();
    if (perSecondLimit !== undefined) {
      state.window = state.window.filter((x) => now - x < 1000);
      if (state.window.length >= perSecondLimit) {
        state.rejected++;
        res.writeHead(429, { 'retry-after': '1' }).end();
        return;
      }
      state.window.push(now);
    }
    if (state.mode === 'down') {
      state.errors++;
      res.writeHead(503).end();
      return;
    }
    state.served++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ from: name }));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ name, server, state, url: `http://127.0.0.1:${server.address().port}` })));
}

const primary = await startEndpoint('primary');
const secondary = await startEndpoint('secondary', { perSecondLimit: 60 });
const backup = await startEndpoint('backup');

// The fetch adapter: a fetch-shaped function over the three base URLs, classifying
// answers by status (503 transient, 429 rate-limited with its Retry-After, ...).
const api = createPooledFetch({
  endpoints: [
    { name: 'primary', url: primary.url },
    // The pool's limiter keeps us under the server's own ceiling of 60 calls/s.
    { name: 'secondary', url: secondary.url, rateLimit: { perSecond: 50, burst: 5 } },
    { name: 'backup', url: backup.url, priority: 'low' },
  ],
  throwOnHttpError: true,
  breaker: { threshold: 3, cooldownMs: 500, maxCooldownMs: 1000 },
  attemptTimeoutMs: 1000,
  deadlineMs: 5000,
  onEvent: (e) => {
    if (e.type === 'rate-limit-wait') rateLimitWaits++;
    if (e.type === 'breaker-opened') console.log(`${t()}  breaker of ${e.endpoint} opened for ${e.cooldownMs} ms`);
    if (e.type === 'breaker-closed') console.log(`${t()}  breaker of ${e.endpoint} closed: traffic is back`);
  },
});
const pool = api.pool;

const servedBy = new Map();
let failed = 0;
async function call() {
  try {
    const body = await (await api('/')).json();
    servedBy.set(body.from, (servedBy.get(body.from) ?? 0) + 1);
  } catch (err) {
    failed++;
    console.log(`${t()}  call failed: ${isPoolError(err) ? err.code : err}`);
  }
}

/** Sends `count` calls, `perBatch` at a time, one batch every 25 ms. */
async function traffic(label, count, perBatch = 5) {
  console.log(`${t()}  ${label}`);
  for (let i = 0; i < count; i += perBatch) {
    await Promise.all(Array.from({ length: perBatch }, call));
    await new Promise((r) => setTimeout(r, 25));
  }
}

console.log('endpoint-pool demo: 3 local endpoints, 1 pool\n');
await traffic('phase 1: all healthy; the primary serves everything', 60);
primary.state.mode = 'down';
await traffic('phase 2: the primary answers 503; its breaker opens, the secondary takes over, paced by its rate limit', 80);
secondary.server.close();
secondary.server.closeAllConnections();
await traffic('phase 3: the secondary is gone too (connection refused); the low-priority backup serves', 60);
primary.state.mode = 'ok';
await traffic('phase 4: the primary is back; once its cooldown has passed, a probe closes its breaker', 120);

console.log(`\nserved by: ${JSON.stringify(Object.fromEntries(servedBy))}`);
console.log(`caller-visible failures: ${failed}; waits for a token (instead of drawing a 429): ${rateLimitWaits}`);
console.table(
  pool.stats().map((s) => ({
    endpoint: s.name,
    priority: s.priority,
    breaker: typeof s.breaker === 'string' ? s.breaker : s.breaker.state,
    attempts: s.attempts,
    ok: s.successes,
    failed: s.failures,
    '429s': s.rateLimited,
    'peak in flight': s.peakInFlight,
    'server 429s': { primary, secondary, backup }[s.name].state.rejected,
    'server 503s': { primary, secondary, backup }[s.name].state.errors,
  })),
);
await pool.close();
for (const e of [primary, backup]) e.server.close();
