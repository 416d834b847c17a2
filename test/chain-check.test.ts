/**
 * `chainId` on the RPC adapters (src/rpc/chain-check.ts): every endpoint's node is asked
 * `eth_chainId` before its first request, once per connection; a node of another chain gets
 * none of the caller's requests, its endpoint is disabled and the call moves on. Before it, a
 * node of another chain among the endpoints (a testnet URL in a mainnet list) answered its
 * share of the reads, in silence.
 */
import { createClient, createPublicClient, custom } from 'viem';
import { mainnet, sepolia } from 'viem/chains';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { ChainMismatchError, poolTransport } from '../src/viem/index.js';
import { ChainCheck } from '../src/rpc/chain-check.js';
import type { PoolEvent } from '../src/index.js';

interface Node {
  readonly calls: string[];
  transport: ReturnType<typeof custom>;
}

/** A node of chain `chain` (an `eth_chainId` answer as given) that answers every other method with `answer`. */
function node(chain: unknown, answer: unknown = '0x10', options: { hang?: boolean; failChainId?: number } = {}): Node {
  const calls: string[] = [];
  let failures = options.failChainId ?? 0;
  const transport = custom({
    request: async ({ method }: { method: string }) => {
      calls.push(method);
      if (method === 'eth_chainId') {
        if (options.hang === true) return new Promise(() => {});
        if (failures-- > 0) throw Object.assign(new Error('fetch failed'), { name: 'HttpRequestError', status: 502 });
        return chain;
      }
      return answer;
    },
  });
  return { calls, transport };
}

