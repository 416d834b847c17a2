/**
 * The fetch adapter replays only what is safe to repeat (issue 17), and takes what an SDK
 * hands its `fetch`: absolute URLs, `URL`s and `Request`s under a base URL.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createPooledFetch, NotReplayableError, type PooledFetch, type PooledFetchOptions, type PooledRequestInit } from '../src/fetch/index.js';
import { isPoolError } from '../src/index.js';
import { refusedPort, startLoopback, type Loopback } from './helpers/loopback.js';

let slow: Loopback;
let failing: Loopback;
let echo: Loopback;
let refused: string;
/** What `failing` answers (502 unless a test says otherwise). */
let failStatus = 502;
const seen: { server: string; method: string; key: string | undefined }[] = [];
const made: PooledFetch[] = [];

beforeAll(async () => {
  // Answers after 10 s: any attempt to it times out (the test's timeouts are far shorter).
  slow = await startLoopback((req, res) => {
    seen.push({ server: 'slow', method: req.method!, key: req.headers['idempotency-key'] as string | undefined });
    const t = setTimeout(() => res.end('late'), 10_000);
    res.on('close', () => clearTimeout(t));
  });
  failing = await startLoopback((req, res) => {
    seen.push({ server: 'failing', method: req.method!, key: req.headers['idempotency-key'] as string | undefined });
    res.statusCode = failStatus;
    res.end('bad gateway');
  });
  echo = await startLoopback((req, res, body) => {
    seen.push({ server: 'echo', method: req.method!, key: req.headers['idempotency-key'] as string | undefined });
    res.end(`${req.method} ${req.url} ${body}`);
  });
  refused = `http://127.0.0.1:${await refusedPort()}`;
});

afterAll(async () => {
  await Promise.all([slow, failing, echo].map((s) => s.close()));
});

afterEach(async () => {
  seen.length = 0;
  await Promise.all(made.splice(0).map((f) => f.pool.close()));
});

function make(urls: string[], extra: Partial<PooledFetchOptions> = {}): PooledFetch {
  const f = createPooledFetch({ endpoints: urls.map((url, i) => ({ url, name: `e${i}` })), attemptTimeoutMs: 300, backoff: { initialMs: 1, maxMs: 5 }, ...extra });
  made.push(f);
  return f;
}

