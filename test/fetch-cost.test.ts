/**
 * What a pooled `fetch` request costs besides the `fetch` itself, checked without timing
 * (issue 16; docs/performance.md, "fetch, eighth session"):
 *   - keep-alive is kept: sequential requests, error answers among them, reuse one connection;
 *   - each attempt hands `fetch` a plain controller's signal: undici keeps its abort listener
 *     until the request is collected, so tracking the signal for reuse would be wasted, and
 *     counting those signals as misses would stop other operations' signals being reused;
 *   - an attempt that times out still closes its HTTP request (the socket closes on the server).
 * Own file: signal reuse is module state (src/base/signals.ts).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPooledFetch } from '../src/fetch/index.js';
import { Pool, isPoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { reusesSignals } from '../src/base/signals.js';

const tracked = (s: AbortSignal): boolean => Object.hasOwn(s, 'addEventListener');

describe('the signal a pooled fetch hands to fetch', () => {
  // Where signals are never reused (Node 24, Bun, Deno: test/signals.test.ts) every controller is plain anyway.
  test.skipIf(!reusesSignals())('a plain controller per attempt, never tracked nor kept; other operations still reuse theirs', async () => {
    const signals: AbortSignal[] = [];
    // Like undici: adds an abort listener and leaves it there.
    const fetch = async (_url: string, init: RequestInit): Promise<Response> => {
      signals.push(init.signal!);
      init.signal!.addEventListener('abort', () => undefined, { once: true });
      return new Response('ok');
    };
    const f = createPooledFetch({ endpoints: ['http://a.example'], fetch, clock: new FakeClock() });
    for (let i = 0; i < 40; i++) await (await f('/x')).text();
    expect(signals).toHaveLength(40);
    expect(new Set(signals).size).toBe(40);
    expect(signals.filter(tracked)).toHaveLength(0);
    // An operation that removes its listener (viem's HTTP transport does) gets its signal back.
    const p = new Pool<number>({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', clock: new FakeClock() });
    const addsAndRemoves = async (_c: number, ctx: { signal: AbortSignal }): Promise<AbortSignal> => {
      const l = (): void => undefined;
      ctx.signal.addEventListener('abort', l);
      ctx.signal.removeEventListener('abort', l);
      return ctx.signal;
    };
    const first = await p.execute(addsAndRemoves);
    expect(tracked(first)).toBe(true);
    expect(await p.execute(addsAndRemoves)).toBe(first);
    await Promise.all([f.pool.close(), p.close()]);
  });
});

describe('a pooled fetch without an async wrapper', () => {
  test('a bad input, init or per-call option rejects the promise, never throws where it is called', async () => {
    const f = createPooledFetch({ endpoints: ['http://a.example'], fetch: async () => new Response('ok'), clock: new FakeClock() });
    const calls = [() => f(42 as never), () => f('/x', { parse: 'yaml' as never }), () => f('/x', { pool: { retry: 'twice' as never } }), () => f('https://elsewhere.example/x')];
    for (const call of calls) {
      let promise: Promise<unknown> | undefined;
      expect(() => (promise = call())).not.toThrow();
      await expect(promise).rejects.toBeInstanceOf(Error);
    }
    await expect(f('/x', { pool: { retry: 'twice' as never } })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'retry' });
    expect(await (await f('/x')).text()).toBe('ok');
    await f.pool.close();
  });
});

describe('connections of a pooled fetch (loopback)', () => {
  let server: Server;
  let base = '';
  let opened = 0;
  const closedOnServer: string[] = [];
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/hang') {
        req.socket.once('close', () => closedOnServer.push(req.url!));
        return; // never answers
      }
      res.statusCode = req.url === '/down' ? 503 : 200;
      res.end(req.url === '/down' ? 'down' : 'ok');
    });
    server.keepAliveTimeout = 60_000;
    server.on('connection', (s: Socket) => {
      opened++;
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('sequential requests reuse one connection, error answers among them', async () => {
    const f = createPooledFetch({ endpoints: [base], maxAttempts: 1 });
    // undici opens a second connection for the second request to a new origin (a bare fetch too).
    for (let i = 0; i < 3; i++) await (await f('/ok')).text();
    const before = opened;
    for (let i = 0; i < 30; i++) {
      const res = await f(i % 3 === 0 ? '/down' : '/ok');
      expect(res.status).toBe(i % 3 === 0 ? 503 : 200);
      await res.text();
    }
    expect(opened - before).toBe(0);
    await f.pool.close();
  });

  test('an attempt that times out closes its request: the server sees the socket close', async () => {
    const f = createPooledFetch({ endpoints: [base], attemptTimeoutMs: 100, maxAttempts: 1 });
    const err = await f('/hang').catch((e: unknown) => e);
    expect(isPoolError(err) && isPoolError(err.cause) && err.cause.code).toBe('ATTEMPT_TIMEOUT');
    await expect.poll(() => closedOnServer.includes('/hang'), { timeout: 5_000 }).toBe(true);
    await f.pool.close();
  });
});
