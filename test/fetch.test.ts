import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { classifyFetchError, classifyResponse, classifyStatus, createPooledFetch, HttpStatusError, joinUrl, parseRetryAfter, type PooledFetch } from '../src/fetch/index.js';
import { waitAskedMs } from '../src/fetch/retry-after.js';
import { isPoolError } from '../src/index.js';
import { refusedPort, startLoopback, type Loopback } from './helpers/loopback.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  test.each([
    ['2', 2_000],
    ['0', 0],
    ['1.5', 1_500],
    [' 3 ', 3_000],
    ['Wed, 01 Jan 2025 00:00:10 GMT', 10_000],
    ['Tue, 31 Dec 2024 23:59:00 GMT', undefined], // in the past
    ['soon', undefined],
    ['-5', undefined],
    ['', undefined],
    [null, undefined],
    ['3600', 60_000], // clamped to the default max
    ['1e400', undefined],
  ])('%j → %j', (value, want) => {
    expect(parseRetryAfter(value, now)).toBe(want);
  });

  test('the clamp is configurable', () => {
    expect(parseRetryAfter('10', now, 5_000)).toBe(5_000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 01:00:00 GMT', now, 7_000)).toBe(7_000);
  });
});

describe("a 429 without Retry-After: the API's rate-limit reset headers (waitAskedMs)", () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  const s = now / 1000;
  test.each([
    [429, { 'ratelimit-reset': '7' }, 7_000],
    [429, { 'x-ratelimit-reset-after': '2.5' }, 2_500],
    [429, { 'x-ratelimit-reset-after': '0.25' }, 1_000], // under a second counts as one, as Retry-After
    [429, { 'x-ratelimit-reset': String(s + 30) }, 30_000], // a Unix time in seconds (GitHub)
    [429, { 'x-ratelimit-reset': String(now + 5_000) }, 5_000], // ... in milliseconds
    [429, { 'x-ratelimit-reset': '12' }, 12_000], // seconds from now
    [429, { 'x-ratelimit-reset': String(s - 30) }, undefined], // in the past: no hint
    [429, { 'ratelimit-reset': '0' }, undefined],
    [429, { 'ratelimit-reset': 'soon', 'x-ratelimit-reset': '4' }, 4_000], // the next one that reads
    [429, { 'x-ratelimit-reset': String(s + 3600) }, 60_000], // clamped to the max
    [429, { 'retry-after': '3', 'ratelimit-reset': '9' }, 3_000], // Retry-After first
    [503, { 'ratelimit-reset': '9' }, undefined], // only a 429 says it is a rate limit
    [429, {}, undefined],
  ] as [number, Record<string, string>, number | undefined][])('%i %j → %j', (status, headers, want) => {
    expect(waitAskedMs((name) => headers[name], status, now)).toBe(want);
    expect(classifyResponse(new Response(null, { status, headers }), { nowMs: now })).toEqual(want === undefined ? classifyStatus(status, undefined) : { class: 'rate-limited', retryAfterMs: want });
  });
});

describe('classifyStatus / classifyResponse / classifyFetchError', () => {
  test.each([
    [200, undefined, 'ok'],
    [204, undefined, 'ok'],
    [304, undefined, 'ok'],
    [400, undefined, 'permanent'],
    [404, undefined, 'permanent'],
    [408, undefined, 'rate-limited'],
    [429, undefined, 'rate-limited'],
    [429, 2_000, { class: 'rate-limited', retryAfterMs: 2_000 }],
    [500, undefined, 'transient'],
    [502, undefined, 'transient'],
    [503, undefined, 'transient'],
    [503, 1_000, { class: 'rate-limited', retryAfterMs: 1_000 }],
  ] as const)('%i (retry-after %j) → %j', (status, hint, want) => {
    expect(classifyStatus(status, hint)).toEqual(want);
  });

  test('classifyResponse reads Retry-After as seconds or date against the given now', () => {
    const res = (status: number, ra?: string) => new Response(null, { status, headers: ra === undefined ? {} : { 'retry-after': ra } });
    const nowMs = Date.parse('2025-01-01T00:00:00Z');
    expect(classifyResponse(res(429, '3'), { nowMs })).toEqual({ class: 'rate-limited', retryAfterMs: 3_000 });
    expect(classifyResponse(res(429, 'Wed, 01 Jan 2025 00:00:04 GMT'), { nowMs })).toEqual({ class: 'rate-limited', retryAfterMs: 4_000 });
    expect(classifyResponse(res(429, '999'), { nowMs, maxRetryAfterMs: 1_000 })).toEqual({ class: 'rate-limited', retryAfterMs: 1_000 });
    expect(classifyResponse(res(200))).toBe('ok');
    expect(classifyResponse(res(418))).toBe('permanent');
  });

  test('network errors are transient, HttpStatusError goes by status', () => {
    expect(classifyFetchError(new TypeError('fetch failed'))).toBe('transient');
    expect(classifyFetchError(new HttpStatusError(404))).toBe('permanent');
    expect(classifyFetchError(new HttpStatusError(429, { retryAfterMs: 5 }))).toEqual({ class: 'rate-limited', retryAfterMs: 5 });
    expect(classifyFetchError(new HttpStatusError(200))).toBe('permanent');
  });

  test.each([
    ['http://h', '/a', 'http://h/a'],
    ['http://h/', '/a', 'http://h/a'],
    ['http://h/v1', 'a?b=1', 'http://h/v1/a?b=1'],
    ['http://h/v1/', '/a', 'http://h/v1/a'],
    ['http://h/v1', '', 'http://h/v1'],
  ])('joinUrl(%s, %s) = %s', (base, path, want) => {
    expect(joinUrl(base, path)).toBe(want);
  });
});

