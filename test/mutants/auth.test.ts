/**
 * Credential refresh (src/call/auth.ts) where its first mutation run (twenty-eighth session)
 * found nothing holding it: the context a refresh is given, its time-out's error, the
 * two refreshes counted per attempt (not per call), the final message, the option's name.
 */
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type AttemptContext, type PoolError } from '../../src/index.js';
import { classifyApiKeyMessage } from '../../src/keys/index.js';
import { fail, hang, harness, ok, start, type FakeEndpoint } from '../support.js';

const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);

function refresher(h: () => { clock: { setTimeout(fn: () => void, ms: number): unknown } }, ms = 50) {
  const runs: { name: string; ctx: AttemptContext }[] = [];
  const refreshAuth = (conn: FakeEndpoint, ctx: AttemptContext): Promise<void> => {
    runs.push({ name: conn.name, ctx });
    return new Promise<void>((resolve) => h().clock.setTimeout(resolve, ms));
  };
  return { runs, refreshAuth };
}

describe('the context a refresh is given', () => {
  test.each([
    [200, 200],
    [undefined, 1000],
    [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY],
  ])('refreshTimeoutMs %s: its deadline is the refresh start plus %s ms, its endpoint the one refused, attempt 1', async (refreshTimeoutMs, ms) => {
    const r = refresher(() => h);
    const h = harness(['a'], { refreshAuth: r.refreshAuth, attemptTimeoutMs: 1000, ...(refreshTimeoutMs === undefined ? {} : { refreshTimeoutMs }) });
    await h.clock.advance(1234);
    h.eps.a!.then(fail('unauthorized'), ok('fresh'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(r.runs).toHaveLength(1);
    const startedAt = h.clock.now();
    await h.clock.advance(50);
    await call.promise;
    expect(call.value).toBe('fresh');
    const ctx = r.runs[0]!.ctx;
    expect([ctx.endpoint, ctx.attempt, ctx.deadlineAt]).toEqual(['a', 1, startedAt + ms]);
  });
});

describe('a refresh that times out', () => {
  test('the call fails AUTH; its cause is ATTEMPT_TIMEOUT naming the endpoint and the time-out', async () => {
    const h = harness(['key-1'], { refreshAuth: () => new Promise<void>(() => undefined), refreshTimeoutMs: 200 });
    h.eps['key-1']!.then(fail('unauthorized'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(200);
    await call.promise;
    const cause = (call.error as PoolError).cause as PoolError;
    expect(code(call.error)).toBe('AUTH');
    expect([cause.code, cause.endpoint, cause.message]).toEqual(['ATTEMPT_TIMEOUT', 'key-1', 'refreshing credentials for endpoint "key-1" timed out after 200 ms']);
  });

  test('a refreshAuth that throws synchronously fails the call with AUTH at once and leaves no timer', async () => {
    const cause = new Error('no credentials here');
    const h = harness(['a'], {
      refreshAuth: () => {
        throw cause;
      },
      refreshTimeoutMs: 200,
    });
    h.eps.a!.then(fail('unauthorized'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(call.settled).toBe(true);
    expect(code(call.error)).toBe('AUTH');
    expect((call.error as PoolError).cause).toBe(cause);
    // (the pool's shared attempt timer, in the background, stays until its time: by design.)
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test('refreshTimeoutMs is checked under its own name', () => {
    let error: unknown;
    try {
      new Pool({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', refreshAuth: async () => undefined, refreshTimeoutMs: -5 });
    } catch (e) {
      error = e;
    }
    expect(code(error)).toBe('INVALID_OPTIONS');
    expect((error as Error).message).toMatch(/^refreshTimeoutMs\b/);
  });
});

describe('two refreshes per attempt, not per call', () => {
  test('an attempt that spent its two refreshes and then failed transiently leaves the next attempt two of its own', async () => {
    const r = refresher(() => h);
    const h = harness(['a'], { refreshAuth: r.refreshAuth, maxAttempts: 2, backoff: { initialMs: 10, maxMs: 10 } });
    h.eps.a!.then(fail('unauthorized'), fail('unauthorized'), fail('transient'), fail('unauthorized'), ok('after the third refresh'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('after the third refresh');
    expect(r.runs.map((x) => x.name)).toEqual(['a', 'a', 'a']);
  });

  test('the third unauthorized answer of one attempt is final, and says the credentials were refreshed', async () => {
    const r = refresher(() => h);
    const h = harness(['a'], { refreshAuth: r.refreshAuth, maxAttempts: 5 });
    h.eps.a!.then(fail('unauthorized'), fail('unauthorized'), fail('unauthorized'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await call.promise;
    expect(code(call.error)).toBe('UNAUTHORIZED');
    expect((call.error as PoolError).message).toMatch(/"a".*again after its credentials were refreshed/);
  });
});

describe('keys: a provider body whose first text field is empty', () => {
  test.each([
    [{ result: '', message: 'Invalid API Key' }],
    [{ message: '', error: 'Invalid API Key' }],
    [{ result: 'NOTOK', message: '', error: { message: 'Invalid API Key' } }],
    [{ result: {}, message: 'Invalid API Key' }],
    [{ result: null, message: 'Invalid API Key' }],
  ])('%j reads the field that says something', (body) => {
    const verdict = classifyApiKeyMessage(body);
    expect(verdict).toBeDefined();
    expect(verdict).toEqual(classifyApiKeyMessage('Invalid API Key'));
  });
});

describe("keys: what a message's words decide", () => {
  test.each([
    ['execution reverted: rate limit exceeded', undefined],
    ['limit reached', undefined],
    ['Max rate limit reached (0/sec)', { class: 'rate-limited' }],
    ['Max rate limit reached (2/sec)', { class: 'rate-limited', ceilingPerSecond: 2 }],
    ['daily limit reached', { class: 'rate-limited', dailyQuotaExhausted: true }],
  ])('%j: %j', (message, verdict) => {
    expect(classifyApiKeyMessage(message)).toEqual(verdict);
  });
});

describe('refreshes are counted per endpoint', () => {
  test("an endpoint's two refreshes in an attempt leave a hedge on another endpoint its own", async () => {
    // a refuses at once, is refreshed, refuses its replay, is refreshed again, then hangs; the
    // hedge on b (armed again by each replay: sent at 620 ms) refuses at 1,320 ms, after a's two
    // refreshes: b still gets a refresh of its own, and its replay answers.
    const r = refresher(() => h, 300);
    const h = harness(['a', 'b'], { refreshAuth: r.refreshAuth, hedge: { afterMs: 20 }, attemptTimeoutMs: 5_000, deadlineMs: 10_000, strategy: 'ordered' });
    h.eps.a!.then(fail('unauthorized'), fail('unauthorized'), hang(true));
    h.eps.b!.then(fail('unauthorized', 700), ok('b after its refresh'));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(2_000);
    await call.promise;
    expect(h.eps.a!.startedAt.map((t) => t - 1_000_000)).toEqual([0, 300, 600]);
    expect(h.eps.b!.startedAt.map((t) => t - 1_000_000)).toEqual([620, 1620]);
    expect(call.value).toBe('b after its refresh');
    expect(r.runs.map((x) => x.name)).toEqual(['a', 'a', 'b']);
  });
});
