/**
 * The ethers provider (src/ethers/provider.ts) on a scripted `fetch`, where the thirtieth
 * session's first mutation run of it (60.8 %) found no test holding: how a failed call reaches
 * ethers (a node's answer as ethers' own error, anything else as the PoolError), the per-method
 * `classify` and `maxRetryAfterMs`, filters through the pool, the request body and headers,
 * endpoint names and checks, the ethers options the pool owns, and what `close` stops.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { isPoolError } from '../../src/index.js';
import { PooledJsonRpcProvider, type PooledProviderOptions } from '../../src/ethers/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { FilterNotFoundError } from '../../src/rpc/filters.js';

interface Seen { readonly url: string; readonly init: Record<string, unknown>; readonly body: { jsonrpc?: unknown; id?: unknown; method: string; params: unknown[] } }
type Answer = { status?: number; headers?: Record<string, string>; json: unknown };

/** A `fetch` whose answers `answer(url, body)` scripts (a JSON-RPC body, or an `Answer` with a status); records what it was sent. */
function scripted(answer: (url: string, body: Seen['body']) => Answer | unknown) {
  const seen: Seen[] = [];
  const fetch = async (url: string, init: Record<string, unknown>) => {
    const body = JSON.parse(init['body'] as string) as Seen['body'];
    seen.push({ url, init, body });
    const given = answer(url, body) as Answer;
    const a: Answer = typeof given === 'object' && given !== null && 'json' in given ? given : { json: given };
    const status = a.status ?? 200;
    const headers = new Headers(a.headers ?? {});
    return { status, ok: status >= 200 && status < 300, headers, text: async () => JSON.stringify(a.json) };
  };
  return { seen, fetch };
}

const result = (id: unknown, value: unknown): unknown => ({ jsonrpc: '2.0', id, result: value });
const error = (id: unknown, code: number, message: string, data?: string): unknown => ({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } });

const made: PooledJsonRpcProvider[] = [];
function provider(options: Omit<PooledProviderOptions, 'network'> & { network?: PooledProviderOptions['network'] }): PooledJsonRpcProvider {
  const p = new PooledJsonRpcProvider({ network: 1, backoff: { initialMs: 1, maxMs: 2 }, ...options } as PooledProviderOptions);
  made.push(p);
  return p;
}
afterEach(async () => {
  await Promise.all(made.splice(0).map((p) => p.close()));
});

const REVERT = '0x08c379a0' + '0'.repeat(62) + '20' + '0'.repeat(63) + '4' + Buffer.from('nope').toString('hex').padEnd(64, '0');