describe('createPooledFetch against loopback servers', () => {
  let ok: Loopback;
  let unavailable: Loopback;
  let limited: Loopback;
  let notFound: Loopback;
  let hanging: Loopback;
  let echo: Loopback;
  let refused: string;
  const hangingAborted: boolean[] = [];
  const made: PooledFetch[] = [];

  beforeAll(async () => {
    ok = await startLoopback((req, res) => res.end(`ok ${req.url}`));
    unavailable = await startLoopback((_q, res) => {
      res.statusCode = 503;
      res.end('down');
    });
    limited = await startLoopback((_q, res) => {
      res.statusCode = 429;
      res.setHeader('retry-after', '2');
      res.end('slow down');
    });
    notFound = await startLoopback((_q, res) => {
      res.statusCode = 404;
      res.end('no such thing');
    });
    hanging = await startLoopback((req) => {
      // Never answers; records whether the client gave up on the request.
      req.socket.on('close', () => hangingAborted.push(true));
    });
    echo = await startLoopback((req, res, body) => res.end(`${req.method} ${body}`));
    refused = `http://127.0.0.1:${await refusedPort()}`;
  });

  afterAll(async () => {
    await Promise.all([ok, unavailable, limited, notFound, hanging, echo].map((s) => s.close()));
  });

  afterEach(async () => {
    await Promise.all(made.splice(0).map((f) => f.pool.close()));
    for (const s of [ok, unavailable, limited, notFound, hanging, echo]) s.hits = 0;
  });

  function make(endpoints: string[], extra: Partial<Parameters<typeof createPooledFetch>[0]> = {}): PooledFetch {
    const f = createPooledFetch({ endpoints: endpoints.map((url, i) => ({ url, name: `e${i}` })), backoff: { initialMs: 1, maxMs: 5 }, ...extra });
    made.push(f);
    return f;
  }

  test('fails over a 503 to the next base URL and returns its response', async () => {
    const f = make([unavailable.url, ok.url]);
    const res = await f('/items?x=1');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok /items?x=1');
    expect([unavailable.hits, ok.hits]).toEqual([1, 1]);
  });

  test('a refused connection is transient', async () => {
    const f = make([refused, ok.url]);
    expect((await f('/a')).status).toBe(200);
    expect(f.pool.stats()[0]!.failures).toBe(1);
  });

  test('429 with Retry-After cools the endpoint down for the hinted time and leaves its breaker alone', async () => {
    // The pool caps a cooldown at backoff.maxMs, so leave room for the 2 s hint.
    const f = make([limited.url, ok.url], { breaker: { threshold: 1 }, backoff: { initialMs: 1, maxMs: 10_000 } });
    expect((await f('/a')).status).toBe(200);
    const s = f.pool.stats()[0]!;
    expect(s.rateLimited).toBe(1);
    expect(s.cooldownRemainingMs).toBeGreaterThan(1_000);
    expect(s.cooldownRemainingMs).toBeLessThanOrEqual(2_500); // the hint plus up to 25 % jitter
    expect(s.breaker).toEqual({ state: 'closed' });
    // While cooling, the next call goes straight to the other endpoint.
    expect((await f('/b')).status).toBe(200);
    expect(limited.hits).toBe(1);
  });

  test("429 without Retry-After: the API's reset header (RateLimit-Reset) sets the cooldown", async () => {
    const resetOnly = await startLoopback((_q, res) => {
      res.statusCode = 429;
      res.setHeader('ratelimit-reset', '3');
      res.end('slow down');
    });
    try {
      const f = make([resetOnly.url, ok.url], { backoff: { initialMs: 1, maxMs: 10_000 } });
      expect((await f('/a')).status).toBe(200);
      const s = f.pool.stats()[0]!;
      expect(s.rateLimited).toBe(1);
      // Without the header the cooldown would be the pool's own (a few ms here).
      expect(s.cooldownRemainingMs).toBeGreaterThan(1_500);
      expect(s.cooldownRemainingMs).toBeLessThanOrEqual(3_750); // the hint plus up to 25 % jitter
    } finally {
      await resetOnly.close();
    }
  });

  test('a 4xx is the answer: returned at once, no failover', async () => {
    const f = make([notFound.url, ok.url]);
    const res = await f('/missing');
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('no such thing');
    expect(ok.hits).toBe(0);
  });

  test('a hanging endpoint is cut off by the attempt timeout (its request aborted) and the call fails over', async () => {
    const before = hangingAborted.length;
    const f = make([hanging.url, ok.url], { attemptTimeoutMs: 150 });
    expect((await f('/slow')).status).toBe(200);
    await expect.poll(() => hangingAborted.length, { timeout: 5_000 }).toBeGreaterThan(before);
  });

  test('when every endpoint answers an HTTP error, resolves with the last response like fetch does', async () => {
    const f = make([unavailable.url, unavailable.url], { maxAttempts: 2 });
    const res = await f('/a');
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('down');
  });

  test('throwOnHttpError: a PoolError with the HttpStatusError as cause and no URL in any message', async () => {
    const f = make([unavailable.url, notFound.url], { throwOnHttpError: true, maxAttempts: 2 });
    const err = await f('/secret-path?key=abc').catch((e: unknown) => e);
    expect(isPoolError(err)).toBe(true);
    if (!isPoolError(err)) return;
    expect(err.code).toBe('PERMANENT');
    expect(err.cause).toBeInstanceOf(HttpStatusError);
    expect((err.cause as HttpStatusError).status).toBe(404);
    for (const m of [err.message, (err.cause as Error).message]) {
      expect(m).not.toMatch(/127\.0\.0\.1|secret-path|key=abc|http:/);
    }
  });

  test('no HTTP answer at all: rejects with a PoolError whose cause is the network error', async () => {
    const f = make([refused], { maxAttempts: 2 });
    const err = await f('/a').catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'PoolError', code: 'RETRIES_EXHAUSTED', attempts: 2 });
    expect((err as Error).message).not.toContain('127.0.0.1');
  });

  test("the caller's signal aborts the call (and the request in flight)", async () => {
    const f = make([hanging.url]);
    const ac = new AbortController();
    const p = f('/a', { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('user gave up')), 50);
    await expect(p).rejects.toMatchObject({ code: 'ABORTED' });
  });

  test('a POST body marked idempotent is replayed on failover; per-call pool options apply', async () => {
    const f = make([unavailable.url, echo.url]);
    const res = await f('/rpc', { method: 'POST', body: '{"n":1}', idempotent: true });
    expect(await res.text()).toBe('POST {"n":1}');
    const single = await f('/rpc', { method: 'POST', body: 'x', pool: { retry: 'none' } });
    expect(single.status).toBe(503);
  });

  test('an absolute URL under no base URL is refused without being echoed', async () => {
    const f = make([ok.url]);
    await expect(f('http://elsewhere.example/x')).rejects.toThrow(/matches none of the 1 endpoints' base URLs/);
    await expect(f('http://elsewhere.example/x')).rejects.not.toThrow(/elsewhere/);
  });

  test('endpoint names default to the host', () => {
    const f = createPooledFetch({ endpoints: [ok.url, `${ok.url}/v2`] });
    made.push(f);
    expect(f.pool.endpointNames).toEqual([`127.0.0.1:${ok.port}`, `127.0.0.1:${ok.port}#1`]);
  });
});

describe('a rejection of fetch', () => {
  test('is redacted before it reaches the pool and the caller (a request with no replay guard too)', async () => {
    const thrown = new TypeError('fetch failed for https://api.example/v1/KEY123?apikey=SECRET', {
      cause: new Error('connect ECONNREFUSED https://user:PASS@api.example/v1'),
    });
    const f = createPooledFetch({ endpoints: ['https://api.example/v1'], maxAttempts: 1, fetch: () => Promise.reject(thrown) });
    const err = await f('/items').catch((e: unknown) => e);
    expect(isPoolError(err)).toBe(true);
    const texts: string[] = [];
    for (let e: unknown = err; e instanceof Error; e = e.cause) texts.push(e.message, e.stack ?? '');
    expect(texts.join('\n')).toContain('https://api.example/…');
    expect(texts.join('\n')).not.toMatch(/KEY123|SECRET|PASS/);
    await f.pool.close();
  });
});
