/**
 * The fetch adapter against a new user's repros (/tmp/nuB, /tmp/nuA), rebuilt on loopback
 * servers against src/: one-shot bodies never replayed, one named test per reported defect.
 */
import { createReadStream, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { inspect } from 'node:util';
import { describe, expect, test } from 'vitest';
import { createPooledFetch, type PooledFetchOptions, type PooledRequestInit } from '../src/fetch/index.js';
import { isHttpStatusError } from '../src/fetch/index.js';
import { isPoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { loopbackScope, type Loopback } from './helpers/loopback.js';

const scope = loopbackScope();
/** An init with a body `RequestInit` does not type (an async iterable) and `duplex`. */
type Init = PooledRequestInit & { readonly parse?: undefined };
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A server that answers `status` and records the bodies it received. */
async function recording(status: number, headers: Record<string, string> = {}): Promise<Loopback & { bodies: string[] }> {
  const bodies: string[] = [];
  const s = await scope.server((_req, res, body) => {
    bodies.push(body);
    res.writeHead(status, headers).end(`answered ${status} to ${JSON.stringify(body)}`);
  });
  return Object.assign(s, { bodies });
}

function make(urls: readonly string[], extra: Partial<PooledFetchOptions> = {}): ReturnType<typeof createPooledFetch> {
  const f = createPooledFetch({ endpoints: urls.map((url, i) => ({ url, name: `e${i}` })), attemptTimeoutMs: 5_000, backoff: { initialMs: 1, maxMs: 2 }, ...extra });
  scope.made.push(f);
  return f;
}

describe('1. an async-iterable body is sent once, like a ReadableStream (repro-asynciter-*.mjs)', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'ep-upload-')), 'upload.txt');
  writeFileSync(file, 'file-content');
  const bodies: Record<string, () => unknown> = {
    'an async generator': () =>
      (async function* () {
        yield text('payload');
      })(),
    'a Node Readable': () => Readable.from([Buffer.from('payload')]),
    'fs.createReadStream': () => createReadStream(file),
  };
  test.each([
    [429, 'POST', { 'retry-after': '1' }],
    [503, 'PUT', {}],
  ] as const)('answered %i, the %s with %s is not sent again: the first answer is the call\'s', async (status, method, headers) => {
    for (const [kind, body] of Object.entries(bodies)) {
      const a = await recording(status, headers);
      const b = await recording(200);
      const f = make([a.url, b.url]);
      const res = await f('/p', { method, body: body() as BodyInit, duplex: 'half' } as Init);
      const expected = kind === 'fs.createReadStream' ? 'file-content' : 'payload';
      expect([kind, res.status, a.bodies, b.bodies]).toEqual([kind, status, [expected], []]);
      await res.text();
    }
  });

  test('a POST marked idempotent with an async-iterable body is not hedged', async () => {
    const got: string[] = [];
    const held: (() => void)[] = [];
    const slow = await scope.server((_req, res, body) => {
      got.push(`slow ${body}`);
      held.push(() => res.end('slow'));
    });
    const fast = await scope.server((_req, res, body) => {
      got.push(`fast ${body}`);
      res.end('fast');
    });
    const hedges: number[] = [];
    const f = make([slow.url, fast.url], { hedge: { afterMs: 1 }, onEvent: (e) => e.type === 'hedge' && hedges.push(e.callId) });
    const gen = (async function* () {
      yield text('{"q":"x"}');
    })();
    const p = f('/search', { method: 'POST', body: gen as unknown as BodyInit, duplex: 'half', idempotent: true } as Init);
    // A control call with a string body, started after it with the same hedge delay: once its
    // hedge has reached `fast`, the first call's hedge timer (made earlier) has fired too.
    const control = f('/search', { method: 'POST', body: 'control', idempotent: true });
    const t0 = Date.now();
    while (!got.includes('fast control') && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 5));
    for (const release of held) release();
    const [res] = await Promise.all([p, control]);
    expect([await res.text(), hedges.length]).toEqual(['slow', 1]);
    expect(got.filter((g) => g.includes('q'))).toEqual(['slow {"q":"x"}']);
  });

  test('strings, bytes, Blob, FormData and URLSearchParams are still replayed', async () => {
    const fd = new FormData();
    fd.append('k', 'v');
    for (const body of ['s', text('u8'), text('ab').buffer, new Blob(['blob']), fd, new URLSearchParams({ q: 'x' })]) {
      const a = await recording(503);
      const b = await recording(200);
      const res = await make([a.url, b.url])('/p', { method: 'PUT', body: body as BodyInit });
      expect(res.status).toBe(200);
      expect(b.bodies).toHaveLength(1);
      const unbounded = (t: string | undefined): string | undefined => t?.replace(/formdata-undici-\d+/g, 'boundary');
      expect(unbounded(b.bodies[0])).toBe(unbounded(a.bodies[0]));
    }
  });
});