describe('how a failed call reaches ethers', () => {
  test("sendWith: a node's revert is ethers' CALL_EXCEPTION with the revert data, not a PoolError", async () => {
    const s = scripted((_u, b) => error(b.id, 3, 'execution reverted: nope', REVERT));
    const p = provider({ endpoints: [{ url: 'http://a.test/' }], fetch: s.fetch });
    const e = await p.sendWith('eth_call', [{ to: '0x' + '11'.repeat(20), data: '0x' }, 'latest']).then(() => undefined, (x: unknown) => x);
    expect(isPoolError(e)).toBe(false);
    expect((e as { code?: string }).code).toBe('CALL_EXCEPTION');
    expect((e as { data?: string }).data).toBe(REVERT);
  });

  test("every endpoint says the method is not found: ethers gets the node's answer (as for a final one), not the PoolError", async () => {
    const s = scripted((_u, b) => error(b.id, -32601, 'the method eth_foo does not exist/is not available'));
    const p = provider({ endpoints: [{ url: 'http://a.test/' }, { url: 'http://b.test/' }], fetch: s.fetch });
    const viaSend = await p.send('eth_foo', []).then(() => undefined, (x: unknown) => x);
    expect(isPoolError(viaSend)).toBe(false);
    expect(String((viaSend as Error).message)).toMatch(/does not exist/);
    const viaSendWith = await p.sendWith('eth_foo', []).then(() => undefined, (x: unknown) => x);
    expect(isPoolError(viaSendWith)).toBe(false);
    expect(String((viaSendWith as Error).message)).toMatch(/does not exist/);
    // Both endpoints were asked each time.
    expect(new Set(s.seen.map((x) => x.url))).toEqual(new Set(['http://a.test/', 'http://b.test/']));
  });

  test('a transient answer on every attempt: the PoolError (RETRIES_EXHAUSTED) whose cause is the answer, not an ethers error', async () => {
    const s = scripted((_u, b) => error(b.id, -32603, 'internal error'));
    const p = provider({ endpoints: [{ url: 'http://a.test/' }, { url: 'http://b.test/' }], fetch: s.fetch, maxAttempts: 2 });
    const e = await p.sendWith('eth_chainId', []).then(() => undefined, (x: unknown) => x);
    expect(isPoolError(e)).toBe(true);
    expect((e as { code: string }).code).toBe('RETRIES_EXHAUSTED');
    expect(((e as { cause?: Error }).cause as { name?: string }).name).toBe('RpcAnswerError');
    const viaSend = await p.send('eth_chainId', []).then(() => undefined, (x: unknown) => x);
    expect(isPoolError(viaSend)).toBe(true);
  });

  test("the user's classify, per method, turns an answer final for one method only", async () => {
    const s = scripted((_u, b) => error(b.id, -32000, 'header not found'));
    const asked: (string | undefined)[] = [];
    const p = provider({
      endpoints: [{ url: 'http://a.test/' }, { url: 'http://b.test/' }],
      fetch: s.fetch,
      maxAttempts: 2,
      classify: (_e, method) => {
        asked.push(method);
        return method === 'eth_getBalance' ? 'permanent' : undefined;
      },
    });
    const e = await p.sendWith('eth_getBalance', ['0x' + '11'.repeat(20), 'latest']).then(() => undefined, (x: unknown) => x);
    expect(isPoolError(e)).toBe(false);
    expect(s.seen).toHaveLength(1);
    expect(asked).toEqual(['eth_getBalance']);
    await p.sendWith('eth_chainId', []).catch(() => undefined);
    expect(asked).toContain('eth_chainId');
    expect(s.seen).toHaveLength(3);
  });

  test('an unknown filter id is a node-style answer; a filter of an endpoint that left the pool is ethers\' error, not a PoolError', async () => {
    const s = scripted((u, b) => (b.method === 'eth_newBlockFilter' ? result(b.id, '0x1') : b.method === 'eth_getFilterChanges' ? result(b.id, [u]) : result(b.id, '0x1')));
    const p = provider({ endpoints: [{ name: 'a', url: 'http://a.test/' }, { name: 'b', url: 'http://b.test/' }], fetch: s.fetch, strategy: 'ordered' });
    const id = (await p.send('eth_newBlockFilter', [])) as string;
    expect(await p.send('eth_getFilterChanges', [id])).toEqual(['http://a.test/']);
    p.pool.setEndpoints([{ name: 'b', conn: { url: 'http://b.test/' } }]);
    const e = await p.sendWith('eth_getFilterChanges', [id]).then(() => undefined, (x: unknown) => x);
    expect(isPoolError(e)).toBe(false);
    expect(String((e as Error).message)).toMatch(/filter not found/i);
    // ethers' own error for the node-style answer, with its JSON-RPC error.
    expect(e).not.toBeInstanceOf(FilterNotFoundError);
    expect((e as { error?: { code?: number } }).error?.code).toBe(-32000);
  });

  test("two nodes handing out the same filter id: the second gets the pool's own id, and its node is asked with its own", async () => {
    const s = scripted((u, b) => (b.method === 'eth_newBlockFilter' ? result(b.id, '0x1') : b.method === 'eth_getFilterChanges' ? result(b.id, [u, b.params[0]]) : result(b.id, '0x1')));
    const p = provider({ endpoints: [{ name: 'a', url: 'http://a.test/' }, { name: 'b', url: 'http://b.test/' }], fetch: s.fetch, strategy: 'round-robin' });
    const first = (await p.sendWith('eth_newBlockFilter', [])) as string;
    const second = (await p.sendWith('eth_newBlockFilter', [])) as string;
    expect(first).toBe('0x1');
    expect(second).not.toBe('0x1');
    const changes = (await p.sendWith('eth_getFilterChanges', [second])) as string[];
    expect(changes[1]).toBe('0x1');
    expect(changes[0]).not.toBe((await p.sendWith('eth_getFilterChanges', [first]) as string[])[0]);
  });
});

