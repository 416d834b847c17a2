/**
 * Integration: quorum reads and coalescing through the viem transport, on ganache nodes
 * (independent chains; one mines a block the others never see).
 */
import { createPublicClient, http } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { poolTransport, type PoolTransport, type PoolTransportOptions, type QuorumError } from '../src/viem/index.js';
import { chain, MNEMONIC, startNode, startProxy, type FaultProxy, type Node } from './helpers/ganache.js';

const SLOW = 120_000;
const address = mnemonicToAccount(MNEMONIC, { addressIndex: 1 }).address;
let q: Node[];
const transports: PoolTransport[] = [];
const proxies: FaultProxy[] = [];

beforeAll(async () => {
  q = await Promise.all([startNode(), startNode(), startNode()]);
  // Two blocks ahead: one apart would agree on eth_blockNumber (docs/rpc.md).
  for (let i = 0; i < 2; i++) await createPublicClient({ chain, transport: http(q[0]!.url) }).request({ method: 'evm_mine' as 'eth_chainId' });
}, SLOW);

afterAll(async () => {
  await Promise.all(transports.map((t) => t.pool.close()));
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(q.map((n) => n.kill()));
}, SLOW);

function transport(options: Partial<PoolTransportOptions> = {}): PoolTransport {
  const t = poolTransport({ endpoints: q.map((n, i) => ({ name: `q${i}`, url: n.url })), http, ...options });
  transports.push(t);
  return t;
}

describe('viem quorum reads', () => {
  test('t.quorum(2): the two nodes that agree outvote the one ahead', async () => {
    const t = transport();
    const client = createPublicClient({ chain, transport: t.quorum(2) });
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(0n);
    expect(t.readStats().quorumReads).toBe(1);
    expect(t.pool.stats().map((s) => s.attempts)).toEqual([1, 1, 1]);
  }, SLOW);

  test('per method: a quorum of 3 fails with QUORUM_NOT_MET carrying the answers', async () => {
    const t = transport({ quorum: { methods: { eth_blockNumber: 3 } } });
    const client = createPublicClient({ chain, transport: t });
    const err = (await client.request({ method: 'eth_blockNumber' }).catch((e: unknown) => e)) as QuorumError;
    expect(isPoolError(err)).toBe(true);
    expect(err.code).toBe('QUORUM_NOT_MET');
    expect(err.answers.map((a) => a.value)).toEqual(['0x2', '0x0', '0x0']);
    expect(await client.request({ method: 'eth_chainId' })).toBe(`0x${chain.id.toString(16)}`); // other methods: no quorum
  }, SLOW);

  test('per call, through the request options', async () => {
    const t = transport();
    const client = createPublicClient({ chain, transport: t });
    expect(await client.request({ method: 'eth_getBalance', params: [address, 'latest'] }, { quorum: 3 } as never)).toMatch(/^0x/);
    expect(t.pool.stats().map((s) => s.attempts)).toEqual([1, 1, 1]);
  }, SLOW);

  test('never for sends', async () => {
    const t = transport();
    const client = createPublicClient({ chain, transport: t.quorum(2) });
    const err = await client.request({ method: 'eth_sendRawTransaction', params: ['0x00'] }).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('INVALID_OPTIONS');
    expect(t.pool.stats().every((s) => s.attempts === 0)).toBe(true);
    expect(() => transport({ coalesce: ['eth_sendRawTransaction'] })).toThrow(/coalesce/);
  }, SLOW);
});

describe('viem coalescing', () => {
  test.each([
    ['with coalescing', ['eth_getBalance'], 1],
    ['without', [], 50],
  ] as const)('a burst of 50 identical reads %s: upstream requests counted at the node', async (_label, coalesce, expected) => {
    const counter = await startProxy(q[1]!.url);
    proxies.push(counter);
    const t = poolTransport({ endpoints: [{ name: 'c', url: counter.url }], http, coalesce });
    transports.push(t);
    const client = createPublicClient({ chain, transport: t });
    const answers = await Promise.all(Array.from({ length: 50 }, () => client.request({ method: 'eth_getBalance', params: [address, 'latest'] })));
    expect(new Set(answers).size).toBe(1);
    expect(counter.hits).toBe(expected);
  }, SLOW);
});
