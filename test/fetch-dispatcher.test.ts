/**
 * How a pooled fetch closes its request on Node without a signal (src/fetch/dispatcher.ts):
 * once the global `fetch` has been seen calling an `init.dispatcher`, each attempt hands
 * `fetch` a dispatcher instead of a signal, and aborting the attempt (timeout, the caller's
 * signal) aborts the request through it: while waiting for headers, while the body is read,
 * and while it waits for a connection. Everywhere else the signal is used as before.
 * Loopback server on 127.0.0.1, real timers, bounded waits. Own file: what the adapter has
 * learned about the global `fetch` is module state.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createPooledFetch } from '../src/fetch/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import { isPoolError } from '../src/index.js';
import { LazyContext } from '../src/call/context.js';

/** What the global `fetch` was handed, per request (recorded by a wrapper that passes `init` on). */
interface Seen {
  readonly url: string;
  readonly signal: boolean;
  readonly dispatcher: unknown;
}

let server: Server;
let base = '';
/** Request URLs the server received, and the URLs whose socket closed. */
const received: string[] = [];
const closedOnServer: string[] = [];
const held: ServerResponse[] = [];
const sockets = new Set<Socket>();
/** The URLs each open socket carried (its close closes them all). */
const urlsOn = new Map<Socket, string[]>();
const nativeFetch = globalThis.fetch;
let seen: Seen[] = [];

/** The global `fetch`, wrapped to record what each request carries (it passes `init` on, so it honours a dispatcher). */
function recordingFetch(): typeof fetch {
  return (input: RequestInfo | URL, init?: RequestInit) => {
    seen.push({ url: String(input), signal: init?.signal != null, dispatcher: (init as { dispatcher?: unknown } | undefined)?.dispatcher });
    return nativeFetch(input, init);
  };
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url!;
  received.push(url);
  urlsOn.get(req.socket)?.push(url);
  if (url.startsWith('/hang')) return; // never answers
  if (url.startsWith('/hold')) {
    held.push(res); // answered by the test
    return;
  }
  if (url.startsWith('/half')) {
    // Headers and part of the body, then nothing.
    res.writeHead(200, { 'content-length': '100' });
    res.write('part');
    return;
  }
  if (url.startsWith('/rpc')) {
    // A JSON-RPC node for the ethers provider: the block number, under the request's id.
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const id = (JSON.parse(body) as { id: unknown }).id;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id, result: '0x10' }));
    });
    return;
  }
  if (url === '/moved') {
    res.writeHead(302, { location: '/ok' });
    res.end();
    return;
  }
  if (url === '/moved-to-hang') {
    res.writeHead(302, { location: '/hang?redirected' });
    res.end();
    return;
  }
  res.end('ok');
}

