/**
 * A lower head from a request sent after the answer behind the known head arrived is no answer out
 * of order (those come from overlapping requests): the node went back, or the known head was a
 * glitch. Until the fiftieth session lower heads were ignored unless more than 1,024 blocks
 * lower, so one `eth_blockNumber` answer 50 blocks ahead left that node the only one fit for
 * about 50 block times, and a node whose URL a load balancer moved to a backend 7 blocks behind
 * kept its old head and served reads of `latest` 7 blocks stale (a new user's repros,
 * t06-head-glitch.mjs, t05b-rewind-advancing.mjs).
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import { HeadTracker } from '../src/rpc/heads.js';

const hex = (n: number): string => `0x${n.toString(16)}`;
const ZERO = '0x0000000000000000000000000000000000000000';

describe('HeadTracker: a lower head', () => {
  test('from a request sent after the higher answer arrived replaces it, and the best comes down with it', () => {
    const t = new HeadTracker({ maxLagBlocks: 1 });
    t.observe('a', 100, 0);
    t.observe('b', 100, 0);
    t.observe('a', 150, 10, 5);
    expect([t.best(), t.lagging(10)]).toEqual([150, ['b']]);
    t.observe('a', 101, 20, 15);
    expect([t.head('a'), t.best(), t.lagging(20)]).toEqual([101, 101, []]);
  });

  test('from a request that overlapped it (sent before it arrived, or in its millisecond), or sent when unknown, is out of order: ignored', () => {
    const t = new HeadTracker({ maxLagBlocks: 1 });
    t.observe('a', 105, 10, 0);
    t.observe('a', 103, 12, 9);
    t.observe('a', 103, 13, 10);
    t.observe('a', 103, 14);
    expect(t.head('a')).toBe(105);
    t.observe('a', 103, 15, 11);
    expect(t.head('a')).toBe(103);
    // An equal or higher answer moves the mark: a lower one must be sent after it.
    t.observe('a', 104, 20, 16);
    t.observe('a', 103, 22, 19);
    expect(t.head('a')).toBe(104);
  });
});

/** Nodes whose `eth_blockNumber` answer is `heads[key]` plus `glitch[key]` once; balances are the head. */
function nodes(heads: Record<string, number>, glitch: Record<string, number>, served: string[]) {
  return (key: string) =>
    custom({
      request: ({ method }: { method: string }) => {
        if (method === 'eth_blockNumber') {
          const extra = glitch[key] ?? 0;
          delete glitch[key];
          return Promise.resolve(hex(heads[key]! + extra));
        }
        served.push(key);
        return Promise.resolve(hex(heads[key]!));
      },
    });
}

describe('viem: a glitch and a rewind are undone by the next answer', () => {
  test('one eth_blockNumber answer 50 ahead: after the next poll the three nodes share the reads again', async () => {
    const clock = new FakeClock(1_000_000);
    const heads: Record<string, number> = { a: 100, b: 100, c: 100 };
    const glitch: Record<string, number> = {};
    const served: string[] = [];
    const conn = nodes(heads, glitch, served);
    const t = poolTransport({ endpoints: ['a', 'b', 'c'].map((name) => ({ name, transport: conn(name) })), heads: { maxLagBlocks: 1, pollMs: 200, blockTimeMs: 500 }, strategy: 'round-robin', clock });
    const client = createClient({ transport: t });
    await clock.advance(1);
    glitch['a'] = 50;
    await clock.advance(200); // the poll that glitches
    expect(t.heads()!.endpoints.map((e) => [e.name, e.head, e.lagging])).toEqual([['a', 150, undefined], ['b', 100, 'behind'], ['c', 100, 'behind']]);
    await clock.advance(200); // the next poll
    expect(t.heads()!.best).toBe(100);
    for (let i = 0; i < 6; i++) await client.request({ method: 'eth_getBalance', params: [ZERO, 'latest'] });
    expect(served.sort()).toEqual(['a', 'a', 'b', 'b', 'c', 'c']);
    await t.close();
  });

  test('a node that goes back 7 blocks and follows the chain there is left out after its next answer', async () => {
    const clock = new FakeClock(1_000_000);
    const heads: Record<string, number> = { a: 100, b: 100 };
    const served: string[] = [];
    const conn = nodes(heads, {}, served);
    const t = poolTransport({ endpoints: ['a', 'b'].map((name) => ({ name, transport: conn(name) })), heads: { maxLagBlocks: 1, pollMs: 250, blockTimeMs: 1000 }, strategy: 'round-robin', clock });
    const client = createClient({ transport: t });
    await clock.advance(1);
    heads['a'] = 93;
    for (let i = 0; i < 4; i++) {
      heads['a']! += 1;
      heads['b']! += 1;
      await clock.advance(1000);
    }
    expect(t.heads()!.endpoints.map((e) => [e.name, e.head, e.lagging])).toEqual([['a', 97, 'behind'], ['b', 104, undefined]]);
    served.length = 0;
    const got: number[] = [];
    for (let i = 0; i < 4; i++) got.push(Number(await client.request({ method: 'eth_getBalance', params: [ZERO, 'latest'] })));
    expect(got).toEqual([104, 104, 104, 104]);
    await t.close();
  });
});

