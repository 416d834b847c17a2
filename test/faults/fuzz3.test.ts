/**
 * Regressions found by the generated fault schedules of `generated.test.ts` (seeds in
 * bench/notes/fuzz3.md), each reduced to a fixed scenario on loopback servers.
 */
import { describe, expect, test } from 'vitest';
import { createPooledFetch, type PooledFetch } from '../../src/fetch/index.js';
import { loopbackScope } from '../helpers/loopback.js';
import { PooledJsonRpcProvider } from '../../src/ethers/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { timerLag, withLag } from '../helpers/lag.js';

const { server, made } = loopbackScope();

describe('fetch: a POST whose 200 answer has a body that cannot be read', () => {
  // Seed 20261202 (path 1): the server had processed the POST (it answered 200), the body
  // broke on the way, and the request was sent again to the next endpoint.
  test.each([
    ['malformed', (res: import('node:http').ServerResponse) => (res.writeHead(200, { 'content-type': 'application/json' }), res.end('{"id": not json'))],
    [
      'reset mid-body',
      (res: import('node:http').ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"id":');
        setTimeout(() => res.socket?.resetAndDestroy(), 5);
      },
    ],
  ] as const)('%s: is not replayed on another endpoint (parse: json)', async (_name, answer) => {
    const first = await server((_req, res) => answer(res));
    const second = await server((_req, res) => res.end('{"id":2}'));
    const f = createPooledFetch({ endpoints: [{ url: first.url, name: 'e0' }, { url: second.url, name: 'e1' }], attemptTimeoutMs: 2_000 });
    made.push(f);
    const err = await f('/pay', { method: 'POST', body: 'x', parse: 'json' }).catch((e: unknown) => e);
    expect(second.hits).toBe(0);
    expect(first.hits).toBe(1);
    expect(err).toMatchObject({ code: 'PERMANENT', endpoint: 'e0' });
    expect((err as Error).message).toMatch(/POST request may have reached endpoint "e0"/);
    expect((err as { cause?: { name?: string } }).cause?.name).toBe('ResponseBodyError');
  });

  test('a GET with the same answer still fails over', async () => {
    const first = await server((_req, res) => (res.writeHead(200, { 'content-type': 'application/json' }), res.end('{"id": not json')));
    const second = await server((_req, res) => res.end('{"id":2}'));
    const f = createPooledFetch({ endpoints: [{ url: first.url, name: 'e0' }, { url: second.url, name: 'e1' }], attemptTimeoutMs: 2_000 });
    made.push(f);
    await expect(f('/x', { parse: 'json' })).resolves.toEqual({ id: 2 });
    expect(second.hits).toBe(1);
  });
});

describe('ethers: an endpoint that rejects its key', () => {
  // Seed 20261207 (path 7): an RPC endpoint answering 401/403 (an expired key, a plan
  // without the method) ended every call sent there with PERMANENT, where viem moves on.
  test.each([401, 403])('HTTP %i: the call moves on to an endpoint that serves it', async (status) => {
    const locked = await server((_req, res) => (res.writeHead(status, { 'content-type': 'text/plain' }), res.end('invalid key')));
    const good = await server((_req, res, body) => res.end(JSON.stringify({ jsonrpc: '2.0', id: (JSON.parse(body) as { id: number }).id, result: '0x10' })));
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: locked.url, name: 'locked' }, { url: good.url, name: 'good' }], network: 1, attemptTimeoutMs: 2_000 });
    try {
      await expect(p.sendWith('eth_blockNumber', [])).resolves.toBe('0x10');
      expect(locked.hits).toBe(1);
      expect(good.hits).toBe(1);
    } finally {
      await p.close();
    }
  });
});