describe('replays only idempotent requests after a failure that may have reached the server', () => {
  test('a POST that times out is not sent to a second server', async () => {
    const f = make([slow.url, echo.url]);
    const err = await f('/pay', { method: 'POST', body: 'x' }).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('PERMANENT');
    expect((err as Error).message).toMatch(/the POST request may have reached endpoint "e0" before it failed, and is not replayed/);
    expect((err as Error & { endpoint: string }).endpoint).toBe('e0');
    expect(seen.map((s) => s.server)).toEqual(['slow']);
  });

  test("the refused replay sends nothing and does not close the next endpoint's half-open breaker", async () => {
    const f = make([slow.url, failing.url], { breaker: { threshold: 1, cooldownMs: 1 } });
    await f('/x', { pool: { pin: 'e1', retry: 'none' } }); // a 502 opens e1's breaker
    const t0 = Date.now();
    while (f.pool.breakerState('e1') !== 'half-open' && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 1));
    expect(f.pool.breakerState('e1')).toBe('half-open');
    seen.length = 0;
    await expect(f('/pay', { method: 'POST', body: 'x' })).rejects.toMatchObject({ code: 'PERMANENT', endpoint: 'e0' });
    expect(seen.map((s) => s.server)).toEqual(['slow']);
    // A probe that sent nothing proves nothing: e1 is not closed by it.
    expect(f.pool.breakerState('e1')).not.toBe('closed');
  });

  // 500 itself too: a mutation run found `< 500` could read `<= 500` unnoticed (thirty-fourth session).
  test.each([500, 502, 503])('a POST answered %i is not replayed: its response is the answer', async (status) => {
    failStatus = status;
    try {
      const f = make([failing.url, echo.url]);
      const res = await f('/pay', { method: 'POST', body: 'x' });
      expect(res.status).toBe(status);
      expect(seen.map((s) => s.server)).toEqual(['failing']);
      const thrown = make([failing.url, echo.url], { throwOnHttpError: true });
      await expect(thrown('/pay', { method: 'POST', body: 'x' })).rejects.toMatchObject({ code: 'PERMANENT', endpoint: 'e0' });
    } finally {
      failStatus = 502;
    }
  });

  test('a POST whose fetch throws before it returns (nothing sent) moves on to the next server', async () => {
    const f = createPooledFetch({
      endpoints: [failing.url, echo.url],
      fetch: (url, init) => {
        if (url.startsWith(failing.url)) throw new TypeError('this fetch cannot send to that host');
        return fetch(url, init);
      },
    });
    made.push(f);
    const res = await f('/pay', { method: 'POST', body: 'x' });
    expect(await res.text()).toBe('POST /pay x');
    expect(seen.map((s) => s.server)).toEqual(['echo']);
  });

  test('a GET that times out is replayed on the next server', async () => {
    const f = make([slow.url, echo.url]);
    const res = await f('/read');
    expect(await res.text()).toBe('GET /read ');
    expect(seen.map((s) => s.server)).toEqual(['slow', 'echo']);
  });

  test('a POST to a refused connection still fails over (it never left)', async () => {
    const f = make([refused, echo.url]);
    const res = await f('/pay', { method: 'POST', body: 'x' });
    expect(await res.text()).toBe('POST /pay x');
  });

  test("Deno's words: a POST whose connection could not be made fails over; one sent and then lost is not replayed", async () => {
    // Deno's fetch gives no code: its cause says where it failed (read off Deno 2.9; the suite run
    // on Deno found the refused POST above not failing over).
    const denoError = (what: string) => new TypeError('fetch failed', { cause: new Error(`error sending request for url (http://127.0.0.1:1/pay): client error (${what})`) });
    const sent: string[] = [];
    const fetchLike = (phase: string) => async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = String(input instanceof Request ? input.url : input);
      sent.push(url);
      if (url.startsWith('http://deno.test')) throw denoError(phase);
      return new Response(`${init?.method ?? 'GET'} ok`);
    };
    const connect = make(['http://deno.test', echo.url], { fetch: fetchLike('Connect): tcp connect error: Connection refused (os error 111') });
    expect(await (await connect('/pay', { method: 'POST', body: 'x' })).text()).toBe('POST ok');
    expect(sent.map((u) => new URL(u).host)).toEqual(['deno.test', new URL(echo.url).host]);
    sent.length = 0;
    const lost = make(['http://deno.test', echo.url], { fetch: fetchLike('SendRequest): connection closed before message completed') });
    await expect(lost('/pay', { method: 'POST', body: 'x' })).rejects.toMatchObject({ code: 'PERMANENT', endpoint: 'e0' });
    expect(sent.map((u) => new URL(u).host)).toEqual(['deno.test']);
  });

  test.each<[string, PooledRequestInit & { readonly parse?: undefined }, Partial<PooledFetchOptions>]>([
    ['idempotent: true in the init', { method: 'POST', body: 'x', idempotent: true }, {}],
    ['idempotent: true in the pool options', { method: 'POST', body: 'x', pool: { idempotent: true } }, {}],
    ['an Idempotency-Key header', { method: 'POST', body: 'x', headers: { 'Idempotency-Key': 'k1' } }, {}],
    // Read without a Headers object where the init gives an object or pairs: any case counts.
    ['an idempotency key among pairs', { method: 'POST', body: 'x', headers: [['content-type', 'text/plain'], ['IDEMPOTENCY-KEY', 'k1']] }, {}],
    ['an idempotency key in a Headers', { method: 'POST', body: 'x', headers: new Headers({ 'idempotency-key': 'k1' }) }, {}],
    ["replay: 'always'", { method: 'PATCH', body: 'x' }, { replay: 'always' }],
  ])('opt-in: %s', async (_, init, extra) => {
    const f = make([slow.url, echo.url], extra);
    const res = await f('/pay', init);
    expect(res.status).toBe(200);
    expect(seen.map((s) => s.server)).toEqual(['slow', 'echo']);
  });

  test('idempotency keys: generated once per call, the same on every attempt; a custom header name', async () => {
    let n = 0;
    const f = make([slow.url, echo.url], { idempotencyKey: () => `key-${++n}` });
    await f('/pay', { method: 'POST', body: 'x' });
    expect(seen).toEqual([
      { server: 'slow', method: 'POST', key: 'key-1' },
      { server: 'echo', method: 'POST', key: 'key-1' },
    ]);
    seen.length = 0;
    const g = make([slow.url, echo.url], { idempotencyKey: true });
    await g('/pay', { method: 'POST', body: 'x' });
    expect(seen[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!.key).toBe(seen[0]!.key);
    seen.length = 0;
    const h = make([slow.url, echo.url], { idempotencyKey: 'x-request-id' });
    await h('/pay', { method: 'POST', body: 'x', headers: { 'X-Request-Id': 'r1' } });
    expect(seen.map((s) => s.server)).toEqual(['slow', 'echo']);
  });

  test('a header fetch would refuse fails the call at once with its TypeError, before any endpoint is tried', async () => {
    const f = make([echo.url, echo.url]);
    for (const init of [
      { headers: { 'bad name': 'x' } },
      { method: 'POST', body: 'x', headers: { 'x-ok': 'bad\r\nvalue' } },
      { method: 'POST', body: 'x', headers: [['x-ok', 'fine'], ['x-emoji', 'caf\u{1F600}']] },
      { method: 'PUT', body: 'x', headers: [['', 'empty name']] },
    ] as (PooledRequestInit & { readonly parse?: undefined })[]) {
      const err = await f('/h', init).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TypeError);
      expect((err as Error).message).toMatch(/^pooled fetch: .*(header name|header ".*" is not valid)/);
    }
    expect(seen).toEqual([]);
    expect(f.pool.stats().map((s) => s.attempts)).toEqual([0, 0]);
    // What fetch takes passes: any case, a value with inner spaces and tabs, bytes up to 0xff.
    const ok = await f('/h', { method: 'POST', body: 'x', idempotent: true, headers: { 'X-Custom_Name.1': 'a b\tc', 'x-latin': 'caf\u00e9' } });
    expect(ok.status).toBe(200);
  });

  test('idempotent: false keeps even a GET from being replayed', async () => {
    const f = make([slow.url, echo.url]);
    await expect(f('/read', { idempotent: false })).rejects.toBeInstanceOf(Error);
    expect(seen.map((s) => s.server)).toEqual(['slow']);
  });

  test('NotReplayableError is the classifier-visible marker', () => {
    expect(new NotReplayableError('POST', 'a', new Error('x')).message).toMatch(/POST is not idempotent/);
  });
});

