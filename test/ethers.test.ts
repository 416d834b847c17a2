/**
 * Integration: ethers v6 through `endpoint-pool/ethers`, real ganache nodes, fault proxies
 * on 127.0.0.1. Each node is its own chain (same funded accounts): reads that must agree
 * across nodes use fresh nodes, sends go to one node behind several routes.
 */
import { HDNodeWallet, Interface, type TransactionRequest } from 'ethers';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { PooledJsonRpcProvider, type PooledProviderOptions, type QuorumError } from '../src/ethers/index.js';
import { CHAIN_ID, MNEMONIC, startNode, startProxy, type FaultProxy, type Node } from './helpers/ganache.js';
import { startRpc } from './helpers/rpc-server.js';

const SLOW = 120_000;
const wallet0 = HDNodeWallet.fromPhrase(MNEMONIC, undefined, "m/44'/60'/0'/0/0");
const other = HDNodeWallet.fromPhrase(MNEMONIC, undefined, "m/44'/60'/0'/0/1").address;
/** Init code deploying a contract whose every call reverts with `Error("nope")`. */
const REVERTER = (() => {
  const data = new Interface(['function Error(string)']).encodeFunctionData('Error', ['nope']).slice(2);
  const len = data.length / 2;
  // runtime: CODECOPY the revert payload (appended after the runtime) to memory, REVERT with it.
  const hex = (n: number, bytes = 1) => n.toString(16).padStart(bytes * 2, '0');
  const runtimeHead = `61${hex(len, 2)}80601060003960 00fd`.replace(/ /g, ''); // PUSH2 len DUP1 PUSH1 off PUSH1 0 CODECOPY PUSH1 0 REVERT
  const runtime = runtimeHead.replace('6010', `60${hex(runtimeHead.length / 2)}`) + data;
  const rlen = runtime.length / 2;
  const init = `61${hex(rlen, 2)}80600c6000396000f3`; // PUSH2 rlen DUP1 PUSH1 12 (this init code's length) PUSH1 0 CODECOPY PUSH1 0 RETURN
  return `0x${init}${runtime}`;
})();

let n1: Node;
const nodes: Node[] = [];
const proxies: FaultProxy[] = [];
const providers: PooledJsonRpcProvider[] = [];

beforeAll(async () => {
  n1 = await startNode();
  nodes.push(n1);
}, SLOW);

afterAll(async () => {
  await Promise.all(providers.map((p) => p.close()));
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(nodes.map((n) => n.kill()));
}, SLOW);

async function proxy(target: string): Promise<FaultProxy> {
  const p = await startProxy(target);
  proxies.push(p);
  return p;
}

function provider(options: PooledProviderOptions): PooledJsonRpcProvider {
  const p = new PooledJsonRpcProvider({ network: CHAIN_ID, ...options });
  providers.push(p);
  return p;
}