describe('requests as sent', () => {
  test('a JSON-RPC 2.0 body per request, with a fresh id per sendWith; the headers an endpoint has, on its requests only', async () => {
    const s = scripted((_u, b) => result(b.id, '0x1'));
    const p = provider({ endpoints: [{ name: 'a', url: 'http://a.test/', headers: { 'x-api-key': 'k1' } }, { name: 'b', url: 'http://b.test/' }], fetch: s.fetch, strategy: 'round-robin' });
    await p.sendWith('eth_chainId', []);
    await p.sendWith('eth_chainId', []);
    expect(s.seen.map((x) => x.body.jsonrpc)).toEqual(['2.0', '2.0']);
    expect(s.seen[0]!.body.id).not.toBe(s.seen[1]!.body.id);
    const headersOf = (url: string) => s.seen.find((x) => x.url === url)!.init['headers'] as Record<string, string>;
    expect(headersOf('http://a.test/')['x-api-key']).toBe('k1');
    expect(headersOf('http://b.test/')['x-api-key']).toBeUndefined();
    expect(headersOf('http://b.test/')['content-type']).toBe('application/json');
  });

  test('a fetch given in the options is never handed a dispatcher (it may not be undici)', async () => {
    const s = scripted((_u, b) => result(b.id, '0x1'));
    const p = provider({ endpoints: [{ url: 'http://a.test/' }], fetch: s.fetch, attemptTimeoutMs: 5_000 });
    await p.sendWith('eth_chainId', []);
    expect(s.seen[0]!.init['dispatcher']).toBeUndefined();
    expect(s.seen[0]!.init['signal']).toBeInstanceOf(AbortSignal);
  });

  test('maxRetryAfterMs bounds the wait a 429 asks for (backoff.maxMs above both)', async () => {
    for (const [max, expected] of [[1_000, 1_000], [undefined, 5_000]] as const) {
      const clock = new FakeClock(1_000_000);
      let n = 0;
      const s = scripted((_u, b) => (n++ === 0 ? { status: 429, headers: { 'retry-after': '5' }, json: error(b.id, -32005, 'rate limited') } : result(b.id, '0x1')));
      const p = provider({ endpoints: [{ url: 'http://a.test/' }], fetch: s.fetch, clock, backoff: { maxMs: 120_000 }, ...(max === undefined ? {} : { maxRetryAfterMs: max }) });
      const cooling: number[] = [];
      p.pool.on('endpoint-cooling', (ev) => cooling.push(ev.cooldownMs));
      const pending = p.sendWith('eth_chainId', []);
      await clock.advance(60_000);
      await pending;
      // The pool spreads a hinted wait a little (jitter above the hint, never below).
      expect(cooling).toHaveLength(1);
      expect(cooling[0]).toBeGreaterThanOrEqual(expected);
      expect(cooling[0]).toBeLessThanOrEqual(expected * 1.25);
    }
  });
});