describe('accepts what an SDK passes to fetch', () => {
  test('absolute URL strings, URLs and Requests under a base URL', async () => {
    const f = make([`${echo.url}/v1`]);
    expect(await (await f(`${echo.url}/v1/items?x=1`)).text()).toBe('GET /v1/items?x=1 ');
    expect(await (await f(new URL(`${echo.url}/v1/items`))).text()).toBe('GET /v1/items ');
    const req = new Request(`${echo.url}/v1/rpc`, { method: 'PUT', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
    expect(await (await f(req)).text()).toBe('PUT /v1/rpc {"a":1}');
    // init overrides the Request's fields, as with fetch
    expect(await (await f(new Request(`${echo.url}/v1/rpc`, { method: 'POST', body: 'a' }), { body: 'b' })).text()).toBe('POST /v1/rpc b');
  });

  test('a Request body is replayed on failover (read once)', async () => {
    const f = make([failing.url, echo.url]);
    const res = await f(new Request(`${echo.url}/x`, { method: 'PUT', body: 'payload' }));
    expect(await res.text()).toBe('PUT /x payload');
  });

  test('a URL under no base, or a lookalike host, is a clear error that does not echo it', async () => {
    const f = make([echo.url]);
    await expect(f(`${echo.url}9/x`)).rejects.toThrow(/matches none of the 1 endpoints' base URLs/);
    await expect(f(new URL('http://secret-host.example/?key=abc'))).rejects.not.toThrow(/secret|abc/);
    await expect(f(42 as never)).rejects.toThrow(/expected a path, an absolute URL, a URL or a Request/);
  });

  test('usable where fetch is expected', () => {
    const f = make([echo.url]);
    const sdkFetch: typeof fetch = f;
    expect(typeof sdkFetch).toBe('function');
  });
});
