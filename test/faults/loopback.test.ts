/**
 * Fault tests on real loopback servers and the real clock: refused connections, resets in
 * the middle of a response, hangs, slow answers, 429 with `Retry-After` (seconds and
 * HTTP-date), 5xx and malformed bodies.
 *
 * Promises checked: while any endpoint is healthy no caller sees a failure, and a hanging
 * endpoint never makes a call outlive its deadline.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Pool, isPoolError, type PoolEvent, type PoolOptions } from '../../src/index.js';
import { classifyHttp, faults, getJson, parseRetryAfter, refusedUrl, serve, timing, type FaultServer } from './http.js';
import { timerLag, watchLag, withLag } from '../helpers/lag.js';

const servers: Record<string, FaultServer> = {};
let refused = '';
/** Real-time settings, grown with the timer lag measured before the tests (a busy machine). */
let attemptTimeoutMs = 200;
let deadlineMs = 3000;

beforeAll(async () => {
  for (const [name, handler] of Object.entries(faults)) servers[name] = await serve(name, handler);
  refused = await refusedUrl();
  // The runtime's first `fetch` loads and compiles its HTTP client (25-65 ms on an idle
  // machine, several times that on a busy one): done here, not inside the first test's
  // attempts, whose timeouts are for the endpoints' answers.
  await (await fetch(`${servers['healthy']!.url}/`)).text();
  const lag = await timerLag();
  attemptTimeoutMs = withLag(200, lag, 4);
  deadlineMs = withLag(3000, lag);
  timing.slowMs = 2 * attemptTimeoutMs;
});

afterAll(async () => {
  await Promise.all(Object.values(servers).map((s) => s.close()));
});

const url = (name: string): string => (name === 'refused' ? refused : servers[name]!.url);

/** Short real-clock settings: attempts time out after 200 ms (more on a loaded machine). */
function pool(endpoints: PoolOptions<string>['endpoints'], extra: Partial<PoolOptions<string>> = {}, events?: PoolEvent[]): Pool<string> {
  return new Pool<string>({
    endpoints,
    classify: classifyHttp,
    attemptTimeoutMs,
    deadlineMs,
    backoff: { initialMs: 10, maxMs: 5000, jitter: 'full' },
    breaker: { threshold: 2, cooldownMs: 10_000 },
    ...(events === undefined ? {} : { onEvent: (e: PoolEvent) => void events.push(e) }),
    ...extra,
  });
}

/** Runs `n` calls, `parallel` at a time; returns each call's outcome and duration. */
async function run(p: Pool<string>, n: number, parallel: number): Promise<{ ok: number; failures: unknown[]; maxMs: number }> {
  const failures: unknown[] = [];
  let ok = 0;
  let maxMs = 0;
  for (let done = 0; done < n; done += parallel) {
    await Promise.all(
      Array.from({ length: Math.min(parallel, n - done) }, async () => {
        const t0 = performance.now();
        try {
          const body = await p.execute(getJson('/'));
          expect(body).toEqual({ ok: true });
          ok++;
        } catch (error) {
          failures.push(error);
        }
        maxMs = Math.max(maxMs, performance.now() - t0);
      }),
    );
  }
  return { ok, failures, maxMs };
}

const FAULTS = ['refused', 'reset', 'hang', 'slow', 'tooManySeconds', 'tooManyDate', 'unavailable', 'malformed'] as const;

describe('one faulty endpoint in front of a healthy one', () => {
  test.each(FAULTS)('%s: zero caller-visible failures, every call within its deadline', async (fault) => {
    const p = pool([
      { name: 'faulty', conn: url(fault) },
      { name: 'healthy', conn: url('healthy') },
    ]);
    const r = await run(p, 12, 4);
    expect(r.failures).toEqual([]);
    expect(r.ok).toBe(12);
    expect(r.maxMs).toBeLessThan(deadlineMs);
    const [faulty] = p.stats();
    // The fault was met (the faulty endpoint was tried first) and then avoided.
    expect(faulty!.failures).toBeGreaterThan(0);
    await p.close();
  });

  test('every fault at once, round-robin, concurrent callers: still zero failures', async () => {
    const endpoints = [...FAULTS.map((f) => ({ name: f, conn: url(f) })), { name: 'healthy', conn: url('healthy') }];
    const p = pool(endpoints, { strategy: 'round-robin', maxAttempts: FAULTS.length + 1, breaker: { threshold: 1, cooldownMs: 10_000 } });
    const r = await run(p, 40, 8);
    expect(r.failures).toEqual([]);
    expect(r.ok).toBe(40);
    await p.close();
  });

  test('only faulty endpoints: the caller sees a PoolError with the last failure as cause', async () => {
    const p = pool(
      [
        { name: 'down', conn: url('unavailable') },
        { name: 'garbled', conn: url('malformed') },
        { name: 'gone', conn: url('refused') },
      ],
      { maxAttempts: 3 },
    );
    const err = await p.execute(getJson('/')).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('RETRIES_EXHAUSTED');
    expect(isPoolError(err) && err.attempts).toBe(3);
    expect((err as Error).cause).toBeInstanceOf(Error);
    await p.close();
  });
});