describe('options and endpoints', () => {
  test('endpoint checks name the field; a host used twice gets a numbered name', () => {
    expect(() => new PooledJsonRpcProvider({ endpoints: [null as never] })).toThrow(/endpoints\[0\]: expected \{ url, name\?, headers\? \}/);
    expect(() => new PooledJsonRpcProvider({ endpoints: ['http://a.test/' as never] })).toThrow(/endpoints\[0\]: expected \{ url, name\?, headers\? \}/);
    expect(() => new PooledJsonRpcProvider({ endpoints: 'http://a.test/' as never })).toThrow(/endpoints: expected a non-empty array/);
    expect(() => new PooledJsonRpcProvider({ endpoints: [{ url: 'http://a.test/', headers: null as never }] })).toThrow(/endpoints\[0\]\.headers: expected an object of header names to values/);
    expect(() => new PooledJsonRpcProvider({ endpoints: [{ url: 'http://a.test/', headers: ['x'] as never }] })).toThrow(/endpoints\[0\]\.headers/);
    expect(() => new PooledJsonRpcProvider({ endpoints: [{ url: 'http://a.test/', headers: 'x' as never }] })).toThrow(/endpoints\[0\]\.headers/);
    expect(() => new PooledJsonRpcProvider(null as never)).toThrow(/options: expected an object/);
    expect(() => new PooledJsonRpcProvider(7 as never)).toThrow(/options: expected an object/);
    expect(() => new PooledJsonRpcProvider({ endpoints: [{ url: 'http://a.test/' }], maxRetryAfterMs: -1 })).toThrow(/maxRetryAfterMs/);
    const p = provider({ endpoints: [{ url: 'http://a.test/x' }, { url: 'http://a.test/y' }, { url: 'http://b.test/', name: 'mine' }], fetch: scripted((_u, b) => result(b.id, '0x1')).fetch, maxRetryAfterMs: Infinity });
    expect(p.pool.endpointNames).toEqual(['a.test', 'a.test#1', 'mine']);
  });

  test('sendWith checks its arguments', async () => {
    const p = provider({ endpoints: [{ url: 'http://a.test/' }], fetch: scripted((_u, b) => result(b.id, '0x1')).fetch });
    await expect(p.sendWith('eth_chainId', [], null as never)).rejects.toThrow(/options: expected sendWith's options/);
    await expect(p.sendWith('', [])).rejects.toThrow(/method: expected a JSON-RPC method name/);
    await expect(p.sendWith('eth_chainId', null as never)).rejects.toThrow(/params: expected an array or an object of JSON-RPC params/);
  });

  test("the ethers options the pool owns: polling on, batches of one, the network trusted when given", async () => {
    const s = scripted((_u, b) => result(b.id, b.method === 'eth_chainId' ? '0x1' : '0x5'));
    const p = provider({ endpoints: [{ url: 'http://a.test/' }], fetch: s.fetch });
    expect(p._getOption('polling')).toBe(true);
    expect(p._getOption('batchMaxCount')).toBe(1);
    expect(p._getOption('staticNetwork')).toBeTruthy();
    await Promise.all([p.getBlockNumber(), p.send('eth_gasPrice', [])]);
    // No chain id asked (the network was given), and two requests, two POSTs.
    expect(s.seen.map((x) => x.body.method).sort()).toEqual(['eth_blockNumber', 'eth_gasPrice']);
    const detecting = provider({ endpoints: [{ url: 'http://a.test/' }], fetch: s.fetch, network: undefined as never });
    expect(detecting._getOption('staticNetwork')).toBeFalsy();
    expect(provider({ endpoints: [{ url: 'http://a.test/' }], fetch: s.fetch, provider: { polling: false } })._getOption('polling')).toBe(false);
  });

  test('heads() is undefined without heads; close stops the head poll at once (no timer left)', async () => {
    const s = scripted((_u, b) => result(b.id, '0x10'));
    const plain = provider({ endpoints: [{ url: 'http://a.test/' }], fetch: s.fetch });
    expect(plain.heads()).toBeUndefined();
    const clock = new FakeClock(1_000_000);
    const p = provider({ endpoints: [{ url: 'http://a.test/' }], fetch: s.fetch, clock, heads: { pollMs: 1_000 } });
    await clock.advance(0);
    expect(p.heads()!.endpoints).toEqual([{ name: 'a.test', head: 16, lagging: undefined }]);
    expect(clock.pendingTimers).toBeGreaterThan(0);
    await p.close();
    expect(clock.pendingTimers).toBe(0);
  });

  test("heads: an answer from the node a name had before setEndpoints replaced it is not taken for the new node's", async () => {
    const clock = new FakeClock(1_000_000);
    const slow = scripted((_u, b) => result(b.id, '0x1388'));
    const fetch = async (url: string, init: Record<string, unknown>) => {
      if (url === 'http://a.test/') await new Promise<void>((r) => clock.setTimeout(r, 100));
      return slow.fetch(url, init);
    };
    const p = provider({ endpoints: [{ name: 'a', url: 'http://a.test/' }], fetch, clock, heads: { maxLagBlocks: 2, blockTimeMs: 1000 } });
    const inFlight = p.sendWith('eth_blockNumber', []);
    await clock.advance(50);
    p.pool.setEndpoints([{ name: 'a', conn: { url: 'http://a2.test/' } }]);
    expect(p.heads()!.endpoints).toEqual([]);
    await clock.advance(60);
    await expect(inFlight).resolves.toBe('0x1388');
    expect(p.heads()!.endpoints).toEqual([]);
  });

  test('a filter follows its node: a new { url } object for the same URL reaches it; another URL under the name is "filter not found", unsent', async () => {
    const s = scripted((u, b) => (b.method === 'eth_newBlockFilter' ? result(b.id, '0x1') : b.method === 'eth_getFilterChanges' ? result(b.id, [u]) : result(b.id, '0x1')));
    const p = provider({ endpoints: [{ name: 'a', url: 'http://a.test/' }], fetch: s.fetch });
    const id = (await p.sendWith('eth_newBlockFilter', [])) as string;
    p.pool.setEndpoints([{ name: 'a', conn: { url: 'http://a.test/' } }]);
    expect(await p.sendWith('eth_getFilterChanges', [id])).toEqual(['http://a.test/']);
    p.pool.setEndpoints([{ name: 'a', conn: { url: 'http://other.test/' } }]);
    const sent = s.seen.length;
    const e = await p.sendWith('eth_getFilterChanges', [id]).then(() => undefined, (x: unknown) => x);
    expect(String((e as Error).message)).toMatch(/filter not found/i);
    expect(s.seen.length).toBe(sent);
  });

  test('setEndpoints with { url } values made anew keeps each endpoint (its counters, its breaker); another URL or other headers is another endpoint', async () => {
    const s = scripted((_u, b) => result(b.id, '0x1'));
    const p = provider({ endpoints: [{ name: 'a', url: 'http://a.test/', headers: { 'x-b': '2', 'x-a': '1' } }, { name: 'b', url: 'http://b.test/' }], fetch: s.fetch, strategy: 'round-robin' });
    for (let i = 0; i < 4; i++) await p.sendWith('eth_chainId', []);
    const before = p.pool.stats().map((x) => [x.name, x.attempts]);
    expect(before).toEqual([['a', 2], ['b', 2]]);
    // The same values as new objects (headers in another order): the same endpoints.
    p.pool.setEndpoints([{ name: 'a', conn: { url: 'http://a.test/', headers: { 'x-a': '1', 'x-b': '2' } } }, { name: 'b', conn: { url: 'http://b.test/' } }]);
    expect(p.pool.stats().map((x) => [x.name, x.attempts])).toEqual(before);
    // Another URL, other headers: new endpoints.
    p.pool.setEndpoints([{ name: 'a', conn: { url: 'http://a.test/', headers: { 'x-a': '9' } } }, { name: 'b', conn: { url: 'http://c.test/' } }]);
    expect(p.pool.stats().map((x) => [x.name, x.attempts])).toEqual([['a', 0], ['b', 0]]);
    await p.sendWith('eth_chainId', []);
    expect((s.seen.at(-1)!.init['headers'] as Record<string, string>)['x-a']).toBe('9');
    // Still checked by the pool.
    expect(() => p.pool.setEndpoints('x' as never)).toThrow(/endpoints: expected a non-empty array/);
    expect(() => p.pool.setEndpoints([null as never])).toThrow(/endpoints\[0\]/);
  });
});
