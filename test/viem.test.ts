/**
 * The viem adapter against scripted JSON-RPC servers on loopback, through real viem
 * clients: classification of the errors viem really throws, failover, answers passed
 * through unchanged, no retry multiplication, signals reaching fetch, pin/withEndpoint.
 * The client tests run three times: as the endpoints' own transports send (wrapped,
 * `custom: false`), with viem's `custom` handed in, which sends to viem's HTTP client
 * directly (src/viem/direct.ts), and at the defaults (viem's `custom` loaded at run time:
 * src/viem/autoload.ts).
 */
import { createPublicClient, custom, http, keccak256, parseAbi, encodeErrorResult, UnknownRpcError, type PublicClient } from 'viem';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { classifyViemError, poolTransport, type PoolTransport } from '../src/viem/index.js';
import { refusedPort } from './helpers/loopback.js';
import { startRpc, type Answer, type RpcServer } from './helpers/rpc-server.js';

const abi = parseAbi(['function value() view returns (uint256)', 'error Error(string)']);
const revertData = encodeErrorResult({ abi, errorName: 'Error', args: ['nope'] });

/** One answer per method name, so one server covers the whole classification table. */
const TABLE: Record<string, Answer> = {
  t_429: { status: 429, headers: { 'retry-after': '3' }, body: 'slow down' },
  t_429_date: { status: 429, headers: { 'retry-after': new Date(Date.now() + 600_000).toUTCString() } },
  t_429_reset: { status: 429, headers: { 'x-ratelimit-reset-after': '4' }, body: 'slow down' }, // no Retry-After: the API's own reset header
  t_503: { status: 503, body: 'down' },
  t_503_ra: { status: 503, headers: { 'retry-after': '7' }, body: 'maintenance' }, // as the fetch table: the server said when it has room
  t_500_rpc: { status: 500, body: JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'internal' } }) },
  t_403: { status: 403, body: 'forbidden' },
  t_404: { status: 404, body: 'nope' },
  t_402: { status: 402, body: 'Payment Required' }, // dRPC's free tier out of credit (enviodev/hyperindex#715): this endpoint's plan, not the request
  t_413: { status: 413, body: 'too big' },
  t_32005: { error: { code: -32005, message: 'limit exceeded' } },
  t_infura_range: { error: { code: -32005, message: 'query returned more than 10000 results' } },
  t_range: { error: { code: -32000, message: 'block range is too wide' } },
  t_resp_large: { error: { code: -32000, message: 'response size exceeded' } },
  t_alchemy_cu: { error: { code: 429, message: 'Your app has exceeded its compute units per second capacity' } },
  t_qn: { error: { code: -32007, message: '10/second request limit reached' } },
  t_method: { error: { code: -32601, message: 'the method t_method does not exist/is not available' } },
  t_ganache_method: { error: { code: -32700, message: 'The method t_ganache_method does not exist/is not available' } },
  t_unsupported: { error: { code: -32004, message: 'method not supported' } },
  t_params: { error: { code: -32602, message: 'invalid argument 0' } },
  t_revert: { error: { code: 3, message: 'execution reverted: nope', data: revertData } },
  t_known: { error: { code: -32000, message: 'already known' } },
  t_nonce: { error: { code: -32000, message: 'nonce too low' } },
  t_rejected: { error: { code: 4001, message: 'User rejected the request.' } },
  t_header: { error: { code: -32000, message: 'header not found' } },
  t_nm_block: { error: { code: -32000, message: '4294967295 could not be found' } }, // Nethermind, a block past its head (nethermind#11205)
  t_nm_state: { error: { code: -32000, message: 'No state available for block 0x63c9d2bf67514f7314180aa962c936dc02a395fd16a98b46b46d8fdbd9d2ad36' } },
  t_block_nf: { error: { code: -32000, message: 'block not found: 0xffffffff' } }, // geth's eth_estimateGas
  t_indexing: { error: { code: -32000, message: 'transaction indexing is in progress', data: 'transaction indexing is in progress' } }, // geth 1.13+, go-ethereum#29956
  t_pool_full: { error: { code: -32000, message: 'txpool is full' } }, // geth's ErrTxPoolOverflow: this node has no room, another may
  t_erigon_full: { error: { code: -32000, message: 'queued sub-pool is full' } }, // Erigon's QueuedPoolOverflow
  t_erigon_dup: { error: { code: -32000, message: 'INTERNAL_ERROR: existing tx with same hash' } }, // Erigon's DuplicateHash
  t_odd: { error: { code: -32000, message: 'something else entirely' } },
  t_db_closed: { error: { code: -32700, message: 'Database is not open' } }, // ganache while it shuts down
  t_reset: { destroy: true },
};

