#!/usr/bin/env node
/**
 * A process that uses a pool on the real clock (timeouts, hangs, backoff, a rate-limit
 * wait, an open breaker, an aborted call) and then simply stops doing anything. It must
 * exit on its own: the pool may not leave a timer or handle keeping the event loop alive.
 *
 *   node test/soak/exit-child.mjs [close|no-close]
 *
 * Prints one JSON line when its work is done; the parent measures how long the process
 * takes to exit after that line.
 */
import { Pool } from '../../dist/index.js';

const mode = process.argv[2] ?? 'no-close';

class Scripted extends Error {
  constructor(verdict) {
    super('scripted');
    this.verdict = verdict;
  }
}

let n = 0;
const op = (conn, ctx) => {
  n++;
  switch (conn) {
    case 'hang':
      // Never settles and ignores its signal: the pool must not wait for it to exit.
      return new Promise(() => undefined);
    case 'flaky':
      return n % 3 === 0 ? new Promise((r) => setTimeout(() => r('late'), 5)) : Promise.reject(new Scripted('transient'));
    case 'limited':
      return Promise.reject(new Scripted({ class: 'rate-limited', retryAfterMs: 30 }));
    default:
      return new Promise((r) => setTimeout(() => r(ctx.endpoint), 2));
  }
};

const pool = new Pool({
  endpoints: [
    { name: 'hang', conn: 'hang' },
    { name: 'flaky', conn: 'flaky' },
    { name: 'limited', conn: 'limited' },
    { name: 'ok', conn: 'ok', rateLimit: { perSecond: 50, burst: 2 } },
  ],
  classify: (err) => (err instanceof Scripted ? err.verdict : 'permanent'),
  attemptTimeoutMs: 40,
  deadlineMs: 600,
  maxAttempts: 6,
  backoff: { initialMs: 5, maxMs: 50 },
  breaker: { threshold: 1, cooldownMs: 10_000 },
});

const outcomes = [];
const record = (p) => p.then((v) => outcomes.push(`ok:${v}`), (e) => outcomes.push(e.code));
await Promise.all([
  record(pool.execute(op)),
  record(pool.execute(op, { pin: 'hang', retry: 'none' })),
  record(pool.execute(op, { signal: AbortSignal.timeout(20) })),
  record(pool.execute(op, { pin: 'ok' })),
  record(pool.execute(op, { pin: 'ok' })),
  record(pool.execute(op, { pin: 'ok' })),
  record(pool.execute(op, { pin: 'limited', retry: { maxAttempts: 2 } })),
]);
await pool.probeHealth(async () => 'up', { timeoutMs: 30 });
if (mode === 'close') await pool.close();
console.log(JSON.stringify({ mode, outcomes, activeCalls: pool.activeCalls, at: Date.now() }));
