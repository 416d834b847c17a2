/**
 * A block object tells the head only when the read asked for the head: an answer to a read of
 * an old block by number says nothing of where the endpoint's chain is (a backfill reads
 * blocks far behind the tip, quickly and in order).
 */
import { describe, expect, test } from 'vitest';
import { HeadRouting } from '../src/rpc/head-poll.js';
import { headFromAnswer } from '../src/rpc/heads.js';
import { harness } from './support.js';

const hex = (n: number): string => `0x${n.toString(16)}`;
const block = (n: number): { number: string; hash: string } => ({ number: hex(n), hash: `0x${'ab'.repeat(32)}` });

describe('which answers reveal a head', () => {
  test.each([
    ['eth_blockNumber', [], '0x10', 16],
    ['eth_getBlockByNumber latest', ['latest', false], block(20), 20],
    ['eth_getBlockByNumber with no tag', [], block(21), 21],
    ['eth_getBlockByNumber of block 0x5', ['0x5', false], block(5), undefined],
    ['eth_getBlockByNumber pending (the block after the head)', ['pending', false], block(22), undefined],
    ['eth_getBlockByNumber finalized', ['finalized', false], block(3), undefined],
    ['eth_getBlockByNumber safe', ['safe', false], block(4), undefined],
    ['eth_getBlockByNumber earliest', ['earliest', false], block(0), undefined],
  ])('%s', (label, params, result, head) => {
    const method = label.split(' ')[0]!;
    expect(headFromAnswer(method, params, result)).toBe(head);
  });
});

describe('a backfill over a pool at the tip', () => {
  test('reads of old blocks, round robin, at 100 per second: no endpoint is lagging, latest reads go everywhere', async () => {
    const h = harness(['a', 'b', 'c']);
    const routing = new HeadRouting({ maxLagBlocks: 2 }, h.pool, () => Promise.resolve(undefined));
    const tip = 20_000_000;
    const names = ['a', 'b', 'c'];
    for (let i = 0; i < 900; i++) {
      await h.clock.advance(10);
      const n = 1_000 + i;
      routing.observe(names[i % 3]!, 'eth_getBlockByNumber', [hex(n), false], block(n));
      // From the 300th read on, the tip is asked every 50 reads (a block each 0.5 s), by each endpoint.
      if (i >= 299 && i % 50 === 49) for (const e of names) routing.observe(e, 'eth_blockNumber', [], hex(tip + (i + 1) / 50));
      if (i === 299) expect(routing.snapshot().blockTimeMs).toBeUndefined();
    }
    const snap = routing.snapshot();
    expect(snap.endpoints.map((e) => [e.name, e.head, e.lagging])).toEqual(names.map((n) => [n, tip + 18, undefined]));
    // Twelve advances, 0.5 s apart: the block time is measured from the tip, not from the backfill.
    expect(snap.blockTimeMs).toBe(500);
    expect(routing.unfit('eth_getBalance', ['0x0', 'latest'])).toEqual([]);
    expect(routing.unfit('eth_getBlockByNumber', [hex(1_500), false])).toEqual([]);
    routing.stop();
  });

  test('an endpoint first heard of through an old block is not taken to be behind', async () => {
    const h = harness(['a', 'b']);
    const routing = new HeadRouting({ maxLagBlocks: 2 }, h.pool, () => Promise.resolve(undefined));
    routing.observe('a', 'eth_getBlockByNumber', [hex(16), false], block(16));
    routing.observe('b', 'eth_blockNumber', [], hex(20_000_000));
    expect(routing.unfit('eth_getBalance', ['0x0', 'latest'])).toEqual([]);
    expect(routing.snapshot().endpoints.map((e) => e.name)).toEqual(['b']);
    routing.stop();
  });
});
