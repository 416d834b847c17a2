/**
 * Findings of a new user's run through README.md and docs/ (NOTES-newuser.md): each test
 * pins one surprise that was fixed, in code or in the docs.
 */
import { describe, expect, test } from 'vitest';
import { createPooledFetch, parseRetryAfter } from '../src/fetch/index.js';
import { Pool, isPoolError, type PoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

describe('createPooledFetch', () => {
  test("a call that gets no endpoint never resolves with another call's response", async () => {
    const clock = new FakeClock();
    const fetch = async (url: string | URL | Request): Promise<Response> => new Response(`body of ${String(url)}`, { status: 500 });
    const api = createPooledFetch({ endpoints: ['https://a.example', 'https://b.example'], fetch, clock, breaker: { threshold: 1, cooldownMs: 60_000 } });
    const first = await api('/private/alice');
    expect(first.status).toBe(500); // every attempt failed: the last answer is returned
    expect(await first.text()).toContain('/private/alice');
    // Both breakers are open now: the next call makes no attempt at all.
    const second = await api('/bob').then(
      (res) => res,
      (error: unknown) => error,
    );
    expect(isPoolError(second) ? second.code : second).toBe('NO_ENDPOINT');
    if (isPoolError(second)) expect(second.attempts).toBe(0);
    await api.pool.close();
  });
});

describe("createPooledFetch's own options are checked like the pool's", () => {
  const endpoints = ['https://a.example'];
  test.each([
    ['fetch', { fetch: 5 }],
    ['classify', { classify: 'transient' }],
    ['getToken', { getToken: 'token' }],
    ['maxRetryAfterMs', { maxRetryAfterMs: -1 }],
    ['maxRetryAfterMs', { maxRetryAfterMs: Number.NaN }],
    ['throwOnHttpError', { throwOnHttpError: 'yes' }],
    ['replay', { replay: 'never' }],
    ['idempotencyKey', { idempotencyKey: 5 }],
    ['idempotencyKey', { idempotencyKey: '' }],
    ['endpoints[0]', { endpoints: ['not a url?key=SECRET'] }],
    ['endpoints[1]', { endpoints: ['https://a.example', 'ftp://b.example'] }],
    ['endpoints[0].url', { endpoints: [{ name: 'a', url: 5 }] }],
    ['endpoints[0].url', { endpoints: [{ name: 'a', conn: 'https://a.example' }] }],
  ] as const)('%s: %j', (field, bad) => {
    let error: unknown;
    try {
      createPooledFetch({ endpoints, ...(bad as object) } as never);
    } catch (e) {
      error = e;
    }
    expect(isPoolError(error) && error.code).toBe('INVALID_OPTIONS');
    if (isPoolError(error)) {
      expect(error.field).toBe(field);
      expect(error.message).not.toContain('SECRET');
    }
  });

  test('Infinity is a valid maxRetryAfterMs', async () => {
    const api = createPooledFetch({ endpoints, maxRetryAfterMs: Number.POSITIVE_INFINITY, clock: new FakeClock() });
    await api.pool.close();
  });
});

describe('createPooledFetch: requests', () => {
  const recorder = () => {
    const urls: string[] = [];
    const fetch = async (url: string | URL | Request): Promise<Response> => {
      urls.push(String(url));
      return new Response('{}', { status: 200 });
    };
    return { urls, fetch };
  };

  test.each([
    ['https://h.example/v1?apikey=K', '/items', 'https://h.example/v1/items?apikey=K'],
    ['https://h.example/v1?apikey=K', '/items?limit=2', 'https://h.example/v1/items?apikey=K&limit=2'],
    ['https://h.example/v1/?apikey=K', 'items#top', 'https://h.example/v1/items?apikey=K#top'],
    ['https://h.example/v1?', '/items', 'https://h.example/v1/items'],
  ])('a base URL with a query keeps it after the path: %s + %s', async (base, path, want) => {
    const { urls, fetch } = recorder();
    const api = createPooledFetch({ endpoints: [base], fetch, clock: new FakeClock() });
    await api(path);
    expect(urls).toEqual([want]);
    await api.pool.close();
  });

  test.each([
    ['parse', { parse: 'xml' }],
    ['idempotent', { idempotent: 'yes' }],
  ])('a bad per-request %s is INVALID_OPTIONS naming it', async (field, init) => {
    const { urls, fetch } = recorder();
    const api = createPooledFetch({ endpoints: ['https://h.example'], fetch, clock: new FakeClock() });
    const error = await api('/x', init as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isPoolError(error) && [error.code, error.field]).toEqual(['INVALID_OPTIONS', field]);
    expect(urls).toEqual([]);
    await api.pool.close();
  });
});

describe('messages', () => {
  test('an attempt timeout says whole milliseconds, as a real clock reads fractions', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, attemptTimeoutMs: 100.3, maxAttempts: 1 });
    const call = pool.execute(() => new Promise<never>(() => undefined)).catch((e: unknown) => e);
    await clock.advance(100.7);
    const error = (await call) as PoolError;
    expect((error.cause as PoolError).message).toBe('attempt 1 on endpoint "a" timed out after 100 ms');
    await pool.close();
  });
});