describe('ethers: Retry-After as an HTTP date is read against the wall clock', () => {
  // Seen while reading the adapter for the generated runs: the provider passed the
  // monotonic `clock.now()` where a calendar time is needed. On a FakeClock (now 0, wall in
  // 2026) a date 5 s ahead read as "55 years", clamped to the 60 s maximum.
  test.each([
    ['an HTTP 429', (date: string) => new Response('{}', { status: 429, headers: { 'retry-after': date } })],
    ['a JSON-RPC rate-limit answer', (date: string) => new Response('{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit exceeded"}}', { status: 429, headers: { 'retry-after': date } })],
  ] as const)('%s', async (_name, answer) => {
    const clock = new FakeClock(0);
    const wall = Date.parse('2026-01-01T00:00:00Z');
    clock.stepWall(wall);
    const p = new PooledJsonRpcProvider({
      endpoints: [{ url: 'http://127.0.0.1:1', name: 'a' }],
      network: 1,
      clock,
      random: () => 0,
      maxAttempts: 1,
      fetch: async () => answer(new Date(wall + 5000).toUTCString()),
    });
    try {
      const err = await p.sendWith('eth_blockNumber', []).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'RETRIES_EXHAUSTED', retryAfterMs: 5000 });
    } finally {
      await p.close();
    }
  });
});

describe('coalesced reads with a retry mode of their own', () => {
  // Seed 15 (path 56, ethers, coalesce): a caller with the pool's retries shared the
  // upstream request of a caller with `retry: { maxAttempts: 1 }`, and got that caller's
  // "the only attempt allowed failed" while another endpoint was healthy.
  test('ethers: a caller is not held to another caller\'s retry mode', async () => {
    const down = await server((_req, res) => (res.writeHead(502), res.end('bad gateway')));
    const good = await server((_req, res, body) => res.end(JSON.stringify({ jsonrpc: '2.0', id: (JSON.parse(body) as { id: number }).id, result: '0x7' })));
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: down.url, name: 'down' }, { url: good.url, name: 'good' }], network: 1, coalesce: ['eth_getBalance'], attemptTimeoutMs: 2_000, backoff: { initialMs: 1, maxMs: 1 } });
    const params = ['0x0000000000000000000000000000000000000001', 'latest'];
    try {
      const [once, usual] = await Promise.allSettled([p.sendWith('eth_getBalance', params, { retry: 'none' }), p.sendWith('eth_getBalance', params)]);
      expect(once.status).toBe('rejected');
      expect(usual).toEqual({ status: 'fulfilled', value: '0x7' });
    } finally {
      await p.close();
    }
  });
});

describe('fetch: a Request with an init whose members are undefined', () => {
  // Found while checking the adapter's inputs for the generated runs: fetch treats an
  // init member that is `undefined` as absent (WebIDL), so `fetch(request, { signal:
  // undefined })` keeps the Request's signal, method and headers. The pooled fetch let the
  // undefined members win: a POST Request went out as a GET with a body (a TypeError, three
  // attempts), and the Request's signal was dropped.
  test('method, headers and body come from the Request', async () => {
    const seen: string[] = [];
    const s = await server((req, res, body) => (seen.push(`${req.method} ${String(req.headers['x-a'])} ${body}`), res.end('{}')));
    const f = createPooledFetch({ endpoints: [s.url], attemptTimeoutMs: 2_000 });
    made.push(f);
    const req = new Request(`${s.url}/x`, { method: 'POST', body: 'a', headers: { 'x-a': '1' } });
    const res = await f(req, { method: undefined, headers: undefined, signal: undefined } as unknown as RequestInit);
    expect(res.status).toBe(200);
    expect(seen).toEqual(['POST 1 a']);
  });

  test("the Request's signal still aborts the call", async () => {
    const s = await server(() => undefined); // never answers
    // Prompt: well within the attempt timeout, which is far beyond the lag-derived bound.
    const bound = withLag(100, await timerLag());
    const f = createPooledFetch({ endpoints: [s.url], attemptTimeoutMs: 10 * bound, deadlineMs: 20 * bound });
    made.push(f);
    const ctl = new AbortController();
    const call = f(new Request(`${s.url}/x`, { signal: ctl.signal }), { signal: undefined } as unknown as RequestInit).catch((e: unknown) => e);
    setTimeout(() => ctl.abort(), 50);
    const t0 = performance.now();
    expect(await call).toMatchObject({ code: 'ABORTED' });
    expect(performance.now() - t0).toBeLessThan(bound);
  });
});