describe('chainId: the viem transport', () => {
  test("a node of another chain gets none of the caller's requests; its endpoint is disabled and the calls go on elsewhere", async () => {
    const good = node('0x1', '0xaa');
    const wrong = node('0xaa36a7', '0xbb'); // Sepolia behind a mainnet name
    const t = poolTransport({ endpoints: [{ transport: wrong.transport, name: 'wrong' }, { transport: good.transport, name: 'good' }], custom, chainId: 1, strategy: 'round-robin' });
    const events: PoolEvent[] = [];
    t.pool.on('endpoint-disabled', (e) => events.push(e));
    const client = createClient({ transport: t });
    const answers: unknown[] = [];
    for (let i = 0; i < 6; i++) answers.push(await client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] }));
    expect(answers).toEqual(Array(6).fill('0xaa'));
    expect(wrong.calls).toEqual(['eth_chainId']);
    expect(good.calls.filter((m) => m === 'eth_chainId')).toHaveLength(1); // asked once, then remembered
    expect(events).toEqual([{ type: 'endpoint-disabled', endpoint: 'wrong' }]);
    await t.close();
  });

  test('with every node on another chain, the call fails with ChainMismatchError naming both chains', async () => {
    const t = poolTransport({ endpoints: [{ transport: node('0x5').transport, name: 'goerli' }], custom, chainId: 1 });
    const client = createClient({ transport: t });
    const error = await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChainMismatchError);
    expect(error).toMatchObject({ code: 'CHAIN_MISMATCH', endpoint: 'goerli', expected: 1, actual: 5 });
    expect((error as Error).message).toContain('chain 5');
    await t.close();
  });

  test('an answer that is no chain id counts as another chain', async () => {
    const t = poolTransport({ endpoints: [{ transport: node('mainnet').transport, name: 'odd' }], custom, chainId: 1 });
    const error = await createClient({ transport: t }).request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CHAIN_MISMATCH', actual: undefined });
    await t.close();
  });

  test('a question that fails is the attempt failing (retried elsewhere or later), asked again, never remembered', async () => {
    const flaky = node('0x1', '0xcc', { failChainId: 1 });
    const t = poolTransport({ endpoints: [{ transport: flaky.transport, name: 'flaky' }], custom, chainId: 1, backoff: { initialMs: 1, maxMs: 1 } });
    expect(await createClient({ transport: t }).request({ method: 'eth_blockNumber' })).toBe('0xcc');
    expect(flaky.calls).toEqual(['eth_chainId', 'eth_chainId', 'eth_blockNumber']);
    expect(t.pool.stats()[0]!.status).toBe('ok');
    await t.close();
  });

  test('attempts at the same time share one question', async () => {
    const n = node('0x1');
    const t = poolTransport({ endpoints: [{ transport: n.transport, name: 'n' }], custom, chainId: 1 });
    const client = createClient({ transport: t });
    await Promise.all(Array.from({ length: 20 }, () => client.request({ method: 'eth_blockNumber' })));
    expect(n.calls.filter((m) => m === 'eth_chainId')).toHaveLength(1);
    expect(n.calls).toHaveLength(21);
    await t.close();
  });

  test('a question never answered ends at the attempt timeout, and its request is not sent', async () => {
    const clock = new FakeClock();
    const hung = node('0x1', '0xdd', { hang: true });
    const t = poolTransport({ endpoints: [{ transport: hung.transport, name: 'hung' }], custom, chainId: 1, clock, attemptTimeoutMs: 1_000, deadlineMs: 1_500, maxAttempts: 1 });
    const pending = createClient({ transport: t }).request({ method: 'eth_sendRawTransaction', params: ['0x01'] }).catch((e: unknown) => e);
    await clock.advance(1_000);
    expect(await pending).toMatchObject({ code: 'RETRIES_EXHAUSTED', cause: { code: 'ATTEMPT_TIMEOUT' } });
    await clock.advance(5_000);
    expect(hung.calls).toEqual(['eth_chainId']); // the send never left
    await t.close();
  });

  test('an attempt that joined a question later than the first fails with its bound as with a timeout: the call moves on, never PERMANENT', async () => {
    const clock = new FakeClock();
    const hung = node('0x1', '0xdd', { hang: true });
    const good = node('0x1', '0x99');
    const t = poolTransport({ endpoints: [{ transport: hung.transport, name: 'hung' }, { transport: good.transport, name: 'good' }], custom, chainId: 1, clock, attemptTimeoutMs: 1_000, strategy: 'ordered' });
    const client = createClient({ transport: t });
    const first = client.request({ method: 'eth_blockNumber' });
    await clock.advance(500);
    // Joins the question out since 0 ms; its own attempt timeout is at 1,500 ms, the question's bound at 1,000.
    const second = client.request({ method: 'eth_blockNumber' });
    await clock.advance(1_000);
    expect(await first).toBe('0x99');
    expect(await second).toBe('0x99');
    expect(hung.calls).toEqual(['eth_chainId']);
    await t.close();
  });

  test('a request whose attempt ended while the question was out is not sent when the answer comes', async () => {
    const clock = new FakeClock();
    const calls: string[] = [];
    const slow = custom({
      request: async ({ method }: { method: string }) => {
        calls.push(method);
        if (method === 'eth_chainId') await new Promise<void>((resolve) => clock.setTimeout(resolve, 500));
        return '0x1';
      },
    });
    const t = poolTransport({ endpoints: [{ transport: slow, name: 's' }], custom, chainId: 1, clock });
    const caller = new AbortController();
    const pending = t({}).request({ method: 'eth_sendRawTransaction', params: ['0x01'] }, { signal: caller.signal }).catch((e: unknown) => e);
    await clock.advance(200);
    caller.abort();
    expect(await pending).toMatchObject({ code: 'ABORTED' });
    await clock.advance(1_000);
    expect(calls).toEqual(['eth_chainId']);
    expect(await createClient({ transport: t }).request({ method: 'eth_blockNumber' })).toBe('0x1'); // the answer was remembered
    expect(calls).toEqual(['eth_chainId', 'eth_blockNumber']);
    await t.close();
  });

  test('a question whose waiting attempts have all ended is given up: its request aborted, its timer cleared (harness generator, chainId drawn: a pool timer left after close())', async () => {
    const clock = new FakeClock();
    const check = new ChainCheck(1, clock, 10_000);
    const conn = {};
    const asked: AbortSignal[] = [];
    const ask = (signal: AbortSignal): Promise<unknown> => (asked.push(signal), new Promise(() => {}));
    const attempts = [new AbortController(), new AbortController()];
    const waits = attempts.map((a) => check.verify(conn, 'e', a.signal, ask).catch((e: unknown) => e));
    expect(asked).toHaveLength(1); // one question for both
    expect(clock.pendingTimers).toBe(1);
    attempts[0]!.abort();
    expect(asked[0]!.aborted).toBe(false); // the second attempt still waits on it
    attempts[1]!.abort();
    expect(asked[0]!.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
    for (const w of waits) expect(await w).toMatchObject({ code: 'CHAIN_CHECK_TIMEOUT' });
    // An attempt already ended asks nothing; the next one asks afresh.
    await expect(check.verify(conn, 'e', AbortSignal.abort(new Error('over')), ask)).rejects.toThrow('over');
    const third = new AbortController();
    const wait = check.verify(conn, 'e', third.signal, ask).catch((e: unknown) => e);
    expect(asked).toHaveLength(2);
    third.abort();
    await wait;
    expect(clock.pendingTimers).toBe(0);
    expect(check.passed(conn)).toBe(false);
  });

  test('an attempt that starts in the same turn as the question is given up asks afresh (it joined the dead question and failed with its timeout)', async () => {
    const clock = new FakeClock();
    const check = new ChainCheck(1, clock, 10_000);
    const conn = {};
    const answers: ((v: unknown) => void)[] = [];
    const ask = (): Promise<unknown> => new Promise((resolve) => answers.push(resolve));
    const first = new AbortController();
    const gaveUp = check.verify(conn, 'e', first.signal, ask).catch((e: unknown) => e);
    first.abort();
    const next = check.verify(conn, 'e', new AbortController().signal, ask);
    expect(answers).toHaveLength(2);
    answers[1]!('0x1');
    await expect(next).resolves.toBeUndefined();
    expect(await gaveUp).toMatchObject({ code: 'CHAIN_CHECK_TIMEOUT' });
    expect(check.passed(conn)).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  test('through the transport: callers that abort while the question is out leave no timer of the pool behind', async () => {
    const clock = new FakeClock();
    const hung = node('0x1', '0xdd', { hang: true });
    const t = poolTransport({ endpoints: [{ transport: hung.transport, name: 'hung' }], custom, chainId: 1, clock, attemptTimeoutMs: 10_000 });
    const callers = [new AbortController(), new AbortController()];
    const pending = callers.map((c) => t({}).request({ method: 'eth_blockNumber' }, { signal: c.signal }).catch((e: unknown) => e));
    await clock.advance(100);
    expect(clock.pendingTimers).toBeGreaterThan(0);
    for (const c of callers) c.abort();
    for (const p of pending) expect(await p).toMatchObject({ code: 'ABORTED' });
    await t.close();
    expect(clock.pendingTimers).toBe(0);
    expect(hung.calls).toEqual(['eth_chainId']);
  });

  test('pool.enableEndpoint has the node asked again; setEndpoints with another node asks the new one', async () => {
    const wrong = node('0x2');
    const t = poolTransport({ endpoints: [{ transport: wrong.transport, name: 'a' }, { transport: node('0x1').transport, name: 'b' }], custom, chainId: 1, strategy: 'ordered' });
    const client = createClient({ transport: t });
    await client.request({ method: 'eth_blockNumber' });
    expect(t.pool.stats().find((s) => s.name === 'a')!.status).toBe('disabled');
    t.pool.enableEndpoint('a');
    await client.request({ method: 'eth_blockNumber' });
    expect(wrong.calls).toEqual(['eth_chainId', 'eth_chainId']);
    const fixed = node('0x1', '0xee');
    t.setEndpoints([{ transport: fixed.transport, name: 'a' }, { transport: node('0x1').transport, name: 'b' }]);
    expect(await client.request({ method: 'eth_blockNumber' })).toBe('0xee');
    expect(fixed.calls).toEqual(['eth_chainId', 'eth_blockNumber']);
    await t.close();
  });

  test('a node whose endpoint leaves the pool while it is asked its chain is sent nothing more; the call moves on (swaps generator, seed 2026120531)', async () => {
    const calls: string[] = [];
    const other = node('0x1', '0x77');
    let t: ReturnType<typeof poolTransport> | undefined;
    /** A node that leaves the pool (as a Refresher would take it out) at the first request it gets. */
    const leaving = () =>
      custom({
        request: async ({ method }: { method: string }) => {
          calls.push(method);
          t!.setEndpoints([{ transport: other.transport, name: 'other' }]);
          return '0x1';
        },
      });
    t = poolTransport({ endpoints: [{ transport: leaving(), name: 'leaving' }, { transport: other.transport, name: 'other' }], custom, chainId: 1, strategy: 'ordered' });
    expect(await createClient({ transport: t }).request({ method: 'eth_blockNumber' })).toBe('0x77');
    expect(calls).toEqual(['eth_chainId']);
    // Pinned to it, the request has nowhere else to go: the PoolError says so (not the internal error, as a node's answer; seed 42490).
    calls.length = 0;
    t.setEndpoints([{ transport: leaving(), name: 'leaving' }, { transport: other.transport, name: 'other' }]);
    const error = await createClient({ transport: t.pin('leaving') }).request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'PoolError', code: 'PIN_UNAVAILABLE' });
    expect(calls).toEqual(['eth_chainId']);
    await t.close();
  });

  test('the head poll and withEndpoint are checked too', async () => {
    const clock = new FakeClock();
    const wrong = node('0x2', '0x99');
    const t = poolTransport({ endpoints: [{ transport: wrong.transport, name: 'w' }, { transport: node('0x1', '0x10').transport, name: 'g' }], custom, chainId: 1, clock, heads: { pollMs: 1_000 } });
    await clock.advance(10);
    expect(wrong.calls).toEqual(['eth_chainId']);
    expect(t.heads()!.endpoints.map((e) => e.name)).toEqual(['g']);
    const t2 = poolTransport({ endpoints: [{ transport: node('0x2').transport, name: 'w' }], custom, chainId: 1 });
    const error = await t2.withEndpoint(async (transport) => createClient({ transport }).request({ method: 'eth_blockNumber' })).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CHAIN_MISMATCH' });
    await t.close();
    await t2.close();
  });

  test("a client of another chain than chainId is refused when it is made; the client's own chain passes", () => {
    const t = poolTransport({ endpoints: [{ transport: node('0x1').transport, name: 'n' }], custom, chainId: 1 });
    expect(() => createPublicClient({ chain: sepolia, transport: t })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'chainId' }));
    expect(createPublicClient({ chain: mainnet, transport: t }).chain.id).toBe(1);
  });

  test('works with a viem public client (its chain id calls pass through as any request)', async () => {
    const t = poolTransport({ endpoints: [{ transport: node('0x1', '0x1').transport, name: 'n' }], custom, chainId: 1 });
    const client = createPublicClient({ transport: t });
    expect(await client.getChainId()).toBe(1);
    await t.close();
  });

  test.each([0, -1, 1.5, '1', Number.MAX_SAFE_INTEGER + 1, null])('chainId %s is refused with INVALID_OPTIONS', (chainId) => {
    expect(() => poolTransport({ endpoints: [{ transport: node('0x1').transport, name: 'n' }], custom, chainId: chainId as number })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'chainId' }));
  });
});