describe("the Quick start's priorities, as README.md describes them", () => {
  const quickStart = (backupPriority: 'high' | 'low') => {
    const clock = new FakeClock();
    const pool = new Pool<string>({
      endpoints: [
        { name: 'primary', conn: 'primary', rateLimit: { perSecond: 25 } },
        { name: 'backup', conn: 'backup', priority: backupPriority },
      ],
      classify: (err) => (err instanceof Error && err.message === '429' ? 'rate-limited' : 'transient'),
      attemptTimeoutMs: 3_000,
      deadlineMs: 10_000,
      clock,
    });
    return { clock, pool };
  };
  const settle = async (clock: FakeClock, p: Promise<unknown>) => {
    const r = p.then(
      (v) => v,
      (e: unknown) => (isPoolError(e) ? `${e.code} after ${e.attempts}` : e),
    );
    await clock.runAll();
    return r;
  };
  /** An operation that records the endpoints it ran on and fails on `primary` with `message`. */
  const primaryFails = (message: string) => {
    const used: string[] = [];
    const op = async (conn: string) => {
      used.push(conn);
      if (conn === 'primary') throw new Error(message);
      return 'ok';
    };
    return { used, op };
  };

  test("a low backup is not tried while primary's breaker is closed; the second call opens it and backup serves", async () => {
    const { clock, pool } = quickStart('low');
    const { used, op } = primaryFails('connection reset');
    expect(await settle(clock, pool.execute(op))).toBe('RETRIES_EXHAUSTED after 3');
    expect(used).toEqual(['primary', 'primary', 'primary']);
    expect(await settle(clock, pool.execute(op))).toBe('ok');
    expect(used.slice(3)).toEqual(['primary', 'primary', 'backup']);
    await pool.close();
  });

  test('a primary answering only 429 never hands a call to a low backup; at the same priority backup takes over at once', async () => {
    for (const priority of ['low', 'high'] as const) {
      const { clock, pool } = quickStart(priority);
      const { used, op } = primaryFails('429');
      const first = await settle(clock, pool.execute(op));
      if (priority === 'low') {
        expect(first).toBe('RETRIES_EXHAUSTED after 3');
        expect(used).toEqual(['primary', 'primary', 'primary']);
      } else {
        expect(first).toBe('ok');
        expect(used).toEqual(['primary', 'backup']);
      }
      await pool.close();
    }
  });

  test('a transient failure at the same priority moves to backup at once', async () => {
    const { clock, pool } = quickStart('high');
    const { used, op } = primaryFails('connection reset');
    expect(await settle(clock, pool.execute(op))).toBe('ok');
    expect(used).toEqual(['primary', 'backup']);
    await pool.close();
  });
});