describe('a hanging endpoint never makes a call exceed its deadline', () => {
  /** The deadline is met "to the timer tick": the slack is what the event loop's lag was during the call. */
  const slack = (lagMs: number): number => 50 + 3 * lagMs;
  test.each([
    ['attempt timeout 200 ms, retry until the deadline', { attemptTimeoutMs: 200 }],
    ['no attempt timeout: the deadline alone cuts the attempt', { attemptTimeoutMs: Number.POSITIVE_INFINITY }],
  ] as const)('%s', async (_, extra) => {
    // 'slow' answers after twice the attempt timeout: with a 500 ms deadline it never answers in time.
    timing.slowMs = Math.max(timing.slowMs, 1_000);
    const p = pool([{ name: 'hang', conn: url('hang') }, { name: 'slow', conn: url('slow') }], { ...extra, deadlineMs: 500, breaker: { threshold: 100 } });
    const lag = watchLag();
    const t0 = performance.now();
    const err = await p.execute(getJson('/'), { retry: 'until-deadline' }).catch((e: unknown) => e);
    const elapsed = performance.now() - t0;
    const lagMs = lag.stop();
    expect(isPoolError(err) && err.code).toBe('DEADLINE_EXCEEDED');
    expect(elapsed).toBeGreaterThanOrEqual(495);
    expect(elapsed).toBeLessThan(500 + slack(lagMs));
    await p.close();
  });

  test('an operation that ignores its signal and never settles still ends at the deadline', async () => {
    const p = pool([{ name: 'hang', conn: url('hang') }], { deadlineMs: 300, attemptTimeoutMs: Number.POSITIVE_INFINITY });
    const lag = watchLag();
    const t0 = performance.now();
    const err = await p.execute(() => new Promise<never>(() => undefined)).catch((e: unknown) => e);
    const elapsed = performance.now() - t0;
    expect(isPoolError(err) && err.code).toBe('DEADLINE_EXCEEDED');
    expect(elapsed).toBeLessThan(300 + slack(lag.stop()));
    expect(p.activeCalls).toBe(0);
    expect(p.stats()[0]!.inFlight).toBe(0);
    await p.close();
  });
});

describe('429 with Retry-After', () => {
  test.each([
    // Retry-After plus up to 25 % jitter.
    ['seconds', 'tooManySeconds', 1000, 1250],
    ['HTTP-date', 'tooManyDate', 1, 1875],
  ] as const)('%s: the endpoint cools down for the hinted time and is not asked again before', async (_, fault, minMs, maxMs) => {
    const events: PoolEvent[] = [];
    const p = pool(
      [
        { name: 'limited', conn: url(fault) },
        { name: 'healthy', conn: url('healthy') },
      ],
      {},
      events,
    );
    const before = servers[fault]!.hits.length;
    // One call alone meets the 429; the rest arrive while the endpoint cools down.
    const first = await run(p, 1, 1);
    const r = await run(p, 9, 3);
    expect([...first.failures, ...r.failures]).toEqual([]);
    const cooling = events.filter((e) => e.type === 'endpoint-cooling');
    expect(cooling).toHaveLength(1);
    const ms = cooling[0]!.type === 'endpoint-cooling' ? cooling[0]!.cooldownMs : -1;
    expect(ms).toBeGreaterThanOrEqual(minMs);
    expect(ms).toBeLessThanOrEqual(maxMs);
    expect(servers[fault]!.hits.length - before).toBe(1);
    expect(p.breakerState('limited')).toBe('closed');
    await p.close();
  });

  test('parseRetryAfter reads both forms and ignores garbage', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