describe('chainId: the ethers provider', () => {
  /** A `fetch` serving JSON-RPC for each URL: `eth_chainId` answers the URL's chain, anything else `0x10`; logs "url method". */
  function nodes(chains: Record<string, string>) {
    const log: string[] = [];
    const fetch = async (url: string, init?: { body?: unknown }): Promise<Response> => {
      const { id, method } = JSON.parse(String(init?.body)) as { id: number; method: string };
      log.push(`${url} ${method}`);
      const result = method === 'eth_chainId' ? chains[url] : '0x10';
      return new Response(JSON.stringify({ jsonrpc: '2.0', id, result }), { headers: { 'content-type': 'application/json' } });
    };
    return { log, fetch };
  }

  test("a node of another chain gets none of the caller's requests; the chain id is the network, with no detection", async () => {
    const { PooledJsonRpcProvider, ChainMismatchError: FromEthers } = await import('../src/ethers/index.js');
    expect(FromEthers).toBe(ChainMismatchError);
    const { log, fetch } = nodes({ 'http://wrong.test/': '0x89', 'http://good.test/': '0x1' });
    const provider = new PooledJsonRpcProvider({ endpoints: [{ url: 'http://wrong.test/', name: 'wrong' }, { url: 'http://good.test/', name: 'good' }], fetch, chainId: 1, strategy: 'round-robin' });
    const disabled: string[] = [];
    provider.pool.on('endpoint-disabled', (e) => disabled.push(e.endpoint));
    for (let i = 0; i < 4; i++) expect(await provider.getBlockNumber()).toBe(16);
    expect((await provider.getNetwork()).chainId).toBe(1n);
    expect(log.filter((l) => l.startsWith('http://wrong.test/'))).toEqual(['http://wrong.test/ eth_chainId']);
    expect(log.filter((l) => l === 'http://good.test/ eth_chainId')).toHaveLength(1);
    expect(disabled).toEqual(['wrong']);
    await provider.close();
  });

  test('with every node on another chain, the call fails with ChainMismatchError itself, as through viem', async () => {
    const { PooledJsonRpcProvider } = await import('../src/ethers/index.js');
    const { fetch } = nodes({ 'http://bsc.test/': '0x38' });
    const provider = new PooledJsonRpcProvider({ endpoints: [{ url: 'http://bsc.test/', name: 'bsc' }], fetch, chainId: 1 });
    const error = await provider.sendWith('eth_blockNumber', []).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChainMismatchError);
    expect(error).toMatchObject({ code: 'CHAIN_MISMATCH', expected: 1, actual: 56 });
    expect(() => new PooledJsonRpcProvider({ endpoints: [{ url: 'http://bsc.test/' }], fetch, chainId: -1 })).toThrow(expect.objectContaining({ field: 'chainId' }));
    // A network and a chainId that name two chains are refused; one chain, given both ways, is fine.
    expect(() => new PooledJsonRpcProvider({ endpoints: [{ url: 'http://bsc.test/' }], fetch, chainId: 1, network: 'sepolia' })).toThrow(expect.objectContaining({ field: 'chainId' }));
    new PooledJsonRpcProvider({ endpoints: [{ url: 'http://bsc.test/' }], fetch, chainId: 1, network: 'mainnet' }).destroy();
    await provider.close();
  });
});