describe('2. with getToken, a 401 to a stream body is not replayed (repro-token-stream.mjs)', () => {
  const stream = (): ReadableStream<Uint8Array> =>
    new ReadableStream({
      start(c) {
        c.enqueue(text('payload'));
        c.close();
      },
    });
  const gen = (): unknown =>
    (async function* () {
      yield text('payload');
    })();

  test.each([
    ['a ReadableStream', stream],
    ['an async generator', gen],
  ] as const)('%s: the token is refreshed, the request sent once, and the call fails UNAUTHORIZED with the 401', async (_, body) => {
    let issued = 0;
    const got: string[] = [];
    const s = await scope.server((req, res, b) => {
      got.push(`${req.headers.authorization} ${b}`);
      if (req.headers.authorization === 'Bearer t2') res.end('ok');
      else res.writeHead(401).end('bad token');
    });
    const f = make([s.url], { getToken: async () => `t${++issued}` });
    const error = await f('/upload', { method: 'PUT', body: body() as BodyInit, duplex: 'half' } as Init).catch((e: unknown) => e);
    expect(isPoolError(error) && [error.code, error.endpoint, error.message]).toEqual([
      'UNAUTHORIZED',
      'e0',
      'endpoint "e0" answered HTTP 401; its token was refreshed, but the request is not sent again: its body is a stream, which fetch drains as it sends (a string, bytes or a Blob can be replayed)',
    ]);
    const cause = (error as Error).cause;
    expect(isHttpStatusError(cause) && cause.status).toBe(401);
    // Sent once, with the first token; the refresh still happened, for the next request.
    expect([got, issued]).toEqual([['Bearer t1 payload'], 2]);
    const res = await f('/upload', { method: 'PUT', body: body() as BodyInit, duplex: 'half' } as Init);
    expect([res.status, got.at(-1), issued]).toEqual([200, 'Bearer t2 payload', 2]);
  });

  test("an endpoint's first token is fetched before a stream body goes out: sent once, answered", async () => {
    const got: string[] = [];
    const s = await scope.server((req, res, b) => {
      got.push(`${req.headers.authorization} ${b}`);
      res.end('ok');
    });
    const f = make([s.url], { getToken: async () => 'tok' });
    const res = await f('/upload', { method: 'PUT', body: stream(), duplex: 'half' } as Init);
    expect([res.status, got]).toEqual([200, ['Bearer tok payload']]);
  });
});

