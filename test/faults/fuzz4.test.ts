/**
 * Regressions found (or fixed on request) on branch fuzz4, each reduced to a fixed
 * scenario on loopback servers or the FakeClock. Seeds in bench/notes/fuzz4.md.
 */
import { describe, expect, test } from 'vitest';
import { createPooledFetch, classifyFetchError, classifyStatus, HttpStatusError, type PooledFetch } from '../../src/fetch/index.js';
import { loopbackScope, type Loopback } from '../helpers/loopback.js';
import { FakeEndpoint, fail, harness, ok, start } from '../support.js';
import { UnknownRpcError, http, webSocket } from 'viem';
import { socketClientCache } from 'viem/utils';
import { classifyViemError } from '../../src/viem/classify.js';
import { refusedPort } from '../helpers/loopback.js';
import { serveWsFaults } from './gen.js';
import { keccak256 } from 'viem';
import { PooledJsonRpcProvider } from '../../src/ethers/index.js';
import { poolTransport } from '../../src/viem/index.js';
import { timerLag, withLag } from '../helpers/lag.js';

const { server, made } = loopbackScope();

describe('fetch: an endpoint that rejects its key, its plan or the method (401, 402, 403, 405) without a token provider', () => {
  // The viem and ethers adapters move on (the answer is about the endpoint: its key, its
  // plan); the fetch adapter ended the call with that answer while another endpoint worked.
  // 402 Payment Required: a plan out of credit (dRPC's free tier, enviodev/hyperindex#715).
  test.each([401, 402, 403, 405])('HTTP %i from e0: the call moves on to e1 (GET and POST, Response and parse)', async (status) => {
    const first = await server((_req, res) => res.writeHead(status).end());
    const second = await server((_req, res) => res.end('{"ok":true}'));
    const f = createPooledFetch({ endpoints: [{ url: first.url, name: 'e0' }, { url: second.url, name: 'e1' }], attemptTimeoutMs: 2_000 });
    made.push(f);
    expect((await f('/x')).status).toBe(200);
    await expect(f('/x', { parse: 'json' })).resolves.toEqual({ ok: true });
    // A POST refused for its key was not processed: moved on too.
    await expect(f('/pay', { method: 'POST', body: 'x', parse: 'json' })).resolves.toEqual({ ok: true });
    expect(first.hits).toBe(3);
    expect(second.hits).toBe(3);
  });

  test('every endpoint answers 403: the last answer is returned (or thrown with throwOnHttpError), each endpoint asked once', async () => {
    const a = await server((_req, res) => res.writeHead(403).end('a'));
    const b = await server((_req, res) => res.writeHead(403).end('b'));
    const f = createPooledFetch({ endpoints: [{ url: a.url, name: 'e0' }, { url: b.url, name: 'e1' }], attemptTimeoutMs: 2_000, maxAttempts: 5 });
    made.push(f);
    const res = await f('/x');
    expect(res.status).toBe(403);
    expect(a.hits + b.hits).toBe(2);
    const g = createPooledFetch({ endpoints: [{ url: a.url, name: 'e0' }, { url: b.url, name: 'e1' }], attemptTimeoutMs: 2_000, maxAttempts: 5, throwOnHttpError: true });
    made.push(g);
    const err = (await g('/x').catch((e: unknown) => e)) as { code?: string; cause?: unknown };
    expect(err.code).toBe('NO_ENDPOINT');
    expect((err.cause as HttpStatusError).status).toBe(403);
    expect(a.hits + b.hits).toBe(4);
  });

  test.each([404, 410])('ethers: HTTP %i from e0 (no JSON-RPC endpoint at that URL) moves on to e1; fetch keeps it final', async (status) => {
    const first = await server((_req, res) => res.writeHead(status).end('not here'));
    const second = await server((_req, res, body) => res.end(JSON.stringify({ jsonrpc: '2.0', id: (JSON.parse(body) as { id: number }).id, result: '0x2a' })));
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: first.url, name: 'e0' }, { url: second.url, name: 'e1' }], network: 1, strategy: 'ordered', attemptTimeoutMs: 5_000 });
    made.push(p);
    await expect(p.sendWith('eth_blockNumber', [])).resolves.toBe('0x2a');
    expect(first.hits).toBe(1);
    expect(classifyStatus(status)).toBe('permanent'); // a REST resource that is not there
  });

  test('the table: 401, 402, 403, 405 unsupported; 404 and 400 still permanent', () => {
    expect([401, 402, 403, 405].map((s) => classifyStatus(s))).toEqual(['unsupported', 'unsupported', 'unsupported', 'unsupported']);
    expect(classifyFetchError(new HttpStatusError(403))).toBe('unsupported');
    expect(classifyStatus(404)).toBe('permanent');
    expect(classifyStatus(400)).toBe('permanent');
  });
});

