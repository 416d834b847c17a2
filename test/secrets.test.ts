/**
 * Secrets: the pool never adds a connection value, URL, query string, header or key to an
 * error message or stack, an event, or a metric label.
 *
 * What is fair: the user's own errors (the operation's rejection, passed through as
 * `cause` or as an event's `error`) are theirs, and are left out of the scan; everything
 * the pool builds is scanned. Secret-bearing strings are also passed where names or
 * options are expected, as a configuration mistake would.
 */
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type PoolEvent } from '../src/index.js';
import { FakeClock, RecordingMetrics } from '../src/testing/index.js';

const SECRET = 'SECRET';
const URLS = [
  'https://user:sk_live_SECRET@127.0.0.1/?apikey=SECRET',
  'http://127.0.0.1:8545/v2/SECRET',
  'wss://x.example/?token=SECRET',
  'Authorization: Bearer SECRET',
  'apikey=SECRET',
];

class UserError extends Error {
  constructor(
    readonly kind: string,
    conn: string,
  ) {
    // The user's own error may well carry the URL: that is theirs, not the pool's.
    super(`${kind} from ${conn}`);
  }
}

/** Everything the pool made: PoolErrors without their cause chain, events without user errors. */
function poolText(value: unknown): string {
  return JSON.stringify(value, (key, v: unknown) => {
    if (isPoolError(v)) return { name: v.name, code: v.code, message: v.message, stack: v.stack, endpoint: v.endpoint, field: v.field, retryAfterMs: v.retryAfterMs, attempts: v.attempts };
    if (v instanceof UserError) return '<user error>';
    if (key === 'error' && v instanceof Error) return '<user error>';
    return v;
  });
}

describe('no secret reaches an error, an event or a metric label', () => {
  test('every failure path, with secret-bearing connection values', async () => {
    const clock = new FakeClock();
    const events: PoolEvent[] = [];
    const metrics = new RecordingMetrics();
    const pool = new Pool<string>({
      endpoints: URLS.map((conn, i) => ({ name: `ep${i}`, conn, ...(i === 0 ? { rateLimit: { perSecond: 1 } } : {}), ...(i === 1 ? { maxInFlight: 1 } : {}) })),
      classify: (err) => {
        const kind = err instanceof UserError ? err.kind : 'permanent';
        return kind === '429' ? { class: 'rate-limited', retryAfterMs: 50 } : (kind as 'transient');
      },
      clock,
      metrics,
      onEvent: (e) => void events.push(e),
      attemptTimeoutMs: 100,
      deadlineMs: 1000,
      maxAttempts: 4,
      breaker: { threshold: 2, cooldownMs: 200 },
      backoff: { initialMs: 10, maxMs: 100, jitter: 'none' },
    });
    const script = ['transient', '429', 'hang', 'permanent', 'retry-narrower', 'unsupported', 'ok', 'throw', 'transient', 'transient'];
    let i = 0;
    const op = (conn: string): Promise<string> => {
      const kind = script[i++ % script.length]!;
      if (kind === 'throw') throw new UserError('permanent', conn);
      if (kind === 'hang') return new Promise(() => undefined);
      if (kind === 'ok') return Promise.resolve('fine');
      return Promise.reject(new UserError(kind, conn));
    };
    const errors: unknown[] = [];
    const calls: Promise<unknown>[] = [];
    for (let n = 0; n < 40; n++) {
      const ac = new AbortController();
      if (n % 7 === 3) clock.setTimeout(() => ac.abort(new Error('caller gave up')), 30);
      calls.push(pool.execute(op, { signal: ac.signal, ...(n % 9 === 4 ? { pin: 'ep2' } : {}), ...(n % 11 === 5 ? { exclude: ['ep0', 'ep1'] } : {}) }).catch((e: unknown) => errors.push(e)));
      await clock.advance(13);
    }
    // Mistakes a caller could make with a secret in hand.
    for (const url of URLS) {
      calls.push(pool.execute(op, { pin: url }).catch((e: unknown) => errors.push(e)));
      calls.push(pool.execute(op, { exclude: [url] }).catch((e: unknown) => errors.push(e)));
      calls.push(pool.execute(op, url as never).catch((e: unknown) => errors.push(e)));
      calls.push(pool.execute(url as never).catch((e: unknown) => errors.push(e)));
      calls.push(pool.execute(op, { signal: url as never }).catch((e: unknown) => errors.push(e)));
      calls.push(pool.execute(op, { retry: url as never }).catch((e: unknown) => errors.push(e)));
      calls.push(pool.execute(op, { breakerMode: url as never }).catch((e: unknown) => errors.push(e)));
    }
    const probes = await pool.probeHealth(async (conn) => {
      throw new UserError('down', conn);
    }, { timeoutMs: 50 });
    await clock.advance(5000);
    const closing = pool.close();
    calls.push(pool.execute(op).catch((e: unknown) => errors.push(e)));
    await clock.advance(5000);
    await Promise.all(calls);
    await closing;

    const codes = new Set(errors.map((e) => (isPoolError(e) ? e.code : 'other')));
    expect([...codes].sort()).toEqual(expect.arrayContaining(['ABORTED', 'CLOSED', 'INVALID_OPTIONS', 'PERMANENT', 'PIN_UNAVAILABLE', 'RETRY_NARROWER']));
    for (const e of errors) expect(poolText(e), poolText(e)).not.toContain(SECRET);
    for (const e of events) expect(poolText(e), poolText(e)).not.toContain(SECRET);
    for (const p of probes) expect(poolText({ ...p, error: undefined })).not.toContain(SECRET);
    for (const r of metrics.records) expect(JSON.stringify(r.labels)).not.toContain(SECRET);
    expect(JSON.stringify(pool.stats())).not.toContain(SECRET);
  });

  test.each(URLS)('constructor mistakes with %s never echo it', (url) => {
    const base = { endpoints: [{ name: 'a', conn: url }], classify: () => 'transient' as const };
    const attempts: Record<string, unknown>[] = [
      { ...base, endpoints: url },
      { ...base, endpoints: [url] },
      { ...base, endpoints: [{ name: 'a', conn: url, priority: url }] },
      { ...base, endpoints: [{ name: 'a', conn: url, weight: url }] },
      { ...base, endpoints: [{ name: 'a', conn: url, rateLimit: url }] },
      { ...base, endpoints: [{ name: 'a', conn: url, rateLimit: { perSecond: url } }] },
      { ...base, endpoints: [{ name: 'a', conn: url, maxInFlight: url }] },
      { ...base, classify: url },
      { ...base, strategy: url },
      { ...base, maxAttempts: url },
      { ...base, attemptTimeoutMs: url },
      { ...base, deadlineMs: url },
      { ...base, backoff: url },
      { ...base, backoff: { jitter: url } },
      { ...base, breaker: { threshold: url } },
      { ...base, rateLimitCooldownMs: url },
      { ...base, maxConcurrentCalls: url },
      { ...base, breakerMode: url },
      { ...base, clock: url },
      { ...base, random: url },
      { ...base, metrics: url },
      { ...base, onEvent: url },
    ];
    for (const options of attempts) {
      let caught: unknown;
      try {
        new Pool(options as never);
      } catch (e) {
        caught = e;
      }
      expect(isPoolError(caught) && caught.code).toBe('INVALID_OPTIONS');
      expect(poolText(caught)).not.toContain(SECRET);
    }
  });
});