describe('4. every attempt got an HTTP answer: the last one is returned (repro-http-answer-lost.mjs, ra.mjs)', () => {
  /** A pooled fetch on a fake clock over `fetch` mocks: the waits are the pool's, in virtual time. */
  const virtual = (answer: (i: number, init: RequestInit) => Promise<Response>, extra: Partial<PooledFetchOptions> = {}) => {
    const clock = new FakeClock(Date.parse('2026-03-01T12:00:00Z'));
    let n = 0;
    const f = createPooledFetch({ endpoints: ['https://a.example'], clock, fetch: (_url, init) => answer(n++, init), ...extra });
    scope.made.push(f);
    return { f, clock, sent: () => n };
  };
  const status = (code: number, headers: Record<string, string> = {}) => async () => new Response(`${code}`, { status: code, headers });

  test.each([
    ['503 Retry-After: 30 past a 5 s deadline (RATE_LIMITED before)', 503, { 'retry-after': '30' }, { deadlineMs: 5_000 }],
    ['429 Retry-After: 30 past a 5 s deadline (RATE_LIMITED before)', 429, { 'retry-after': '30' }, { deadlineMs: 5_000 }],
    ['503, a backoff past the deadline (DEADLINE_EXCEEDED before)', 503, {}, { deadlineMs: 1_000, backoff: { initialMs: 3_000, maxMs: 3_000, jitter: 'none' } }],
  ] as const)('%s', async (_, code, headers, extra) => {
    const { f, clock, sent } = virtual(status(code, headers), extra as Partial<PooledFetchOptions>);
    const res = await clock.runUntilSettled(f('/items'));
    expect([res.status, await res.text(), sent()]).toEqual([code, `${code}`, 1]);
  });

  test('with throwOnHttpError it still rejects, with that code and the answer as the cause', async () => {
    const { f, clock } = virtual(status(503, { 'retry-after': '30' }), { deadlineMs: 5_000, throwOnHttpError: true });
    const error = await clock.runUntilSettled(f('/items')).catch((e: unknown) => e);
    expect(isPoolError(error) && [error.code, isHttpStatusError(error.cause) && error.cause.status]).toEqual(['RATE_LIMITED', 503]);
  });

  test('a deadline that cut an attempt with no answer yet rejects (the 503 before it is not the answer)', async () => {
    const { f, clock, sent } = virtual(
      (i, init) =>
        i === 0
          ? status(503)()
          : new Promise<Response>((_, reject) => init.signal!.addEventListener('abort', () => reject(init.signal!.reason))),
      { deadlineMs: 1_000, attemptTimeoutMs: 10_000 },
    );
    const error = await clock.runUntilSettled(f('/items')).catch((e: unknown) => e);
    expect(isPoolError(error) && [error.code, sent()]).toEqual(['DEADLINE_EXCEEDED', 2]);
  });

  test('the answers not returned have their bodies cancelled; the one returned is untouched', async () => {
    const cancelled: number[] = [];
    const answer = async (i: number): Promise<Response> => {
      const body = new ReadableStream({ pull: (c) => c.enqueue(text('x')), cancel: () => void cancelled.push(i) });
      return new Response(body, { status: 503, headers: { 'retry-after': '30' } });
    };
    const { f, clock, sent } = virtual(answer, { endpoints: ['https://a.example', 'https://b.example'], deadlineMs: 5_000 });
    const res = await clock.runUntilSettled(f('/items'));
    expect([res.status, res.bodyUsed, sent(), cancelled]).toEqual([503, false, 2, [0]]);
    await res.body!.cancel();
  });

  test("the caller's abort still rejects, whatever came before", async () => {
    const { f, clock } = virtual(status(503), { backoff: { initialMs: 60_000, maxMs: 60_000, jitter: 'none' } });
    const ac = new AbortController();
    const p = f('/items', { signal: ac.signal });
    await clock.advance(1_000);
    ac.abort();
    await expect(clock.runUntilSettled(p)).rejects.toMatchObject({ code: 'ABORTED' });
  });
});

describe('5. a parse that fails without reading the body frees it (repro-parse-leak.mjs)', () => {
  const notJson = async (res: Response): Promise<unknown> => {
    if (!res.headers.get('content-type')?.includes('json')) throw new Error('not JSON'); // the body is not read
    return res.json();
  };

  test('the unread body is cancelled, and the call fails over', async () => {
    const cancelled: string[] = [];
    const fetch = async (url: string): Promise<Response> => {
      if (url.startsWith('https://b.example')) return Response.json({ ok: true });
      const body = new ReadableStream({ pull: (c) => c.enqueue(text('<html>')), cancel: () => void cancelled.push(url) });
      return new Response(body, { headers: { 'content-type': 'text/html' } });
    };
    const f = make(['https://a.example', 'https://b.example'], { fetch });
    expect(await f('/item', { parse: notJson })).toEqual({ ok: true });
    expect(cancelled).toEqual(['https://a.example/item']);
  });
});

describe('6. no key in the errors of a redirect whose Location cannot be parsed (repro-redact-redirect.mjs)', () => {
  test('the error and the events, printed, never show the key', async () => {
    const s = await scope.server((req, res) => res.writeHead(301, { location: `http://[bad${req.url}` }).end());
    const events: unknown[] = [];
    const f = createPooledFetch({ endpoints: [`${s.url}/v1?apikey=SECRET123`], backoff: { initialMs: 1, maxMs: 2 }, onEvent: (e) => events.push(e) });
    scope.made.push(f);
    const error = await f('/items').catch((e: unknown) => e);
    expect(isPoolError(error)).toBe(true);
    // Node builds the cause with `input` and `base` (the whole URL): the repro printed both.
    let e: unknown = error;
    const fields: string[] = [];
    while (typeof e === 'object' && e !== null) {
      fields.push(...Object.keys(e));
      e = (e as { cause?: unknown }).cause;
    }
    expect(fields).toContain('input');
    expect(inspect(error, { depth: 10 })).not.toContain('SECRET');
    expect(events.length).toBeGreaterThan(0);
    for (const ev of events) expect(inspect(ev, { depth: 10 })).not.toContain('SECRET');
  });
});