describe("fetch: a token rotated between an endpoint's first token fetch and the request (T1)", () => {
  // Found by generated4's rotating-token runs: the first fetch of a token went through the
  // call's one refresh, so a rotation in that window (one round trip) ended the call
  // UNAUTHORIZED while a fresh token would have worked.
  test("the call refreshes once more and succeeds: the endpoint's first fetch is not the call's refresh", async () => {
    let issued = 0;
    let accepted = '';
    let refuseAll = false;
    const s = await server((req, res) => {
      if (req.headers.authorization === `Bearer ${accepted}`) res.end('ok');
      else res.writeHead(401).end();
    });
    const getToken = async (): Promise<string> => {
      issued++;
      const token = `t${issued}`;
      // The server moves on to the next token as soon as the first one is handed out.
      if (!refuseAll) accepted = issued === 1 ? 't2' : token;
      return token;
    };
    const f = createPooledFetch({ endpoints: [{ url: s.url, name: 'e0' }], getToken, attemptTimeoutMs: 2_000 });
    made.push(f);
    const res = await f('/x');
    expect([res.status, await res.text(), issued]).toEqual([200, 'ok', 2]);
    // Tokens the server refuses outright end a later call after two refreshes (fuzz5 R1).
    refuseAll = true;
    accepted = 'never';
    const refused = await f('/x').catch((error: unknown) => error);
    expect([(refused as { code?: string }).code, issued]).toEqual(['UNAUTHORIZED', 4]);
  });
});

describe('a late rate-limited answer from an endpoint setEndpoints replaced or removed', () => {
  // gaps.md left these: endpoint-cooling and endpoint-adapted events of a dead endpoint
  // carried its name, which is the live replacement's (or no endpoint's any more).
  const cases = [
    ['cooling', { perSecond: 10 }],
    ['adaptive', { perSecond: 10, mode: 'paced', adaptive: true }],
  ] as const;
  test.each(cases)('%s: replaced (same name, new connection): no endpoint-cooling or endpoint-adapted under the live name', async (_what, rateLimit) => {
    const h = harness([{ name: 'a', rateLimit }, { name: 'b' }], { strategy: 'ordered' });
    h.eps['a']!.then(fail('rate-limited', 100));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    const seen = h.events.length;
    h.pool.setEndpoints([{ name: 'a', conn: new FakeEndpoint('a', ok('fresh')), rateLimit }, { name: 'b', conn: h.eps['b']! }]);
    await h.clock.advance(200);
    await call.promise;
    const late = h.events.slice(seen).filter((e) => e.type === 'endpoint-cooling' || e.type === 'endpoint-adapted');
    expect(late).toEqual([]);
    // The live a was not cooled either.
    expect(h.pool.stats()[0]!.status).toBe('ok');
  });

  test.each(cases)('%s: removed from a group its live members keep: the event names a live member, not the removed key', async (what, rateLimit) => {
    const h = harness([{ name: 'a', rateLimit }, { name: 'b', rateLimit }, { name: 'c', rateLimit }], { groups: [['a', 'b', 'c']], strategy: 'ordered' });
    h.eps['a']!.then(fail('rate-limited', 100));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    const seen = h.events.length;
    h.pool.setEndpoints([{ name: 'b', conn: h.eps['b']!, rateLimit }, { name: 'c', conn: h.eps['c']!, rateLimit }]);
    await h.clock.advance(100);
    const late = h.events.slice(seen).filter((e) => e.type === 'endpoint-cooling' || e.type === 'endpoint-adapted');
    // The account's answer still cools (and lowers) the quota b and c share; reported under b.
    expect(late.map((e) => e.endpoint)).toEqual(what === 'cooling' ? ['b'] : ['b', 'b']);
    await h.clock.advance(5000);
    await call.promise;
  });
});