const EXPECTED: [string, unknown][] = [
  ['t_429', { class: 'rate-limited', retryAfterMs: 3_000 }],
  ['t_429_reset', { class: 'rate-limited', retryAfterMs: 4_000 }],
  ['t_429_date', { class: 'rate-limited', retryAfterMs: 60_000 }],
  ['t_503', 'transient'],
  ['t_503_ra', { class: 'rate-limited', retryAfterMs: 7_000 }],
  ['t_500_rpc', 'transient'],
  ['t_403', 'unsupported'],
  ['t_404', 'unsupported'], // no JSON-RPC endpoint at that URL: another endpoint may serve
  ['t_402', 'unsupported'],
  ['t_413', 'retry-narrower'],
  ['t_32005', 'rate-limited'],
  ['t_infura_range', 'retry-narrower'],
  ['t_range', 'retry-narrower'],
  ['t_resp_large', 'retry-narrower'],
  ['t_alchemy_cu', 'rate-limited'],
  ['t_qn', 'rate-limited'],
  ['t_method', 'unsupported'],
  ['t_ganache_method', 'unsupported'],
  ['t_unsupported', 'unsupported'],
  ['t_params', 'permanent'],
  ['t_revert', 'permanent'],
  ['t_known', 'permanent'],
  ['t_nonce', 'permanent'],
  ['t_rejected', 'permanent'],
  ['t_header', 'transient'],
  ['t_indexing', 'transient'],
  ['t_nm_block', 'transient'],
  ['t_nm_state', 'transient'],
  ['t_block_nf', 'transient'],
  ['t_pool_full', 'transient'],
  ['t_erigon_full', 'transient'],
  ['t_erigon_dup', 'permanent'],
  ['t_odd', 'permanent'],
  ['t_db_closed', 'transient'],
  ['t_reset', 'transient'],
];

let table: RpcServer;
let good: RpcServer;
let bad: RpcServer; // behaviour set per test
let badScript: (method: string) => Answer = () => ({ result: '0x1' });
let refused: string;
const transports: PoolTransport[] = [];

beforeAll(async () => {
  table = await startRpc((m) => TABLE[m] ?? { error: { code: -32601, message: 'unknown' } });
  good = await startRpc((m, params) => {
    if (m === 'eth_blockNumber') return { result: '0x2a' };
    if (m === 'eth_chainId') return { result: '0x539' };
    if (m === 'eth_call') return { result: '0x' + '0'.repeat(63) + '7' };
    if (m === 'eth_getTransactionCount') return { result: '0x5' };
    if (m === 'eth_sendRawTransaction') return { result: keccak256(params[0] as `0x${string}`) };
    return { error: { code: -32601, message: 'method not found' } };
  });
  bad = await startRpc((m) => badScript(m));
  refused = `http://127.0.0.1:${await refusedPort()}`;
});

afterAll(async () => {
  await Promise.all([table, good, bad].map((s) => s.close()));
});

afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.pool.close()));
  for (const s of [table, good, bad]) {
    s.hits = 0;
    s.methods.length = 0;
  }
  badScript = () => ({ result: '0x1' });
});

