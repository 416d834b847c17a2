/**
 * Head routing and the methods whose block is not a plain block parameter: `eth_getLogs`
 * (a range, or a `blockHash`), `eth_getBlockReceipts(block)` and `eth_feeHistory(count,
 * newestBlock, ...)`. Until the fiftieth session they needed no head, so a node known to be
 * behind answered logs of a range it had only part of, and `null` receipts (a new user's repro,
 * t12-getlogs-lagging.mjs).
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import { requiredHead } from '../src/rpc/heads.js';

const hex = (n: number): string => `0x${n.toString(16)}`;
const HASH = `0x${'ab'.repeat(32)}`;

describe('requiredHead of ranges, receipts and fee history', () => {
  test.each([
    [[{ fromBlock: '0x60', toBlock: '0x64' }], 100],
    [[{ fromBlock: '0x60' }], 'latest'],
    [[{ fromBlock: '0x60', toBlock: 'latest' }], 'latest'],
    [[{ fromBlock: 'latest', toBlock: '0x64' }], 'latest'],
    [[{ fromBlock: 'pending' }], 'latest'],
    [[{}], 'latest'],
    [[], 'latest'],
    [[{ fromBlock: '0x60', toBlock: 'finalized' }], undefined],
    [[{ fromBlock: 'earliest', toBlock: 'safe' }], undefined],
    [[{ blockHash: HASH }], undefined],
    [[{ blockHash: HASH, toBlock: '0x64' }], undefined],
  ])('eth_getLogs %j needs %j', (params, need) => {
    expect(requiredHead('eth_getLogs', params)).toBe(need);
  });

  test.each([
    ['eth_getBlockReceipts', ['0x64'], 100],
    ['eth_getBlockReceipts', ['latest'], 'latest'],
    ['eth_getBlockReceipts', ['finalized'], undefined],
    ['eth_getBlockReceipts', [HASH], undefined],
    ['eth_getBlockReceipts', [{ blockHash: HASH }], undefined],
    ['eth_feeHistory', ['0x4', '0x64', [25, 75]], 100],
    ['eth_feeHistory', ['0x4', 'latest', []], 'latest'],
    ['eth_feeHistory', ['0x4', 'pending'], 'latest'],
    ['eth_feeHistory', ['0x4', 'safe'], undefined],
    // A hash where a height goes was read as a height of 77 digits: the best head, every endpoint below it unfit.
    ['eth_getBalance', ['0xabc', HASH], undefined],
  ])('%s %j needs %j', (method, params, need) => {
    expect(requiredHead(method, params)).toBe(need);
  });
});

/** A node at `head`: logs one a block up to its head, receipts `null` past it. Logs who served what. */
function node(key: string, head: number, log: string[]) {
  return custom({
    request: ({ method, params }: { method: string; params?: unknown }) => {
      const p = params as unknown[];
      if (method === 'eth_blockNumber') return Promise.resolve(hex(head));
      log.push(`${key}:${method}`);
      if (method === 'eth_getLogs') {
        const f = p[0] as { fromBlock: string; toBlock: string };
        const out = [];
        for (let b = Number(f.fromBlock); b <= Math.min(Number(f.toBlock), head); b++) out.push({ blockNumber: hex(b) });
        return Promise.resolve(out);
      }
      if (method === 'eth_getBlockReceipts') return Promise.resolve(Number(p[0]) > head ? null : []);
      if (method === 'eth_feeHistory') return Promise.resolve(Number(p[1]) > head ? null : { oldestBlock: hex(Number(p[1]) - 3) });
      return Promise.reject(new Error(`unexpected ${method}`));
    },
  });
}

describe('a node known to be behind does not serve a range or a block past its head', () => {
  test('viem: eth_getLogs, eth_getBlockReceipts and eth_feeHistory go to the node at the tip (round robin)', async () => {
    const clock = new FakeClock(1_000_000);
    const log: string[] = [];
    const t = poolTransport({
      endpoints: [{ name: 'lag', transport: node('lag', 95, log) }, { name: 'tip', transport: node('tip', 100, log) }],
      heads: { maxLagBlocks: 1, pollMs: 200, blockTimeMs: 12_000 },
      strategy: 'round-robin',
      attemptTimeoutMs: 2000,
      clock,
    });
    const client = createClient({ transport: t });
    await clock.advance(1);
    expect(t.heads()!.endpoints.map((e) => [e.name, e.head, e.lagging])).toEqual([['lag', 95, 'behind'], ['tip', 100, undefined]]);
    for (let i = 0; i < 4; i++) {
      expect(await client.request({ method: 'eth_getLogs', params: [{ fromBlock: hex(96), toBlock: hex(100) }] } as never)).toHaveLength(5);
      expect(await client.request({ method: 'eth_getBlockReceipts', params: [hex(100)] } as never)).toEqual([]);
      expect(await client.request({ method: 'eth_feeHistory', params: ['0x4', hex(100), []] } as never)).toEqual({ oldestBlock: hex(97) });
    }
    expect(log.filter((e) => e.startsWith('lag:'))).toEqual([]);
    // Receipts by hash need no head: the node behind serves its turn.
    for (let i = 0; i < 2; i++) await client.request({ method: 'eth_getBlockReceipts', params: [HASH] } as never);
    expect(log.filter((e) => e.startsWith('lag:'))).toEqual(['lag:eth_getBlockReceipts']);
    await t.close();
  });

  test('ethers: getLogs of a range up to the tip is complete every time', async () => {
    const clock = new FakeClock(1_000_000);
    const log: string[] = [];
    const heads: Record<string, number> = { lag: 95, tip: 100 };
    const fetch = (url: string, init: { body: string }) => {
      const key = new URL(url).hostname.split('.')[0]!;
      const body = JSON.parse(init.body) as { id: unknown; method: string; params: unknown[] };
      let result: unknown = hex(heads[key]!);
      if (body.method === 'eth_getLogs') {
        log.push(key);
        const f = body.params[0] as { fromBlock: string; toBlock: string };
        result = [];
        for (let b = Number(f.fromBlock); b <= Math.min(Number(f.toBlock), heads[key]!); b++) (result as unknown[]).push({ blockNumber: hex(b) });
      }
      return Promise.resolve({ status: 200, ok: true, headers: new Headers(), text: async () => JSON.stringify({ jsonrpc: '2.0', id: body.id, result }) });
    };
    const provider = new PooledJsonRpcProvider({
      network: 1,
      fetch,
      clock,
      strategy: 'round-robin',
      heads: { maxLagBlocks: 1, pollMs: 200, blockTimeMs: 12_000 },
      endpoints: ['lag', 'tip'].map((name) => ({ name, url: `https://${name}.example/rpc` })),
    });
    try {
      await clock.advance(1);
      for (let i = 0; i < 4; i++) expect(await provider.sendWith('eth_getLogs', [{ fromBlock: hex(96), toBlock: hex(100) }])).toHaveLength(5);
      expect(log).toEqual(['tip', 'tip', 'tip', 'tip']);
    } finally {
      await provider.close();
    }
  });
});