describe('7. a fetch mock answering a plain object (h30-fetch-mock.mjs, h31-fetch-mock-404.mjs)', () => {
  /** The common test mock: `{ ok, status, json }`, no body, no headers. */
  const plainObject = (status: number) => async () => ({ ok: status < 400, status, json: async () => ({ status }) }) as unknown as Response;

  test.each([
    ['404 (returned at once)', 404, 1],
    ['500 on both endpoints (three attempts)', 500, 3],
  ] as const)('%s: the call resolves with it, no TypeError', async (_, status, sent) => {
    let n = 0;
    const answer = plainObject(status);
    const f = make(['https://a.example', 'https://b.example'], { fetch: () => (n++, answer()) });
    const res = await f('/users/1');
    expect([res.status, await res.json(), n]).toEqual([status, { status }, sent]);
  });

  test('with throwOnHttpError: a PoolError, its cause the HttpStatusError', async () => {
    const f = make(['https://a.example', 'https://b.example'], { fetch: plainObject(500), throwOnHttpError: true });
    const error = await f('/users/1').catch((e: unknown) => e);
    expect(isPoolError(error) && [error.code, isHttpStatusError(error.cause) && error.cause.status]).toEqual(['RETRIES_EXHAUSTED', 500]);
  });
});

describe("8. a Request whose body stalls is read within the call's deadline and signal (repro-request-stall.mjs)", () => {
  /** A body that gives one chunk and then nothing, recording its cancel. */
  const stuck = (cancelled: unknown[]) =>
    new ReadableStream<Uint8Array>({
      start: (c) => c.enqueue(text('part')),
      cancel: (reason) => void cancelled.push(reason),
    });

  test('the deadline ends the read: DEADLINE_EXCEEDED, nothing sent, the stream cancelled', async () => {
    const clock = new FakeClock();
    let sent = 0;
    const f = make(['https://a.example'], { clock, deadlineMs: 1_000, fetch: async () => (sent++, new Response('ok')) });
    const cancelled: unknown[] = [];
    const req = new Request('https://a.example/up', { method: 'PUT', body: stuck(cancelled), duplex: 'half' } as RequestInit);
    const error = await clock.runUntilSettled(f(req)).catch((e: unknown) => e);
    expect(isPoolError(error) && [error.code, error.message]).toEqual([
      'DEADLINE_EXCEEDED',
      "the call's deadline of 1000 ms passed while the Request's body was read, before any attempt",
    ]);
    expect([sent, cancelled.length]).toEqual([0, 1]);
  });

  test("a per-call deadline and the caller's signal bound it too", async () => {
    const clock = new FakeClock();
    const f = make(['https://a.example'], { clock, fetch: async () => new Response('ok') });
    const perCall = await clock
      .runUntilSettled(f(new Request('https://a.example/up', { method: 'PUT', body: stuck([]), duplex: 'half' } as RequestInit), { pool: { deadlineMs: 200 } }))
      .catch((e: unknown) => e);
    expect(isPoolError(perCall) && perCall.message).toBe("the call's deadline of 200 ms passed while the Request's body was read, before any attempt");
    const ac = new AbortController();
    const p = f(new Request('https://a.example/up', { method: 'PUT', body: stuck([]), duplex: 'half', signal: ac.signal } as RequestInit));
    ac.abort(new Error('caller gave up'));
    const aborted = await p.catch((e: unknown) => e);
    expect(isPoolError(aborted) && [aborted.code, (aborted.cause as Error).message]).toEqual(['ABORTED', 'caller gave up']);
  });

  test('a body that ends is sent, and replayed', async () => {
    const got: string[] = [];
    const a = await recording(503);
    const b = await scope.server((_req, res, body) => {
      got.push(body);
      res.end('ok');
    });
    const f = make([a.url, b.url]);
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        c.enqueue(text('pa'));
        c.enqueue(text('rt'));
        c.close();
      },
    });
    const res = await f(new Request(`${a.url}/up`, { method: 'PUT', body, duplex: 'half' } as RequestInit));
    expect([res.status, a.bodies, got]).toEqual([200, ['part'], ['part']]);
  });
});