/** Options every `make` adds: set per run of the client tests. */
let mode: Partial<Parameters<typeof poolTransport>[0]> = {};

function make(urls: string[], extra: Partial<Parameters<typeof poolTransport>[0]> = {}): { t: PoolTransport; client: PublicClient } {
  const t = poolTransport({ endpoints: urls.map((url, i) => ({ url, name: `n${i}` })), http, backoff: { initialMs: 1, maxMs: 10 }, ...mode, ...extra });
  transports.push(t);
  return { t, client: createPublicClient({ transport: t }) };
}

describe('classifyViemError on the errors viem really throws', () => {
  test.each(EXPECTED)('%s → %j', async (method, want) => {
    const client = createPublicClient({ transport: http(table.url, { retryCount: 0 }) });
    const err = await client.request({ method: method as 'eth_chainId' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeDefined();
    expect(classifyViemError(err)).toEqual(want);
  });

  test('a refused connection and a viem timeout are transient', async () => {
    const refusedErr = await createPublicClient({ transport: http(refused, { retryCount: 0 }) }).getBlockNumber().catch((e: unknown) => e);
    expect(classifyViemError(refusedErr)).toBe('transient');
    badScript = () => ({ hang: true });
    const timeoutErr = await createPublicClient({ transport: http(bad.url, { retryCount: 0, timeout: 100 }) }).getBlockNumber().catch((e: unknown) => e);
    expect((timeoutErr as Error).name).toBe('TimeoutError');
    expect(classifyViemError(timeoutErr)).toBe('transient');
  });

  test("a WebSocket that could not connect is transient, whichever runtime's WebSocket said so", () => {
    // viem wraps the socket's error event in UnknownRpcError (code -1). The `ws` package (Node 20)
    // gives an ErrorEvent saying "connect ECONNREFUSED"; Node 22+'s own WebSocket (and Bun's,
    // Deno's) an ErrorEvent with an empty message and an empty TypeError; a browser a bare Event.
    // Found on Node 26 by the faults generator (seed 18120407): the call ended on the dead endpoint.
    class ErrorEvent extends Event {
      constructor(
        readonly message: string,
        readonly error: unknown,
      ) {
        super('error');
      }
    }
    const wrapped = (cause: unknown) => new UnknownRpcError(cause as Error);
    expect(classifyViemError(wrapped(new ErrorEvent('', new TypeError(''))))).toBe('transient');
    expect(classifyViemError(wrapped(new Event('error')))).toBe('transient');
    // Bun 1.4 and Deno 2.9, as they print it.
    expect(classifyViemError(wrapped(new ErrorEvent("WebSocket connection to 'ws://127.0.0.1:1/' failed: Failed to connect", new Error('failed'))))).toBe('transient');
    expect(classifyViemError(wrapped(new ErrorEvent('NetworkError: failed to connect to WebSocket: tcp connect error', new DOMException('failed to connect to WebSocket: tcp connect error', 'NetworkError'))))).toBe('transient');
    expect(classifyViemError(wrapped(new ErrorEvent('connect ECONNREFUSED 127.0.0.1:1', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))))).toBe('transient');
    // An event of another kind proves nothing: still a node's answer nobody could read.
    expect(classifyViemError(wrapped(new Event('message')))).toBe('permanent');
  });

  test("a fetch that failed on the network is transient, in each runtime's words (its TypeError alone, no code)", () => {
    // Read off Chromium 156 (every network failure) and Deno 2.9 (a reset in the middle of the
    // answer's body; Node says "terminated" with a coded cause). Firefox's and Safari's are their
    // documented wordings. Found running the suite on Deno: the ethers adapter ended a call on a
    // reset endpoint while another was healthy (faults generator, seed 20261208).
    for (const message of ['Failed to fetch', 'NetworkError when attempting to fetch resource.', 'Load failed', 'The network connection was lost.', 'error reading a body from connection']) {
      expect(classifyViemError(new TypeError(message)), message).toBe('transient');
    }
    // The same words on another kind of error, or more words around Safari's two, prove nothing.
    expect(classifyViemError(new RangeError('Failed to fetch'))).toBe('permanent');
    expect(classifyViemError(new TypeError('Load failed: bad config'))).toBe('permanent');
    expect(classifyViemError(new TypeError('Failed to parse URL from /x'))).toBe('permanent');
  });

  test('unknown non-viem errors are permanent (never guessed safe to repeat)', () => {
    expect(classifyViemError(new RangeError('bug'))).toBe('permanent');
    expect(classifyViemError('a string')).toBe('permanent');
  });
});

describe.each([
  ['wrapped (custom: false)', { custom: false }],
  ['direct (custom given)', { custom }],
  ['defaults (viem loaded at run time: wrapped, then direct)', {}],
] as const)('poolTransport through a viem PublicClient, %s', (_name, options) => {
  beforeEach(() => {
    mode = options;
  });

  test('fails over a refused endpoint; reads work with the same surface', async () => {
    const { t, client } = make([refused, good.url]);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(await client.getChainId()).toBe(1337);
    expect(await client.readContract({ address: '0x0000000000000000000000000000000000000001', abi, functionName: 'value' })).toBe(7n);
    // `ordered`: each of the three calls tries n0 first (its breaker threshold is 5).
    expect(t.pool.stats()[0]!.failures).toBe(3);
  });

  test("viem's own retries are disabled underneath: a 500 costs one request per attempt", async () => {
    badScript = () => ({ status: 500, body: 'oops' });
    const { client } = make([bad.url, good.url]);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(bad.hits).toBe(1);
  });

  test('a revert reaches the caller as viem decodes it, and is not sent anywhere else', async () => {
    badScript = (m) => (m === 'eth_call' ? { error: { code: 3, message: 'execution reverted: nope', data: revertData } } : { result: '0x1' });
    const { client } = make([bad.url, good.url]);
    const err = await client.readContract({ address: '0x0000000000000000000000000000000000000001', abi, functionName: 'value' }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('ContractFunctionExecutionError');
    expect((err as { shortMessage: string }).shortMessage).toContain('nope');
    expect(isPoolError(err)).toBe(false);
    expect(good.hits).toBe(0);
  });

  test('invalid params come back as viem InvalidParamsRpcError, unchanged', async () => {
    badScript = () => ({ error: { code: -32602, message: 'invalid argument 0' } });
    const { client } = make([bad.url, good.url]);
    const err = await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('InvalidParamsRpcError');
    expect(good.hits).toBe(0);
  });

  test('method not found moves on at once to another endpoint', async () => {
    badScript = () => ({ error: { code: -32601, message: 'method not found' } });
    const { client } = make([bad.url, good.url]);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect([bad.hits, good.hits]).toEqual([1, 1]);
  });

  test('when every endpoint answers unsupported, the caller gets the node answer, not a PoolError', async () => {
    badScript = () => ({ error: { code: -32601, message: 'method not found' } });
    const { client } = make([bad.url, bad.url]);
    const err = await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect((err as Error).name).toBe('MethodNotFoundRpcError');
  });

  test('429 with Retry-After: fails over and the endpoint cools down for the hinted time', async () => {
    badScript = () => ({ status: 429, headers: { 'retry-after': '2' } });
    const { t, client } = make([bad.url, good.url], { backoff: { initialMs: 1, maxMs: 10_000 } });
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    const s = t.pool.stats()[0]!;
    expect(s.rateLimited).toBe(1);
    expect(s.cooldownRemainingMs).toBeGreaterThan(1_000);
  });

  test('every endpoint down: a PoolError whose cause is the last viem error; no URL in its message', async () => {
    const { client } = make([refused, refused], { maxAttempts: 2 });
    const err = await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect(isPoolError(err)).toBe(true);
    expect(err).toMatchObject({ code: 'RETRIES_EXHAUSTED', attempts: 2 });
    expect((err as Error).message).not.toContain('127.0.0.1');
    expect(((err as Error).cause as Error).name).toBe('HttpRequestError');
  });

  test('a failed request keeps no URL path in any error the caller or a listener sees (API key in the path)', async () => {
    const seen: unknown[] = [];
    const { t, client } = make([`${refused}/v3/KEY_IN_PATH`, `${refused}/v3/KEY_IN_PATH`], { maxAttempts: 2 });
    t.pool.on('attempt-failure', (e) => seen.push(e.error));
    const err = await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    const texts = [err, ...seen].flatMap((e) => {
      const out: string[] = [];
      for (let c: unknown = e; typeof c === 'object' && c !== null; c = (c as Error).cause) out.push(String((c as Error).message), String((c as { url?: unknown }).url), String((c as Error).stack));
      return out;
    });
    expect(seen).toHaveLength(2);
    expect(texts.join('\n')).not.toContain('KEY_IN_PATH');
  });

  test("the attempt's signal reaches fetch: a timed-out attempt's request is aborted", async () => {
    let closed = 0;
    badScript = () => ({ hang: true });
    const { client } = make([bad.url, good.url], { attemptTimeoutMs: 150 });
    const before = bad.hits;
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(bad.hits).toBe(before + 1);
    // The server's socket for the hung request closes because the client aborted it.
    await expect.poll(async () => {
      closed = await openConnections(bad);
      return closed;
    }, { timeout: 5_000 }).toBe(0);
  });

  test("the caller's signal (viem request option) aborts the call", async () => {
    badScript = () => ({ hang: true });
    const { t } = make([bad.url]);
    const inst = t({});
    const ac = new AbortController();
    const p = inst.request({ method: 'eth_blockNumber' }, { signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await expect(p).rejects.toMatchObject({ code: 'ABORTED' });
  });

  test('per-method override: a user rule wins, the default applies elsewhere', async () => {
    badScript = () => ({ error: { code: -32000, message: 'something else entirely' } });
    const { client } = make([bad.url, good.url], {
      classify: (_e, method) => (method === 'eth_blockNumber' ? 'transient' : undefined),
    });
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    const err = await client.request({ method: 'eth_chainId' }).catch((e: unknown) => e);
    expect(isPoolError(err)).toBe(false);
    expect((err as Error).name).toBe('InvalidInputRpcError');
  });

  test('pin: every request goes to the pinned endpoint only', async () => {
    const { t } = make([good.url, bad.url]);
    const pinned = createPublicClient({ transport: t.pin('n1') });
    expect(await pinned.request({ method: 'eth_blockNumber' })).toBe('0x1');
    expect([good.hits, bad.hits]).toEqual([0, 1]);
  });

  test('withEndpoint: nonce then send on one endpoint; a connection failure mid-way reruns the whole operation elsewhere', async () => {
    badScript = (m) => (m === 'eth_getTransactionCount' ? { result: '0x9' } : { destroy: true });
    const { t } = make([bad.url, good.url]);
    const seen: string[] = [];
    const result = await t.withEndpoint(async (transport, endpoint) => {
      const c = createPublicClient({ transport });
      const nonce = await c.getTransactionCount({ address: '0x0000000000000000000000000000000000000001' });
      seen.push(`${endpoint}:nonce=${nonce}`);
      const hash = await c.request({ method: 'eth_sendRawTransaction', params: ['0x02aa'] });
      return { endpoint, nonce, hash };
    });
    expect(seen).toEqual(['n0:nonce=9', 'n1:nonce=5']);
    expect(result).toEqual({ endpoint: 'n1', nonce: 5, hash: keccak256('0x02aa') });
    // Deno's fetch itself sends a request again once when a kept-alive connection closes before
    // the answer (docs/fetch.md): there the node that dropped it saw it twice. The pool sent it once.
    const resent = typeof (globalThis as { Deno?: unknown }).Deno === 'object' ? ['eth_sendRawTransaction'] : [];
    expect(bad.methods).toEqual(['eth_getTransactionCount', 'eth_sendRawTransaction', ...resent]);
    expect(good.methods).toEqual(['eth_getTransactionCount', 'eth_sendRawTransaction']);
  });

  test('eth_sendRawTransaction: "already known" resolves with the hash when the node has the transaction (keccak256 given)', async () => {
    const raw = '0x02f86c0580';
    badScript = (m) =>
      m === 'eth_sendRawTransaction'
        ? { error: { code: -32000, message: 'already known' } }
        : m === 'eth_getTransactionByHash'
          ? { result: { hash: keccak256(raw) } }
          : { result: null };
    const withHash = make([bad.url, good.url], { keccak256 });
    expect(await withHash.client.request({ method: 'eth_sendRawTransaction', params: [raw] })).toBe(keccak256(raw));
    expect(good.hits).toBe(0);
    // Without keccak256 the node's answer is rethrown as is.
    const plain = make([bad.url, good.url]);
    const err = await plain.client.request({ method: 'eth_sendRawTransaction', params: [raw] }).catch((e: unknown) => e);
    expect((err as { details?: string }).details).toBe('already known');
    expect(good.hits).toBe(0);
  });

  // Nethermind (nethermind#4148, -32010) and Besu word the duplicate their own way.
  test.each([
    ['Nethermind', 'AlreadyKnown', -32010],
    ['Nethermind', 'OldNonce, Current nonce: 55, nonce of rejected tx: 54', -32010],
    ['Besu', 'Known transaction', -32000],
    ['Erigon', 'INTERNAL_ERROR: existing tx with same hash', -32000],
    ['OpenEthereum', 'Transaction nonce is too low. Try incrementing the nonce.', -32010],
  ])('eth_sendRawTransaction: %s\'s "%s" is a duplicate too: the hash when the node has the transaction', async (_, message, code) => {
    const raw = '0x02f86c0581';
    badScript = (m) => (m === 'eth_sendRawTransaction' ? { error: { code, message } } : m === 'eth_getTransactionByHash' ? { result: { hash: keccak256(raw) } } : { result: null });
    const { client } = make([bad.url, good.url], { keccak256 });
    expect(await client.request({ method: 'eth_sendRawTransaction', params: [raw] })).toBe(keccak256(raw));
    expect(bad.methods).toEqual(['eth_sendRawTransaction', 'eth_getTransactionByHash']);
    expect(good.hits).toBe(0);
  });

  test.each(['txpool is full', 'pending sub-pool is full'])('eth_sendRawTransaction: "%s" (this node has no room for it) is sent to the next endpoint', async (message) => {
    badScript = (m) => (m === 'eth_sendRawTransaction' ? { error: { code: -32000, message } } : { result: null });
    const { client } = make([bad.url, good.url], { keccak256, strategy: 'ordered' });
    expect(await client.request({ method: 'eth_sendRawTransaction', params: ['0x02f86c0582'] })).toBe(keccak256('0x02f86c0582'));
    expect(bad.methods).toEqual(['eth_sendRawTransaction']);
    expect(good.methods).toEqual(['eth_sendRawTransaction']);
  });

  test.each([404, 410])('HTTP %i (no JSON-RPC endpoint at that URL: a wrong path, a project deleted) moves on to the next endpoint, and the endpoint is left out of that method', async (status) => {
    badScript = () => ({ status, body: 'not here' });
    const { client } = make([bad.url, good.url], { strategy: 'ordered' });
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(bad.methods).toEqual(['eth_blockNumber']);
    expect(good.methods).toEqual(['eth_blockNumber', 'eth_blockNumber']);
  });

  test('"nonce too low" for a transaction the node does not have is rethrown, not retried', async () => {
    badScript = (m) => (m === 'eth_sendRawTransaction' ? { error: { code: -32000, message: 'nonce too low' } } : { result: null });
    const { client } = make([bad.url, good.url], { keccak256 });
    const err = await client.request({ method: 'eth_sendRawTransaction', params: ['0x02ff'] }).catch((e: unknown) => e);
    expect((err as { details?: string }).details).toBe('nonce too low');
    expect(good.hits).toBe(0);
  });

  test('viem transports are accepted as endpoints without a cast', async () => {
    const t = poolTransport({ endpoints: [{ name: 'g', transport: http(good.url) }] });
    transports.push(t);
    const client = createPublicClient({ transport: t });
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(client.transport.type).toBe('endpointPool');
    expect(client.transport.timeout).toBe(10_000); // viem uses it for CCIP gateway requests
  });

  test('an endpoint that answered "method not found" is left out of later calls of that method', async () => {
    badScript = (m) => (m === 'eth_blockNumber' ? { error: { code: -32601, message: 'method not found' } } : { result: '0x539' });
    const { client } = make([bad.url, good.url]);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(bad.methods).toEqual(['eth_blockNumber']); // asked once, remembered
    expect(await client.getChainId()).toBe(1337); // other methods still go to it
    expect(bad.methods).toEqual(['eth_blockNumber', 'eth_chainId']);
  });

  test('when every endpoint is remembered as unsupported, the answer is rethrown without a request', async () => {
    badScript = () => ({ error: { code: -32601, message: 'method not found' } });
    const { client } = make([bad.url, bad.url]);
    const first = await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    const hits = bad.hits;
    const second = await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect((second as Error).name).toBe('MethodNotFoundRpcError');
    expect(second).toBe(first);
    expect(bad.hits).toBe(hits);
  });

  test('rememberUnsupportedMs: 0 asks every time', async () => {
    badScript = (m) => (m === 'eth_blockNumber' ? { error: { code: -32601, message: 'method not found' } } : { result: '0x1' });
    const { client } = make([bad.url, good.url], { rememberUnsupportedMs: 0 });
    await client.getBlockNumber({ cacheTime: 0 });
    await client.getBlockNumber({ cacheTime: 0 });
    expect(bad.methods).toEqual(['eth_blockNumber', 'eth_blockNumber']);
  });

  test('a URL endpoint without http is an INVALID_OPTIONS error naming the field', () => {
    expect(() => poolTransport({ endpoints: [{ url: good.url }] })).toThrow(/endpoints\[0\]\.url/);
  });
});

/** Connections the server still has open (via its internal counter). */
async function openConnections(s: RpcServer): Promise<number> {
  return s.openConnections();
}

describe('a quorum over nodes that order a block\'s fields differently', () => {
  // Go clients (geth, erigon) marshal a block as a map, keys sorted; others keep their own order.
  const block = { number: '0x2a', hash: `0x${'a'.repeat(64)}`, parentHash: `0x${'b'.repeat(64)}`, timestamp: '0x5', transactions: [], gasUsed: '0x0', gasLimit: '0x1c9c380', baseFeePerGas: '0x7', logsBloom: `0x${'0'.repeat(512)}`, miner: `0x${'1'.repeat(40)}`, difficulty: '0x0', extraData: '0x', size: '0x200', stateRoot: `0x${'c'.repeat(64)}`, receiptsRoot: `0x${'d'.repeat(64)}`, transactionsRoot: `0x${'e'.repeat(64)}`, sha3Uncles: `0x${'f'.repeat(64)}`, nonce: '0x0000000000000000', mixHash: `0x${'9'.repeat(64)}`, uncles: [] };
  const sorted = Object.fromEntries(Object.entries(block).sort(([a], [b]) => (a < b ? -1 : 1)));
  let servers: RpcServer[] = [];
  beforeAll(async () => {
    servers = await Promise.all([block, sorted].map((b) => startRpc((m) => (m === 'eth_getBlockByNumber' ? { result: b } : { result: '0x2a' }))));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  test('they agree: getBlock with a quorum of 2 resolves', async () => {
    expect(JSON.stringify(sorted)).not.toBe(JSON.stringify(block));
    const { t, client } = make(servers.map((s) => s.url), { quorum: { methods: { eth_getBlockByNumber: 2 } } });
    const b = await client.getBlock({ blockNumber: 42n });
    expect(b.number).toBe(42n);
    expect(servers.map((s) => s.methods.filter((m) => m === 'eth_getBlockByNumber').length)).toEqual([1, 1]);
    expect(t.readStats().quorumReads).toBe(1);
  });
});

describe('a quorum over nodes that number the same revert differently', () => {
  // geth, Erigon and reth answer a revert with code 3, Nethermind with -32000; the data is the same.
  const data = '0x08c379a0' + '0'.repeat(56) + '20' + '0'.repeat(62) + '04' + '6e6f706500000000000000000000000000000000000000000000000000000000';
  let servers: RpcServer[] = [];
  beforeAll(async () => {
    servers = await Promise.all([3, -32000, 3].map((code, i) => startRpc((m) => (m === 'eth_call' ? (i === 2 ? { result: '0x01' } : { error: { code, message: 'execution reverted: nope', data } }) : { result: '0x539' }))));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  test('the two reverts are one vote: the caller gets the revert, the third node is not asked', async () => {
    const { client } = make(servers.map((s) => s.url), { strategy: 'ordered', quorum: { methods: { eth_call: 2 } } });
    const e = await client.request({ method: 'eth_call', params: [{ to: '0x0000000000000000000000000000000000000001', data: '0x' }, 'latest'] }).catch((x: unknown) => x);
    expect(isPoolError(e)).toBe(false);
    expect(String((e as Error).message)).toContain('nope');
    expect(servers.map((s) => s.methods.filter((m) => m === 'eth_call').length)).toEqual([1, 1, 0]);
  });

  // NethermindEth/nethermind#8813: geth `{ code: 3, data: '0xdf2d9b42' }`, Nethermind
  // `{ code: -32015, message: 'VM execution error.', data: 'err: 0xdf2d9b42 (supplied gas 36000000)' }`;
  // erigon#17132: a revert without data, geth `{ code: 3, data: '0x' }`, Erigon `{ code: -32000 }` and no data.
  test.each([
    ['Nethermind (-32015, the data in words)', { code: 3, message: 'execution reverted', data: '0xdf2d9b42' }, { code: -32015, message: 'VM execution error.', data: 'err: 0xdf2d9b42 (supplied gas 36000000)' }],
    ['Erigon (-32000, no data for none)', { code: 3, message: 'execution reverted', data: '0x' }, { code: -32000, message: 'execution reverted' }],
  ])("%s: an older client's revert is the same vote as geth's", async (_, geth, other) => {
    const answers = [{ error: geth }, { error: other }, { result: '0x01' }];
    const nodes = await Promise.all(answers.map((a) => startRpc((m) => (m === 'eth_call' ? a : { result: '0x539' }))));
    try {
      const { client } = make(nodes.map((s) => s.url), { strategy: 'ordered', quorum: { methods: { eth_call: 2 } } });
      const e = await client.request({ method: 'eth_call', params: [{ to: '0x0000000000000000000000000000000000000001', data: '0x' }, 'latest'] }).catch((x: unknown) => x);
      expect(isPoolError(e) && e.code === 'QUORUM_NOT_MET').toBe(false);
      expect(nodes.map((s) => s.methods.filter((m) => m === 'eth_call').length)).toEqual([1, 1, 0]);
    } finally {
      await Promise.all(nodes.map((s) => s.close()));
    }
  });
});