describe("heads from the adapters' own requests (no poll)", () => {
  test('viem: a pinned eth_blockNumber answered 50 ahead, then right', async () => {
    const clock = new FakeClock(1_000_000);
    const heads: Record<string, number> = { a: 100, b: 100 };
    const glitch: Record<string, number> = { a: 50 };
    const conn = nodes(heads, glitch, []);
    const t = poolTransport({ endpoints: ['a', 'b'].map((name) => ({ name, transport: conn(name) })), heads: { maxLagBlocks: 1 }, clock });
    const a = createClient({ transport: t.pin('a') });
    expect(await a.request({ method: 'eth_blockNumber' })).toBe(hex(150));
    await clock.advance(1);
    expect(await a.request({ method: 'eth_blockNumber' })).toBe(hex(100));
    expect(t.heads()!.endpoints.map((e) => [e.name, e.head])).toEqual([['a', 100]]);
    await t.close();
  });

  test('ethers: the same', async () => {
    const clock = new FakeClock(1_000_000);
    let glitch = 50;
    const fetch = (_url: string, init: { body: string }) => {
      const body = JSON.parse(init.body) as { id: unknown };
      const head = 100 + glitch;
      glitch = 0;
      return Promise.resolve({ status: 200, ok: true, headers: new Headers(), text: async () => JSON.stringify({ jsonrpc: '2.0', id: body.id, result: hex(head) }) });
    };
    const provider = new PooledJsonRpcProvider({ network: 1, fetch, clock, heads: { maxLagBlocks: 1 }, endpoints: ['a', 'b'].map((name) => ({ name, url: `https://${name}.example/rpc` })) });
    try {
      expect(await provider.sendWith('eth_blockNumber', [], { pin: 'a' })).toBe(hex(150));
      await clock.advance(1);
      expect(await provider.sendWith('eth_blockNumber', [], { pin: 'a' })).toBe(hex(100));
      expect(provider.heads()!.endpoints.map((e) => [e.name, e.head])).toEqual([['a', 100]]);
    } finally {
      await provider.close();
    }
  });
});

describe('ethers: the same glitch', () => {
  test('after the next poll the glitch is gone', async () => {
    const clock = new FakeClock(1_000_000);
    let glitch = 0;
    const fetch = (url: string, init: { body: string }) => {
      const key = new URL(url).hostname.split('.')[0]!;
      const body = JSON.parse(init.body) as { id: unknown; method: string };
      let head = 100;
      if (key === 'a' && body.method === 'eth_blockNumber') {
        head += glitch;
        glitch = 0;
      }
      return Promise.resolve({ status: 200, ok: true, headers: new Headers(), text: async () => JSON.stringify({ jsonrpc: '2.0', id: body.id, result: hex(head) }) });
    };
    const provider = new PooledJsonRpcProvider({ network: 1, fetch, clock, heads: { maxLagBlocks: 1, pollMs: 200, blockTimeMs: 500 }, endpoints: ['a', 'b'].map((name) => ({ name, url: `https://${name}.example/rpc` })) });
    try {
      await clock.advance(1);
      glitch = 50;
      await clock.advance(200);
      expect(provider.heads()!.best).toBe(150);
      await clock.advance(200);
      expect(provider.heads()!.endpoints.map((e) => [e.name, e.head, e.lagging])).toEqual([['a', 100, undefined], ['b', 100, undefined]]);
    } finally {
      await provider.close();
    }
  });
});