beforeAll(async () => {
  server = createServer(handle);
  server.keepAliveTimeout = 60_000;
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    urlsOn.set(s, []);
    s.on('close', () => {
      closedOnServer.push(...urlsOn.get(s)!);
      urlsOn.delete(s);
      sockets.delete(s);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Node loads undici (and its global dispatcher) on the first fetch.
  await (await nativeFetch(`${base}/ok`)).text();
});

afterEach(() => {
  globalThis.fetch = nativeFetch;
  seen = [];
  for (const res of held.splice(0)) res.end('late');
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const timedOut = (error: unknown): boolean => isPoolError(error) && isPoolError(error.cause) && error.cause.code === 'ATTEMPT_TIMEOUT';

describe('the global fetch of Node (undici)', () => {
  test('the first request probes it with a signal and a dispatcher; once it called the dispatcher, requests carry no signal', async () => {
    globalThis.fetch = recordingFetch();
    const f = createPooledFetch({ endpoints: [base] });
    for (let i = 0; i < 3; i++) expect(await (await f(`/ok?${i}`)).text()).toBe('ok');
    expect(seen.map((s) => [s.signal, s.dispatcher !== undefined])).toEqual([
      [true, true],
      [false, true],
      [false, true],
    ]);
    // One dispatcher per attempt.
    expect(new Set(seen.map((s) => s.dispatcher)).size).toBe(3);
    // A redirect goes through the same dispatcher (undici calls it once per hop).
    expect(await (await f('/moved')).text()).toBe('ok');
    await f.pool.close();
  });

  test('an attempt that times out waiting for headers closes its request: the server sees the socket close', async () => {
    globalThis.fetch = recordingFetch();
    const f = createPooledFetch({ endpoints: [base], maxAttempts: 1 });
    await (await f('/ok')).text(); // the probe, if this global fetch is new
    const err = await f('/hang?headers', { pool: { attemptTimeoutMs: 100 } }).catch((e: unknown) => e);
    expect(timedOut(err)).toBe(true);
    expect(seen.at(-1)).toMatchObject({ url: `${base}/hang?headers`, signal: false });
    await expect.poll(() => closedOnServer.includes('/hang?headers'), { timeout: 5_000 }).toBe(true);
    await f.pool.close();
  });

  test('an attempt that times out while its body is read (parse) closes its request', async () => {
    globalThis.fetch = recordingFetch();
    const f = createPooledFetch({ endpoints: [base], maxAttempts: 1 });
    await (await f('/ok')).text();
    const err = await f('/half?body', { parse: 'text', pool: { attemptTimeoutMs: 150 } }).catch((e: unknown) => e);
    expect(timedOut(err)).toBe(true);
    expect(seen.at(-1)).toMatchObject({ signal: false });
    await expect.poll(() => closedOnServer.includes('/half?body'), { timeout: 5_000 }).toBe(true);
    await f.pool.close();
  });

  test('a redirect: each hop is relayed (the aborter relays the first, a relay of its own the next), and the timeout closes the second', async () => {
    globalThis.fetch = recordingFetch();
    const f = createPooledFetch({ endpoints: [base], maxAttempts: 1 });
    await (await f('/ok')).text();
    for (let i = 0; i < 3; i++) expect(await (await f('/moved')).text()).toBe('ok');
    const err = await f('/moved-to-hang', { pool: { attemptTimeoutMs: 150 } }).catch((e: unknown) => e);
    expect(timedOut(err)).toBe(true);
    expect(received).toContain('/hang?redirected');
    expect(seen.at(-1)).toMatchObject({ url: `${base}/moved-to-hang`, signal: false });
    await expect.poll(() => closedOnServer.includes('/hang?redirected'), { timeout: 5_000 }).toBe(true);
    await f.pool.close();
  });

  test("the caller's signal aborts the request in flight", async () => {
    globalThis.fetch = recordingFetch();
    const f = createPooledFetch({ endpoints: [base], maxAttempts: 1 });
    await (await f('/ok')).text();
    const ac = new AbortController();
    const p = f('/hang?caller', { signal: ac.signal });
    await expect.poll(() => received.includes('/hang?caller'), { timeout: 5_000 }).toBe(true);
    ac.abort(new Error('gave up'));
    await expect(p).rejects.toMatchObject({ code: 'ABORTED' });
    expect(seen.at(-1)).toMatchObject({ signal: false });
    await expect.poll(() => closedOnServer.includes('/hang?caller'), { timeout: 5_000 }).toBe(true);
    await f.pool.close();
  });

  test('an attempt that ends while its request waits for a connection: the request is never sent', async () => {
    // One connection per origin: the first request holds it, the pooled one waits in undici's queue.
    // Both global dispatchers where there are two: Node 24's fetch reads undici 7's first one, Node 26's the second.
    const g = globalThis as unknown as Record<symbol, { constructor: new (o: object) => { close(): Promise<void> } } | undefined>;
    const keys = [Symbol.for('undici.globalDispatcher.2'), Symbol.for('undici.globalDispatcher.1')].filter((k) => g[k] !== undefined);
    const originals = keys.map((k) => g[k]!);
    const one = new originals[0]!.constructor({ connections: 1 });
    for (const k of keys) g[k] = one as never;
    try {
      globalThis.fetch = recordingFetch();
      const f = createPooledFetch({ endpoints: [base], maxAttempts: 1 });
      await (await f('/ok')).text();
      const holder = nativeFetch(`${base}/hold`).then((r) => r.text());
      await expect.poll(() => held.length, { timeout: 5_000 }).toBe(1);
      const err = await f('/ok?queued', { pool: { attemptTimeoutMs: 100 } }).catch((e: unknown) => e);
      expect(timedOut(err)).toBe(true);
      expect(seen.at(-1)).toMatchObject({ signal: false });
      held.shift()!.end('held');
      expect(await holder).toBe('held');
      // Once the connection is free, the waiting request is aborted instead of sent; the next one goes through.
      expect(await (await f('/ok?after')).text()).toBe('ok');
      expect(received).toContain('/ok?after');
      expect(received).not.toContain('/ok?queued');
      await f.pool.close();
    } finally {
      keys.forEach((k, i) => (g[k] = originals[i] as never));
      for (const res of held.splice(0)) res.end('late');
      await one.close();
    }
  });

  test("a request's own dispatcher is kept (it gets the signal instead)", async () => {
    globalThis.fetch = recordingFetch();
    const f = createPooledFetch({ endpoints: [base] });
    await (await f('/ok')).text();
    let dispatched = 0;
    const own = {
      dispatch(opts: object, handler: object): boolean {
        dispatched++;
        const g = globalThis as unknown as Record<symbol, { dispatch(o: object, h: object): boolean } | undefined>;
        return (g[Symbol.for('undici.globalDispatcher.2')] ?? g[Symbol.for('undici.globalDispatcher.1')])!.dispatch(opts, handler);
      },
    };
    expect(await (await f('/ok?own', { dispatcher: own } as RequestInit)).text()).toBe('ok');
    expect(seen.at(-1)).toMatchObject({ signal: true, dispatcher: own });
    expect(dispatched).toBe(1);
    await f.pool.close();
  });
});

describe('where fetch is not known to call a dispatcher, the signal', () => {
  test('a global fetch that ignores init.dispatcher (a mock, another runtime): probed once, then signals only', async () => {
    const inits: RequestInit[] = [];
    globalThis.fetch = async (_input: RequestInfo | URL, init?: RequestInit) => {
      inits.push(init!);
      return new Response('stub');
    };
    const f = createPooledFetch({ endpoints: [base] });
    for (let i = 0; i < 3; i++) expect(await (await f('/x')).text()).toBe('stub');
    expect(inits.map((i) => [i.signal instanceof AbortSignal, (i as { dispatcher?: unknown }).dispatcher !== undefined])).toEqual([
      [true, true],
      [true, false],
      [true, false],
    ]);
    await f.pool.close();
  });

  test('a dispatcher handler of a shape not known (a later undici): passed on untouched, then signals only', async () => {
    const g = globalThis as unknown as Record<symbol, unknown>;
    const keys = [Symbol.for('undici.globalDispatcher.1'), Symbol.for('undici.globalDispatcher.2')] as const;
    const saved = keys.map((k) => g[k]);
    const handed: object[] = [];
    g[keys[0]] = { dispatch: (_opts: object, h: object) => handed.push(h) > 0 };
    g[keys[1]] = undefined;
    const made: object[] = [];
    const inits: RequestInit[] = [];
    globalThis.fetch = async (_input: RequestInfo | URL, init?: RequestInit) => {
      inits.push(init!);
      const d = (init as { dispatcher?: { dispatch(o: object, h: object): boolean } }).dispatcher;
      if (d !== undefined) {
        const h = { onSomethingNew() {} };
        made.push(h);
        d.dispatch({}, h);
      }
      return new Response('stub');
    };
    try {
      const f = createPooledFetch({ endpoints: [base] });
      for (let i = 0; i < 3; i++) expect(await (await f('/x')).text()).toBe('stub');
      expect(handed).toHaveLength(1);
      expect(handed[0]).toBe(made[0]);
      expect(inits.map((i) => [i.signal instanceof AbortSignal, (i as { dispatcher?: unknown }).dispatcher !== undefined])).toEqual([
        [true, true],
        [true, false],
        [true, false],
      ]);
      await f.pool.close();
    } finally {
      keys.forEach((k, i) => (g[k] = saved[i]));
    }
  });

  test('a fetch option gets the signal, never a dispatcher', async () => {
    const inits: RequestInit[] = [];
    const f = createPooledFetch({
      endpoints: [base],
      fetch: (url, init) => {
        inits.push(init);
        return nativeFetch(url, init);
      },
    });
    for (let i = 0; i < 3; i++) expect(await (await f('/ok')).text()).toBe('ok');
    expect(inits.every((i) => i.signal instanceof AbortSignal && !('dispatcher' in i))).toBe(true);
    await f.pool.close();
  });
});

describe("an attempt's abort target (SignalContext.watch, call/context.ts)", () => {
  const target = (): { reasons: unknown[]; abort(reason: unknown): void } => {
    const reasons: unknown[] = [];
    return { reasons, abort: (reason) => reasons.push(reason) };
  };

  test('the abort reaches the target once; after a normal end it does not', () => {
    const ctx = new LazyContext('a', 1, Infinity);
    const t = target();
    expect(ctx.watch(t)).toBe(true);
    ctx.abort('first');
    ctx.abort('second');
    expect(t.reasons).toEqual(['first']);
    // A signal read afterwards comes back aborted, with the first reason.
    expect(ctx.signal.aborted && ctx.signal.reason).toBe('first');

    const ended = new LazyContext('a', 1, Infinity);
    const u = target();
    expect(ended.watch(u)).toBe(true);
    ended.release();
    ended.abort('late');
    expect(u.reasons).toEqual([]);
  });

  test('not watched when the signal is taken or the attempt was cut short: the signal serves', () => {
    const read = new LazyContext('a', 1, Infinity);
    void read.signal;
    expect(read.watch(target())).toBe(false);
    const early = new LazyContext('a', 1, Infinity);
    early.abort('early');
    expect(early.watch(target())).toBe(false);
    expect(early.signal.aborted).toBe(true);
  });

  test('a signal read while a target is watched aborts both', () => {
    const ctx = new LazyContext('a', 1, Infinity);
    const t = target();
    expect(ctx.watch(t)).toBe(true);
    const signal = ctx.signal;
    ctx.abort('both');
    expect(signal.aborted).toBe(true);
    expect(t.reasons).toEqual(['both']);
  });
});

describe('the ethers provider on the global fetch of Node (src/ethers/http.ts abortRoute)', () => {
  test('probes the global fetch like the fetch adapter, then sends each request with a dispatcher and no signal', async () => {
    globalThis.fetch = recordingFetch();
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: `${base}/rpc` }], network: 1 });
    for (let i = 0; i < 3; i++) expect(await p.send('eth_blockNumber', [])).toBe('0x10');
    expect(seen.map((x) => [x.signal, x.dispatcher !== undefined])).toEqual([
      [true, true],
      [false, true],
      [false, true],
    ]);
    expect(new Set(seen.map((x) => x.dispatcher)).size).toBe(3);
    p.destroy();
    await p.pool.close();
  });

  test('an attempt that times out closes its request through the dispatcher: the server sees the socket close', async () => {
    globalThis.fetch = recordingFetch();
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: `${base}/hang?ethers` }], network: 1, maxAttempts: 1, attemptTimeoutMs: 100 });
    await p.send('eth_blockNumber', []).catch(() => undefined); // the probe of this new global fetch, itself timed out
    const err = await p.send('eth_blockNumber', []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(seen.at(-1)).toMatchObject({ signal: false });
    expect(seen.at(-1)!.dispatcher).toBeDefined();
    await expect.poll(() => closedOnServer.filter((u) => u === '/hang?ethers').length, { timeout: 5_000 }).toBe(2);
    p.destroy();
    await p.pool.close();
  });

  test('a fetch handed to the provider gets the signal, never a dispatcher', async () => {
    const given: Seen[] = [];
    const p = new PooledJsonRpcProvider({
      endpoints: [{ url: `${base}/rpc` }],
      network: 1,
      fetch: (url, init) => (given.push({ url, signal: init.signal != null, dispatcher: (init as { dispatcher?: unknown }).dispatcher }), nativeFetch(url, init)),
    });
    expect(await p.send('eth_blockNumber', [])).toBe('0x10');
    expect(given.map((x) => [x.signal, x.dispatcher])).toEqual([[true, undefined]]);
    p.destroy();
    await p.pool.close();
  });
});