describe('ethers through the pool, on ganache', () => {
  test('reads, a signed send and its receipt, all over the pool', async () => {
    const down = await proxy(n1.url);
    down.mode = '503';
    const p = provider({ endpoints: [{ name: 'down', url: down.url }, { name: 'n1', url: n1.url }], backoff: { initialMs: 5, maxMs: 50 } });
    expect(Number((await p.getNetwork()).chainId)).toBe(CHAIN_ID);
    const before = await p.getBalance(other);
    const signer = wallet0.connect(p);
    const tx = await signer.sendTransaction({ to: other, value: 1000n });
    const receipt = await p.getTransactionReceipt(tx.hash);
    expect(receipt?.status).toBe(1);
    // At the receipt's block: a plain getBalance could be answered from ethers' own 250 ms request cache.
    expect((await p.getBalance(other, receipt!.blockNumber)) - before).toBe(1000n);
    const [d, n] = p.pool.stats();
    expect(d!.failures).toBeGreaterThan(0); // the 503 route was tried and failed over
    expect(n!.successes).toBeGreaterThan(3);
  }, SLOW);

  test("a node's revert reaches the caller as ethers' CALL_EXCEPTION with its reason, not as a PoolError", async () => {
    const p = provider({ endpoints: [{ name: 'n1', url: n1.url }] });
    const signer = wallet0.connect(p);
    const deploy = await signer.sendTransaction({ data: REVERTER } as TransactionRequest);
    const address = (await p.getTransactionReceipt(deploy.hash))?.contractAddress;
    expect(address).toMatch(/^0x/);
    const err = (await p.call({ to: address!, data: '0x12345678' }).catch((e: unknown) => e)) as { code?: string; reason?: string };
    expect(isPoolError(err)).toBe(false);
    expect(err.code).toBe('CALL_EXCEPTION');
    expect(err.reason).toBe('nope');
    expect(p.pool.stats()[0]!.attempts).toBeGreaterThan(0);
  }, SLOW);

  test('a send whose answer is lost after forwarding is retried elsewhere and lands exactly once', async () => {
    const sender = HDNodeWallet.fromPhrase(MNEMONIC, undefined, "m/44'/60'/0'/0/2");
    const direct = provider({ endpoints: [{ name: 'direct', url: n1.url }] });
    // ganache 7.9.2 mines a resent nonce-0 transaction twice (real nodes refuse it): start at nonce 1.
    await (await sender.connect(direct).sendTransaction({ to: other, value: 1n })).wait();
    const count = async () => Number(await direct.send('eth_getTransactionCount', [sender.address, 'latest'])); // uncached
    const nonce0 = await count();
    const flaky = await proxy(n1.url);
    flaky.dropSendsAfterForward = 1;
    const p = provider({ endpoints: [{ name: 'flaky', url: flaky.url }, { name: 'n1', url: n1.url }], backoff: { initialMs: 1, maxMs: 5 }, breaker: { threshold: 100 } });
    const tx = await sender.connect(p).sendTransaction({ to: other, value: 7n });
    expect(flaky.dropped).toBe(1);
    expect((await direct.getTransactionReceipt(tx.hash))?.status).toBe(1);
    expect(await count()).toBe(nonce0 + 1);
  }, SLOW);

  test('every endpoint down: the caller gets a PoolError with a code, and no URL in the message', async () => {
    const [a, b] = await Promise.all([proxy(n1.url), proxy(n1.url)]);
    a.mode = 'dead';
    b.mode = '503';
    const p = provider({ endpoints: [{ url: a.url }, { url: b.url }], backoff: { initialMs: 1, maxMs: 5 } });
    const err = await p.getBlockNumber().catch((e: unknown) => e);
    expect(isPoolError(err)).toBe(true);
    expect((err as { code: string }).code).toMatch(/RETRIES_EXHAUSTED|NO_ENDPOINT/);
    // The message names the endpoints (their names default to the URL's host, as in stats,
    // metrics and events) and what each attempt met; never a URL.
    const message = (err as Error).message;
    expect(message).not.toMatch(/https?:\/\//);
    for (const url of [a.url, b.url]) expect(message).not.toContain(url);
    expect(message).toContain(`"${new URL(a.url).host}" transient`);
  }, SLOW);

  test('429 with Retry-After, 503 and a hanging node in front: reads fail over, each fault classified', async () => {
    const [limited, unavailable, hanging] = await Promise.all([proxy(n1.url), proxy(n1.url), proxy(n1.url)]);
    limited.mode = '429';
    unavailable.mode = '503';
    hanging.mode = 'hang';
    const p = provider({
      endpoints: [
        { name: 'limited', url: limited.url },
        { name: 'unavailable', url: unavailable.url },
        { name: 'hanging', url: hanging.url },
        { name: 'n1', url: n1.url },
      ],
      attemptTimeoutMs: 1_000,
      maxAttempts: 4,
      backoff: { initialMs: 5, maxMs: 10_000 },
    });
    expect(await p.getBlockNumber()).toBeGreaterThanOrEqual(0);
    const byName = Object.fromEntries(p.pool.stats().map((s) => [s.name, s]));
    expect(byName['limited']).toMatchObject({ rateLimited: 1, breaker: { state: 'closed' } });
    expect(byName['limited']!.cooldownRemainingMs).toBeGreaterThan(3_000); // Retry-After: 5
    expect(byName['unavailable']).toMatchObject({ failures: 1, rateLimited: 0 });
    expect(byName['hanging']).toMatchObject({ failures: 1 });
    expect(byName['n1']).toMatchObject({ successes: 1 });
    expect(await p.send('eth_chainId', [])).toBe(`0x${CHAIN_ID.toString(16)}`);
    expect(limited.hits).toBe(1); // still cooling down: not asked again
  }, SLOW);
});

describe('quorum reads on ganache', () => {
  let q: Node[];
  beforeAll(async () => {
    q = await Promise.all([startNode(), startNode(), startNode()]);
    nodes.push(...q);
    // One node mines two blocks the others never see: it disagrees on eth_blockNumber (one
    // block apart would agree: a node may see the newest block a moment before another).
    for (let i = 0; i < 2; i++) await fetch(q[0]!.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'evm_mine', params: [] }) });
  }, SLOW);

  test('the agreeing majority wins over a node that is ahead; its answer is carried when the quorum is too high', async () => {
    const p = provider({ endpoints: q.map((n, i) => ({ name: `q${i}`, url: n.url })) });
    expect(await p.sendWith('eth_blockNumber', [], { quorum: 2 })).toBe('0x0');
    const err = (await p.sendWith('eth_blockNumber', [], { quorum: 3 }).catch((e: unknown) => e)) as QuorumError;
    expect(isPoolError(err)).toBe(true);
    expect(err.code).toBe('QUORUM_NOT_MET');
    expect(err.answers.map((a) => [a.endpoint, a.value])).toEqual([
      ['q0', '0x2'],
      ['q1', '0x0'],
      ['q2', '0x0'],
    ]);
    expect(JSON.stringify(err.answers) + err.message).not.toContain('127.0.0.1');
  }, SLOW);

  test('per-method quorum with weights: a heavy node outvotes', async () => {
    const p = provider({ endpoints: q.map((n, i) => ({ name: `q${i}`, url: n.url })), quorum: { methods: { eth_blockNumber: 2 }, weights: { q0: 2 } } });
    expect(await p.getBlockNumber()).toBe(2);
    expect(await p.send('eth_getBalance', [other, 'latest'])).toMatch(/^0x/); // no quorum for other methods
    expect(p.readStats().quorumReads).toBe(1);
  }, SLOW);

  test('quorum is refused for sends', async () => {
    const p = provider({ endpoints: q.map((n, i) => ({ name: `q${i}`, url: n.url })) });
    const err = await p.sendWith('eth_sendRawTransaction', ['0x00'], { quorum: 2 }).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('INVALID_OPTIONS');
    expect(() => provider({ endpoints: [{ url: q[0]!.url }], quorum: { methods: { eth_sendTransaction: 2 } } })).toThrow(/quorum/);
  }, SLOW);
});

