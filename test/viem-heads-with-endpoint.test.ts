/**
 * `withEndpoint` (several reads on one node: a nonce and a balance from the same node) chooses
 * its endpoint as a read of `latest` would: until the fiftieth session it ignored head
 * routing, and a node 10 blocks behind, first in order, served its reads of `latest` (a new
 * user's repro, t19-withendpoint-heads.mjs).
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';
import type { TransportFactory } from '../src/viem/types.js';

const hex = (n: number): string => `0x${n.toString(16)}`;
const ZERO = '0x0000000000000000000000000000000000000000';

function setup(heads: Record<string, number>, failing: Set<string> = new Set()) {
  const clock = new FakeClock(1_000_000);
  const conn = (key: string) =>
    custom({
      request: ({ method }: { method: string }) => {
        if (method === 'eth_blockNumber') return Promise.resolve(hex(heads[key]!));
        if (failing.has(key)) return Promise.reject(Object.assign(new Error('internal error'), { code: -32603 }));
        return Promise.resolve(hex(heads[key]!)); // the balance is the block served
      },
    });
  const t = poolTransport({
    endpoints: Object.keys(heads).map((name) => ({ name, transport: conn(name) })),
    heads: { maxLagBlocks: 1, pollMs: 100 },
    strategy: 'ordered',
    attemptTimeoutMs: 1000,
    clock,
  });
  /** A balance read through `withEndpoint`: [the endpoint, the balance]. */
  const balance = (options?: Parameters<typeof t.withEndpoint>[1]) =>
    t.withEndpoint(async (tt: TransportFactory, name: string) => [name, Number(await createClient({ transport: tt }).request({ method: 'eth_getBalance', params: [ZERO, 'latest'] }))] as const, options);
  return { clock, t, balance };
}

describe('withEndpoint under head routing', () => {
  test('the node behind, first in order, is passed over for the one at the tip', async () => {
    const s = setup({ lag: 90, tip: 100 });
    await s.clock.advance(1);
    expect(s.t.heads()!.endpoints.map((e) => [e.name, e.lagging])).toEqual([['lag', 'behind'], ['tip', undefined]]);
    for (let i = 0; i < 3; i++) expect(await s.balance()).toEqual(['tip', 100]);
    await s.t.close();
  });

  test("the caller's own avoid and pin still hold", async () => {
    const s = setup({ lag: 90, tip: 100, tip2: 100 });
    await s.clock.advance(1);
    expect(await s.balance({ avoid: (ep) => ep === 'tip' })).toEqual(['tip2', 100]);
    expect(await s.balance({ pin: 'lag' })).toEqual(['lag', 90]);
    await s.t.close();
  });

  test('with the node at the tip failing, the node behind serves (an answer beats none)', async () => {
    const s = setup({ lag: 90, tip: 100 }, new Set(['tip']));
    await s.clock.advance(1);
    const got = s.balance();
    await s.clock.advance(2000);
    expect(await got).toEqual(['lag', 90]);
    await s.t.close();
  });
});