describe('close() while an attempt hangs, as docs/calls.md describes it', () => {
  const hanging = (log: string[]) => (_conn: string, ctx: { signal: AbortSignal }) =>
    new Promise<never>((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => {
        log.push('aborted');
        reject(new Error('aborted'));
      });
    });

  test('close() does not abort a running attempt: it resolves when the attempt times out', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, attemptTimeoutMs: 10_000 });
    const log: string[] = [];
    const call = pool.execute(hanging(log)).catch((e: unknown) => (isPoolError(e) ? e.code : e));
    await clock.flush();
    let closed = false;
    const closing = pool.close().then(() => (closed = true));
    await clock.advance(9_999);
    expect([closed, log]).toEqual([false, []]);
    await clock.advance(1);
    await closing;
    expect(log).toEqual(['aborted']);
    expect(await call).toBe('CLOSED'); // the timeout ended the attempt; close() allowed no retry
  });

  test("aborting the calls' shared signal before close() ends them and close() at once", async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, attemptTimeoutMs: 10_000 });
    const shutdown = new AbortController();
    const log: string[] = [];
    const calls = [1, 2].map(() => pool.execute(hanging(log), { signal: shutdown.signal }).catch((e: unknown) => (isPoolError(e) ? e.code : e)));
    await clock.flush();
    shutdown.abort();
    await pool.close();
    expect(clock.now()).toBe(0);
    expect(await Promise.all(calls)).toEqual(['ABORTED', 'ABORTED']);
    expect(log).toEqual(['aborted', 'aborted']);
  });
});

describe('getToken, as docs/fetch.md describes it', () => {
  test('a refused first token is refreshed once within that request (the first fetch is not the call\'s one refresh)', async () => {
    const tokens = ['stale', 'fresh'];
    let fetched = 0;
    const fetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> =>
      new Response(null, { status: new Headers(init?.headers).get('authorization') === 'Bearer fresh' ? 200 : 401 });
    const api = createPooledFetch({ endpoints: [{ name: 'a', url: 'https://a.example' }], fetch, clock: new FakeClock(), getToken: async () => tokens[fetched++]! });
    const first = await api('/x').then(
      (r) => r.status,
      (e: unknown) => (isPoolError(e) ? e.code : e),
    );
    expect([first, fetched]).toEqual([200, 2]);
    expect((await api('/x')).status).toBe(200);
    expect(fetched).toBe(2);
    await api.pool.close();
  });
});

describe('Retry-After longer than backoff.maxMs', () => {
  const run = async (backoff: { maxMs: number } | undefined) => {
    const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
    const times: number[] = [];
    const fetch = async (): Promise<Response> => {
      times.push(clock.now());
      return new Response(null, { status: 429, headers: { 'retry-after': '30' } });
    };
    const api = createPooledFetch({ endpoints: ['https://a.example'], fetch, clock, random: () => 0, deadlineMs: 120_000, ...(backoff === undefined ? {} : { backoff }) });
    const call = api('/x', { pool: { retry: { maxAttempts: 2 } } });
    await clock.runAll();
    expect((await call).status).toBe(429);
    await api.pool.close();
    return times.map((t) => t - times[0]!);
  };

  test('is cut to backoff.maxMs (10 s by default), as docs/quotas.md says; a larger maxMs honours it', async () => {
    expect(await run(undefined)).toEqual([0, 10_000]);
    expect(await run({ maxMs: 60_000 })).toEqual([0, 30_000]);
  });
});

