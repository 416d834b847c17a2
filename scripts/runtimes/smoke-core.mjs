/**
 * The core's smoke checks, shared by every runtime: Node, Bun and Deno run them through
 * `smoke.mjs`, Chromium through `page/index.html` (on the page and in a module Worker).
 *
 * Only the built package is imported (dist/, ESM), by relative URL, so the same file
 * loads from disk and from the loopback static server. Each check returns nothing or
 * throws; `runSmoke` never throws and reports every check by name.
 */
import { Pool, isPoolError } from '../../dist/index.js';
import { FakeClock } from '../../dist/testing/index.js';

const classify = (err) => (err instanceof Error && err.message === 'down' ? 'transient' : 'permanent');

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

/** A failing endpoint is skipped for a healthy one within the same call (system clock). */
async function failover() {
  const seen = [];
  const pool = new Pool({
    endpoints: [
      { name: 'a', conn: 'a' },
      { name: 'b', conn: 'b' },
    ],
    classify,
    backoff: { initialMs: 1, maxMs: 1 },
  });
  try {
    const answer = await pool.execute(async (conn, ctx) => {
      seen.push(`${ctx.endpoint}#${ctx.attempt}`);
      if (conn === 'a') throw new Error('down');
      return `answer from ${conn}`;
    });
    assert(answer === 'answer from b', `expected the answer from b, got ${String(answer)}`);
    assert(seen.join(',') === 'a#1,b#2', `expected attempts a#1,b#2, got ${seen.join(',')}`);
    const a = pool.stats().find((s) => s.name === 'a');
    assert(a !== undefined && a.failures >= 1, `expected stats() to count a's failure, got ${JSON.stringify(a)}`);
  } finally {
    await pool.close();
  }
}

/** A 2-per-second bucket admits two calls at once and the third 500 ms later, on FakeClock. */
async function rateLimitOnFakeClock() {
  const clock = new FakeClock(1_000_000);
  const startedAt = [];
  const pool = new Pool({
    endpoints: [{ name: 'a', conn: 'a', rateLimit: { perSecond: 2, burst: 2 } }],
    classify,
    clock,
  });
  try {
    const op = async () => {
      startedAt.push(clock.now() - 1_000_000);
      return 'ok';
    };
    const calls = [1, 2, 3].map(() => pool.execute(op, { deadlineMs: 10_000 }));
    await clock.advance(0);
    assert(startedAt.join(',') === '0,0', `expected two calls admitted at 0 ms, got [${startedAt.join(',')}]`);
    await clock.advance(499);
    assert(startedAt.length === 2, `expected the third call still waiting at 499 ms, got [${startedAt.join(',')}]`);
    await clock.advance(1);
    const results = await Promise.all(calls);
    assert(results.join(',') === 'ok,ok,ok', `expected three answers, got ${results.join(',')}`);
    assert(startedAt.join(',') === '0,0,500', `expected admissions at 0,0,500 ms, got [${startedAt.join(',')}]`);
  } finally {
    await pool.close();
  }
}

/** An operation that waits on ctx.signal is aborted by the attempt timeout (system clock). */
async function signalAbortedByAttemptTimeout() {
  let abortedAfterMs;
  let reason;
  const pool = new Pool({ endpoints: [{ name: 'slow', conn: 'slow' }], classify });
  const t0 = Date.now();
  try {
    await pool.execute(
      (_conn, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            abortedAfterMs = Date.now() - t0;
            reason = ctx.signal.reason;
            reject(new Error('aborted by the pool'));
          });
        }),
      { attemptTimeoutMs: 40, retry: 'none' },
    );
    throw new Error('expected the call to be rejected');
  } catch (err) {
    assert(isPoolError(err), `expected a PoolError, got ${String(err)}`);
    const codes = [err.code, isPoolError(err.cause) ? err.cause.code : undefined];
    assert(codes.includes('ATTEMPT_TIMEOUT'), `expected ATTEMPT_TIMEOUT in ${JSON.stringify(codes)}`);
    assert(abortedAfterMs !== undefined && abortedAfterMs >= 35, `expected the signal to abort after ~40 ms, got ${String(abortedAfterMs)}`);
    assert(reason !== undefined, 'expected the signal to carry a reason');
  } finally {
    await pool.close();
  }
}

export const CHECKS = { failover, rateLimitOnFakeClock, signalAbortedByAttemptTimeout };

/** Runs every check; resolves to `{ ok, results: [{ name, ok, ms, error? }] }`. */
export async function runSmoke() {
  const results = [];
  for (const [name, check] of Object.entries(CHECKS)) {
    const t0 = Date.now();
    try {
      await check();
      results.push({ name, ok: true, ms: Date.now() - t0 });
    } catch (err) {
      results.push({ name, ok: false, ms: Date.now() - t0, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return { ok: results.every((r) => r.ok), results };
}

/** The report's text, one line per check and a verdict. */
export function formatSmoke(runtime, { ok, results }) {
  const lines = results.map((r) => `  ${r.ok ? 'pass' : 'FAIL'} ${r.name} (${r.ms} ms)${r.ok ? '' : `: ${r.error}`}`);
  return [`smoke on ${runtime}`, ...lines, `${ok ? 'PASS' : 'FAIL'}: ${results.filter((r) => r.ok).length} of ${results.length} checks passed on ${runtime}`].join('\n');
}