describe('viem withEndpoint: an operation that goes on after its attempt ended', () => {
  // With passSignal: false (or a transport that takes no signal) the operation's requests
  // are not aborted; once the attempt had ended (timed out, the call failed), the operation's
  // next request still went out: a request from a call that had already settled.
  test.each([false, true])('passSignal %s: no request starts after the attempt timed out and the call failed', async (passSignal) => {
    const lag = await timerLag(5);
    const T = withLag(40, lag, 3);
    const seen: string[] = [];
    let answered: () => void = () => undefined;
    const firstAnswer = new Promise<void>((r) => (answered = r));
    const slow = await server((_req, res, body) => {
      const b = JSON.parse(body) as { id: number; params: unknown[] };
      seen.push(String(b.params[1]));
      setTimeout(() => (res.end(JSON.stringify({ jsonrpc: '2.0', id: b.id, result: '0x1' })), answered()), 2 * T);
    });
    const t = poolTransport({ endpoints: [{ url: slow.url, name: 'a' }], http, attemptTimeoutMs: T, passSignal });
    let settledAt = 0;
    const err = await t
      .withEndpoint(
        async (transport) => {
          const c = transport({});
          await c.request({ method: 'eth_getBalance', params: ['0x0', 'latest'] }).catch(() => undefined);
          return c.request({ method: 'eth_getBalance', params: ['0x0', 'pending'] });
        },
        { retry: 'none' },
      )
      .catch((e: unknown) => ((settledAt = performance.now()), e));
    expect(err).toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    // Past the slow answer, with room for the next request to arrive.
    await firstAnswer;
    await new Promise((r) => setTimeout(r, withLag(100, lag, 10)));
    expect(settledAt).toBeGreaterThan(0);
    expect(seen).toEqual(['latest']);
    await t.close();
  });
});

describe('viem webSocket: an endpoint whose socket cannot connect', () => {
  // Seed 20261223 (path 1, liveness over webSocket): viem reports a refused WebSocket as
  // UnknownRpcError (code -1, "connect ECONNREFUSED" in its details, an ErrorEvent as its
  // cause); the classifier read code -1 as a node's answer (permanent), so the call ended
  // on the dead endpoint while another one was healthy.
  test('a refused WebSocket is transient: the call moves on to a healthy endpoint', async () => {
    const port = await refusedPort();
    const good = await serveWsFaults([{ k: 'ok', f: 0 }], { unitMs: 1, answer: (body) => ({ status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: (JSON.parse(body) as { id: number }).id, result: '0x1' }) }) });
    const urls = [`ws://127.0.0.1:${port}`, good.url];
    const t = poolTransport({ endpoints: urls.map((u, i) => ({ name: `e${i}`, transport: webSocket(u, { keepAlive: false, reconnect: false }) })), strategy: 'ordered', attemptTimeoutMs: 5_000 });
    try {
      await expect(t({}).request({ method: 'eth_blockNumber' })).resolves.toBe('0x1');
      expect(good.hits).toBe(1);
    } finally {
      await t.close();
      for (const [id, client] of [...socketClientCache.entries()]) if (urls.includes((JSON.parse(id) as { url: string }).url)) (client as { close(): void }).close();
      await good.close();
    }
  });

  // Seed 32 (path 16, liveness over webSocket): a node's answer that is not JSON reaches the
  // request as UnknownRpcError over a SyntaxError: read as a node's answer, the call ended.
  test('an answer that is not JSON is transient: the call moves on to a healthy endpoint', async () => {
    const answer = (body: string) => ({ status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: (JSON.parse(body) as { id: number }).id, result: '0x1' }) });
    const bad = await serveWsFaults([{ k: 'malformed' }], { unitMs: 1, answer });
    const good = await serveWsFaults([{ k: 'ok', f: 0 }], { unitMs: 1, answer });
    const urls = [bad.url, good.url];
    const t = poolTransport({ endpoints: urls.map((u, i) => ({ name: `e${i}`, transport: webSocket(u, { keepAlive: false, reconnect: false }) })), strategy: 'ordered', attemptTimeoutMs: 5_000 });
    try {
      await expect(t({}).request({ method: 'eth_blockNumber' })).resolves.toBe('0x1');
      expect([bad.hits, good.hits]).toEqual([1, 1]);
    } finally {
      await t.close();
      for (const [id, client] of [...socketClientCache.entries()]) if (urls.includes((JSON.parse(id) as { url: string }).url)) (client as { close(): void }).close();
      await Promise.all([bad.close(), good.close()]);
    }
  });

  test('classifyViemError: UnknownRpcError (-1) over a network failure is transient; a node answering -1 stays permanent', () => {
    expect(classifyViemError(new UnknownRpcError(new SyntaxError('Unexpected token o in JSON')))).toBe('transient');
    const refused = Object.assign(new Event('error'), { message: 'connect ECONNREFUSED 127.0.0.1:1' });
    expect(classifyViemError(new UnknownRpcError(refused as unknown as Error))).toBe('transient');
    expect(classifyViemError(new UnknownRpcError(new Error('socket hang up')))).toBe('transient');
    expect(classifyViemError(new UnknownRpcError(Object.assign(new Error('odd answer'), { code: -1 })))).toBe('permanent');
  });
});