describe('hanging endpoints ahead of a healthy one, with the default timeouts', () => {
  const run = async (extra: { attemptTimeoutMs?: number }) => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: ['a', 'b', 'c', 'd'].map((n) => ({ name: n, conn: n })), classify: () => 'transient', clock, random: () => 0.5, ...extra });
    const used: string[] = [];
    const call = pool
      .execute((conn) => {
        used.push(conn);
        return conn === 'd' ? Promise.resolve('ok') : new Promise<never>(() => undefined);
      })
      .catch((e: unknown) => (isPoolError(e) ? e.code : e));
    const result = await clock.runUntilSettled(call);
    await pool.close();
    return { result, used: used.join(''), ms: clock.now() };
  };

  test('three hang for 10 s each and the 30 s deadline runs out before the fourth; shorter attempts reach it', async () => {
    expect(await run({})).toEqual({ result: 'DEADLINE_EXCEEDED', used: 'abc', ms: 30_000 });
    expect(await run({ attemptTimeoutMs: 5_000 })).toEqual({ result: 'ok', used: 'abcd', ms: 15_000 });
  });
});

describe("createPooledFetch: the caller's signal and the body", () => {
  /** A fetch whose body never ends and errors when the request's signal aborts, as undici's does. */
  const stalling = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"a":'));
        init?.signal?.addEventListener('abort', () => controller.error(init.signal?.reason));
      },
    });
    return new Response(body, { status: 200 });
  };

  test('with parse, aborting init.signal aborts the body read (it runs inside the attempt)', async () => {
    const api = createPooledFetch({ endpoints: ['https://a.example'], fetch: stalling, clock: new FakeClock() });
    const caller = new AbortController();
    let outcome = 'pending';
    const call = api('/x', { signal: caller.signal, parse: 'json' }).then(
      () => (outcome = 'read'),
      (e: unknown) => (outcome = isPoolError(e) ? e.code : String(e)),
    );
    await new Promise((resolve) => setImmediate(resolve));
    caller.abort();
    await Promise.race([call, new Promise((resolve) => setImmediate(resolve))]); // no sleep: one turn of the event loop
    expect(outcome).toBe('ABORTED');
    await api.pool.close();
  });

  test('without parse, a body read after the call returned is not under init.signal (docs/fetch.md says so)', async () => {
    const api = createPooledFetch({ endpoints: ['https://a.example'], fetch: stalling, clock: new FakeClock() });
    const caller = new AbortController();
    const res = await api('/x', { signal: caller.signal });
    let outcome = 'pending';
    void res.text().then(
      () => (outcome = 'read'),
      (e: unknown) => (outcome = `rejected: ${(e as Error).name}`),
    );
    caller.abort();
    await new Promise((resolve) => setImmediate(resolve));
    expect(outcome).toBe('pending');
    await res.body?.cancel().catch(() => undefined);
    await api.pool.close();
  });
});