/**
 * Every node on another chain (a new user's t13b-chain-msg): the first call fails with the
 * `ChainMismatchError` itself through both adapters (the ethers provider failed `NO_ENDPOINT`
 * "disabled", the mismatch only in its `cause`), and a later call, which finds every endpoint
 * disabled before it begins, fails `NO_ENDPOINT` naming the chains ("disabled" said nothing
 * of why), its `cause` a `ChainMismatchError`.
 */
describe('chainId: every node on another chain, first and later calls', () => {
  const expectLater = (error: unknown) => {
    expect(error).toMatchObject({ name: 'PoolError', code: 'NO_ENDPOINT' });
    expect((error as Error).message).toMatch(/disabled by the chain check: 'w' serves chain 5, 'w2' serves chain 137, not chain 1/);
    expect((error as Error).cause).toBeInstanceOf(ChainMismatchError);
  };

  test('viem', async () => {
    const t = poolTransport({ endpoints: [{ transport: node('0x5').transport, name: 'w' }, { transport: node('0x89').transport, name: 'w2' }], custom, chainId: 1, strategy: 'ordered' });
    const client = createClient({ transport: t });
    const first = await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ChainMismatchError);
    expectLater(await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e));
    await t.close();
  });

  test('ethers', async () => {
    const { PooledJsonRpcProvider } = await import('../src/ethers/index.js');
    const chains: Record<string, string> = { 'http://w.test/': '0x5', 'http://w2.test/': '0x89' };
    const fetch = async (url: string, init?: { body?: unknown }): Promise<Response> => {
      const { id, method } = JSON.parse(String(init?.body)) as { id: number; method: string };
      return new Response(JSON.stringify({ jsonrpc: '2.0', id, result: method === 'eth_chainId' ? chains[url] : '0x10' }));
    };
    const provider = new PooledJsonRpcProvider({ endpoints: [{ url: 'http://w.test/', name: 'w' }, { url: 'http://w2.test/', name: 'w2' }], fetch, chainId: 1, strategy: 'ordered' });
    const first = await provider.getBalance('0x000000000000000000000000000000000000dEaD').catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ChainMismatchError);
    expect(first).toMatchObject({ endpoint: 'w2', expected: 1, actual: 137 });
    expectLater(await provider.send('eth_getBalance', ['0x000000000000000000000000000000000000dEaD', 'latest']).catch((e: unknown) => e));
    await provider.close();
  });
});

describe('chainId against real nodes (ganache, chain 1337)', () => {
  test('with chainId 1337 the node serves; with chainId 1 it is disabled and the call fails with its chain named', async () => {
    const { startNode, CHAIN_ID } = await import('./helpers/ganache.js');
    const { http } = await import('viem');
    const n = await startNode();
    try {
      const right = poolTransport({ endpoints: [{ url: n.url, name: 'ganache' }], http, chainId: CHAIN_ID });
      expect(typeof (await createClient({ transport: right }).request({ method: 'eth_blockNumber' }))).toBe('string');
      await right.close();
      const wrong = poolTransport({ endpoints: [{ url: n.url, name: 'ganache' }], http, chainId: 1 });
      const error = await createClient({ transport: wrong }).request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'CHAIN_MISMATCH', expected: 1, actual: CHAIN_ID });
      expect(wrong.pool.stats()[0]!.status).toBe('disabled');
      await wrong.close();
    } finally {
      await n.kill();
    }
  }, 30_000);
});