describe('sends: "already known" and the check by hash fails', () => {
  // Seed 51 (generated4, sends through viem and ethers): e0 took the transaction and lost
  // its answer; e1 answered "already known", then died before the check by hash; the send
  // failed with "already known" (ethers: UNKNOWN_ERROR) though e2 was healthy and the
  // transaction had landed. Only a node that says it has not got the transaction makes the
  // duplicate answer final.
  const raw = '0x00000000000000000000000000000000000000c1abababababababab' as const;
  async function nodes(): Promise<Loopback[]> {
    const rpc = (body: string) => JSON.parse(body) as { id: number; method: string; params: string[] };
    const known = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32000, message: 'already known' } });
    // e0 takes the transaction and resets the connection before answering.
    const e0 = await server((_req, res) => (res.writeHead(200, { 'content-length': '100' }), res.write('{"jsonrpc":'), setTimeout(() => res.socket?.resetAndDestroy(), 5)));
    // e1 has it, and its check by hash fails (the connection drops).
    const e1 = await server((_req, res, body) => (rpc(body).method === 'eth_getTransactionByHash' ? res.socket?.destroy() : res.end(known(rpc(body).id))));
    // e2 has it and says so when asked.
    const e2 = await server((_req, res, body) => {
      const r = rpc(body);
      res.end(r.method === 'eth_getTransactionByHash' ? JSON.stringify({ jsonrpc: '2.0', id: r.id, result: { hash: r.params[0] } }) : known(r.id));
    });
    return [e0, e1, e2];
  }

  test('ethers: another endpoint is asked, and the send resolves with the hash', async () => {
    const [e0, e1, e2] = await nodes();
    const p = new PooledJsonRpcProvider({ endpoints: [e0!, e1!, e2!].map((s, i) => ({ url: s.url, name: `e${i}` })), network: 1, strategy: 'ordered', attemptTimeoutMs: 5_000, backoff: { initialMs: 1, maxMs: 1 } });
    try {
      await expect(p.sendWith('eth_sendRawTransaction', [raw])).resolves.toBe(keccak256(raw));
      expect(e2!.hits).toBe(2);
    } finally {
      await p.close();
    }
  });

  test('viem (keccak256): another endpoint is asked, and the send resolves with the hash', async () => {
    const [e0, e1, e2] = await nodes();
    const t = poolTransport({ endpoints: [e0!, e1!, e2!].map((s, i) => ({ url: s.url, name: `e${i}` })), http, keccak256, strategy: 'ordered', attemptTimeoutMs: 5_000, backoff: { initialMs: 1, maxMs: 1 } });
    try {
      await expect(t({}).request({ method: 'eth_sendRawTransaction', params: [raw] })).resolves.toBe(keccak256(raw));
      expect(e2!.hits).toBe(2);
    } finally {
      await t.close();
    }
  });

  test.each(['AlreadyKnown', 'OldNonce, Current nonce: 55, nonce of rejected tx: 54'])("ethers: Nethermind's -32010 %s is a duplicate: the node has the transaction, the send resolves with the hash", async (message) => {
    const e = await server((_req, res, body) => {
      const r = JSON.parse(body) as { id: number; method: string; params: string[] };
      res.end(JSON.stringify(r.method === 'eth_getTransactionByHash' ? { jsonrpc: '2.0', id: r.id, result: { hash: r.params[0] } } : { jsonrpc: '2.0', id: r.id, error: { code: -32010, message } }));
    });
    const other = await server((_req, res) => res.end('{}'));
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: e.url, name: 'e0' }, { url: other.url, name: 'e1' }], network: 1, strategy: 'ordered', attemptTimeoutMs: 5_000 });
    try {
      await expect(p.sendWith('eth_sendRawTransaction', [raw])).resolves.toBe(keccak256(raw));
      expect(other.hits).toBe(0);
    } finally {
      await p.close();
    }
  });

  test('a node that answers the check with null keeps its duplicate answer final (nonce taken by another transaction)', async () => {
    const e = await server((_req, res, body) => {
      const r = JSON.parse(body) as { id: number; method: string };
      res.end(JSON.stringify(r.method === 'eth_getTransactionByHash' ? { jsonrpc: '2.0', id: r.id, result: null } : { jsonrpc: '2.0', id: r.id, error: { code: -32000, message: 'nonce too low' } }));
    });
    const other = await server((_req, res) => res.end('{}'));
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: e.url, name: 'e0' }, { url: other.url, name: 'e1' }], network: 1, strategy: 'ordered', attemptTimeoutMs: 5_000 });
    try {
      await expect(p.sendWith('eth_sendRawTransaction', [raw])).rejects.toThrow(/nonce/);
      expect(other.hits).toBe(0);
    } finally {
      await p.close();
    }
  });
});