describe("createPooledFetch with the pool's hedge", () => {
  const setup = () => {
    const clock = new FakeClock();
    const sent: string[] = [];
    const fetch = (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const u = String(url);
      sent.push(`${init?.method ?? 'GET'} ${u}`);
      if (u.startsWith('https://slow.example')) {
        return new Promise<Response>((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
      }
      return Promise.resolve(new Response('fast', { status: 200 }));
    };
    const api = createPooledFetch({ endpoints: ['https://slow.example', 'https://fast.example'], fetch, clock, hedge: { afterMs: 100 } });
    return { clock, sent, api };
  };

  test.each([
    ['a GET', {}, true],
    ['a HEAD', { method: 'HEAD' }, true],
    ['a POST marked idempotent', { method: 'POST', idempotent: true }, true],
    ['a GET marked not idempotent', { idempotent: false }, false],
    ['a plain POST', { method: 'POST' }, false],
    ['a PUT (replayed after a failure, but not sent twice at once)', { method: 'PUT' }, false],
  ])('%s is hedged: %s', async (_label, init, hedged) => {
    const { clock, sent, api } = setup();
    let settled = false;
    const call = api('/x', init as never).then(
      (r) => r,
      (e: unknown) => e,
    ).finally(() => (settled = true));
    await clock.advance(100);
    await clock.flush();
    expect(settled).toBe(hedged);
    expect(sent.length).toBe(hedged ? 2 : 1);
    await clock.runAll();
    await call;
    await api.pool.close();
  });
});

describe('createPooledFetch: absolute URLs are matched to the base URLs as the URL parser writes them', () => {
  test.each([
    ['https://API.Example.com/v1', new URL('https://API.Example.com/v1/items')],
    ['https://api.example.com:443/v1', 'https://api.example.com/v1/items'],
    ['https://api.example.com:443/v1', new Request('https://api.example.com:443/v1/items')],
    ['HTTPS://api.example.com/v1/', 'https://api.example.com/v1/items'],
    ['https://api.example.com/v 1', new URL('https://api.example.com/v 1/items')],
  ])('base %s, input %s', async (base, input) => {
    const sent: string[] = [];
    const fetch = async (url: string | URL | Request): Promise<Response> => {
      sent.push(new URL(String(url)).href);
      return new Response('ok');
    };
    const api = createPooledFetch({ endpoints: [base], fetch, clock: new FakeClock() });
    await api(input);
    expect(sent).toEqual([new URL(String(base).replace(/\/$/, '') + '/items').href]);
    await api.pool.close();
  });
});

describe('options named as other libraries name them', () => {
  const endpoints = [{ name: 'a', conn: 'a' }];
  test.each([
    [{ breaker: { resetTimeout: 30_000 } }, 'breaker.resetTimeout', "did you mean 'cooldownMs'?"], // opossum
    [{ breaker: { halfOpenAfter: 30_000 } }, 'breaker.halfOpenAfter', "did you mean 'cooldownMs'?"], // cockatiel
    [{ backoff: { base: 100 } }, 'backoff.base', "did you mean 'initialMs'?"],
    [{ backoff: { maxDelay: 5_000 } }, 'backoff.maxDelay', "did you mean 'maxMs'?"],
    [{ backoff: { factor: 3 } }, 'backoff.factor', 'the delay doubles on each retry'],
    [{ signal: new AbortController().signal }, 'signal', 'a per-call option: pool.execute(op, { signal })'],
    // The operation, as the README's first sentence lists it beside the endpoints and classify.
    [{ operation: async () => 1 }, 'operation', 'each call passes it, pool.execute((conn, ctx) => ...)'],
    [{ endpoints: [{ name: 'a', conn: 'a', rateLimit: { perMinute: 60 } }] }, 'endpoints[0].rateLimit.perMinute', 'n per minute is perSecond: n / 60'],
  ])('%j', (extra, field, says) => {
    let error: unknown;
    try {
      new Pool<string>({ endpoints, classify: () => 'transient', ...(extra as object) });
    } catch (e) {
      error = e;
    }
    expect(isPoolError(error) && [error.code, error.field]).toEqual(['INVALID_OPTIONS', field]);
    expect((error as Error).message).toContain(says);
  });
});

describe('Retry-After under a second', () => {
  test.each([
    ['0.001', 1_000],
    ['0.5', 1_000],
    ['1.5', 1_500],
    ['0', 0],
  ])('parseRetryAfter(%j) = %i', (value, want) => {
    expect(parseRetryAfter(value, 0)).toBe(want);
  });

  test('a date within the current second is a one-second wait', () => {
    const now = Date.parse('2026-01-01T00:00:00.700Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:01 GMT', now)).toBe(1_000);
  });

  test('a call retrying until its deadline does not hammer a server that answers 429 with Retry-After: 0.001', async () => {
    const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
    let sent = 0;
    const fetch = async (): Promise<Response> => {
      sent++;
      return new Response(null, { status: 429, headers: { 'retry-after': '0.001' } });
    };
    const api = createPooledFetch({ endpoints: ['https://a.example'], fetch, clock, random: () => 0.5 });
    const call = api('/x', { pool: { retry: 'until-deadline', deadlineMs: 5_000 } }).then(
      (r) => r.status,
      (e: unknown) => (isPoolError(e) ? e.code : e),
    );
    await clock.runAll();
    await call;
    expect(sent).toBeLessThanOrEqual(6); // one per second or so; it was 5,000 (one per millisecond)
    await api.pool.close();
  });
});