describe('coalescing on ganache', () => {
  test.each([
    ['with coalescing', ['eth_getBalance'], 1],
    ['without', [], 50],
  ] as const)('a burst of 50 identical reads %s: upstream requests counted at the node', async (_label, coalesce, expected) => {
    const counter = await proxy(n1.url);
    const p = provider({ endpoints: [{ url: counter.url }], coalesce });
    const answers = await Promise.all(Array.from({ length: 50 }, () => p.send('eth_getBalance', [other, 'latest'])));
    expect(new Set(answers).size).toBe(1);
    expect(counter.hits).toBe(expected);
  }, SLOW);
});

describe('a quorum of eth_call over clients that answer the same revert differently', () => {
  // geth `{ code: 3, data }`; Nethermind `{ code: -32000, data }`, before that `{ code: -32015,
  // data: 'err: 0x… (supplied gas N)' }` (nethermind#8813); Erigon's revert without data:
  // `{ code: -32000, message: 'execution reverted' }`, no data (erigon#17132).
  test.each([
    ['Nethermind -32000', { code: 3, message: 'execution reverted', data: '0xdf2d9b42' }, { code: -32000, message: 'execution reverted', data: '0xDF2D9B42' }],
    ['Nethermind -32015', { code: 3, message: 'execution reverted', data: '0xdf2d9b42' }, { code: -32015, message: 'VM execution error.', data: 'Reverted 0xdf2d9b42' }],
    ['Erigon without data', { code: 3, message: 'execution reverted', data: '0x' }, { code: -32000, message: 'execution reverted' }],
  ])('%s and geth: one vote, the caller gets the revert, the third node is not asked', async (_, geth, other) => {
    const answers = [{ error: geth }, { error: other }, { result: '0x01' }];
    const nodes = await Promise.all(answers.map((a) => startRpc((m) => (m === 'eth_call' ? a : m === 'eth_chainId' ? { result: `0x${CHAIN_ID.toString(16)}` } : { result: '0x1' }))));
    try {
      const p = provider({ endpoints: nodes.map((n, i) => ({ name: `n${i}`, url: n.url })), strategy: 'ordered' });
      const e = await p.sendWith('eth_call', [{ to: '0x0000000000000000000000000000000000000001', data: '0x' }, 'latest'], { quorum: 2 }).catch((x: unknown) => x);
      expect(isPoolError(e) && e.code === 'QUORUM_NOT_MET', String(e)).toBe(false);
      expect(nodes.map((n) => n.methods.filter((m) => m === 'eth_call').length)).toEqual([1, 1, 0]);
    } finally {
      await Promise.all(nodes.map((n) => n.close()));
    }
  }, SLOW);
});
