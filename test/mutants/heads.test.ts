/**
 * HeadTracker and the request helpers of src/rpc/heads.ts, edge by edge: what the twenty-eighth
 * session's mutation run found held by no test.
 */
import { describe, expect, test } from 'vitest';
import { HeadTracker, headFromAnswer, requiredHead } from '../../src/rpc/heads.js';

describe('observe', () => {
  test('block 0 is a head; a negative, fractional or unsafe number is not', () => {
    const t = new HeadTracker();
    expect(t.best()).toBeUndefined();
    t.observe('a', 0, 0);
    expect(t.best()).toBe(0);
    expect(t.head('a')).toBe(0);
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 53]) t.observe('b', bad, 0);
    expect(t.head('b')).toBeUndefined();
    expect(t.head('nobody')).toBeUndefined();
    expect(t.best()).toBe(0);
  });

  test('the same block again is no advance: the head stays dated from its first sighting', () => {
    const t = new HeadTracker({ stallMs: 1000 });
    t.observe('a', 10, 0);
    t.observe('b', 10, 0);
    t.observe('a', 10, 900);
    t.observe('b', 11, 950);
    // a has not advanced since 0 while the best did (at 950): stalled at 1000, not before.
    expect(t.reason('a', 999)).toBeUndefined();
    expect(t.reason('a', 1000)).toBe('stalled');
    expect(t.reason('b', 1000)).toBeUndefined();
  });

  test('the best head is dated from its first sighting: another endpoint reaching it later is not a new advance of the best', () => {
    const t = new HeadTracker({ stallMs: 100 });
    t.observe('a', 10, 0);
    t.observe('b', 9, 0);
    t.observe('b', 10, 50);
    // a reached 10 at 0 and the best did not advance after that: a is not stalled.
    expect(t.reason('a', 500)).toBeUndefined();
    expect(t.reason('b', 500)).toBeUndefined();
  });

  test('the block time: time over blocks of the last 32 samples, each an endpoint\'s own advance from the front to the front', () => {
    const t = new HeadTracker();
    expect(t.blockTimeMs).toBeUndefined();
    expect(t.stallMs).toBe(30_000);
    t.observe('a', 100, 0);
    t.observe('a', 101, 1000); // a's first sighting is no origin: it may have had 100 for long
    expect(t.blockTimeMs).toBeUndefined();
    t.observe('a', 102, 2000);
    expect(t.blockTimeMs).toBeUndefined(); // one sample: none is published before three
    t.observe('a', 104, 6000); // 2 s a block
    expect(t.blockTimeMs).toBeUndefined();
    expect(t.stallMs).toBe(30_000);
    // A late sighting and the short sample after it cancel out: 105 seen 900 ms late, 106 on time.
    t.observe('a', 105, 7900 + 2000);
    expect(t.blockTimeMs).toBeCloseTo(8900 / 4, 9); // 1 s + 4 s + 3.9 s over 4 blocks
    expect(t.stallMs).toBeCloseTo((3 * 8900) / 4, 9);
    t.observe('a', 106, 10_000);
    expect(t.blockTimeMs).toBeCloseTo(9000 / 5, 9); // from 101 at 1 s to 106 at 10 s
    // Only the last 32 samples count.
    for (let i = 1; i <= 32; i++) t.observe('a', 106 + i, 10_000 + 500 * i);
    expect(t.blockTimeMs).toBe(500);
    t.observe('a', 140, 10_000 + 500 * 32 + 2000); // 1 sample in 32 at 1 s a block
    expect(t.blockTimeMs).toBeCloseTo((31 * 500 + 2000) / 33, 9);
  });

  test('no sample from an endpoint behind the front, nor from two sightings at the same instant', () => {
    const t = new HeadTracker();
    t.observe('a', 99, 0);
    t.observe('a', 100, 0);
    t.observe('b', 90, 0);
    t.observe('b', 95, 5000); // behind a: says nothing of the block time
    expect(t.blockTimeMs).toBeUndefined();
    t.observe('a', 101, 0); // the same instant as its last sighting
    expect(t.blockTimeMs).toBeUndefined();
    t.observe('b', 101, 7000); // reaches the front from behind (catching up): no sample either
    expect(t.blockTimeMs).toBeUndefined();
    t.observe('b', 103, 8000); // from the front to the front: 2 blocks in 1 s
    t.observe('b', 104, 8500);
    t.observe('b', 105, 9000);
    expect(t.blockTimeMs).toBe(500);
  });

  test('reaching the best head exactly is at the front (a sample), and an equal block is not a new best', () => {
    const t = new HeadTracker();
    t.observe('a', 100, 0);
    t.observe('b', 99, 0);
    t.observe('b', 100, 400);
    t.observe('a', 101, 600); // a: 100 at 0 was a first sighting
    expect(t.blockTimeMs).toBeUndefined();
    t.observe('b', 101, 800); // b: 100 at 400, equal to the best then
    t.observe('b', 102, 1200);
    t.observe('b', 103, 1600);
    expect(t.blockTimeMs).toBe(400);
  });

  test('a stall that began at the front is a sample over the whole stall; a first sighting of a stalled node is not', () => {
    const t = new HeadTracker();
    t.observe('s', 10, 0);
    t.observe('s', 11, 1000);
    t.observe('s', 12, 2000); // 1 s a block
    t.observe('s', 13, 3000);
    t.observe('s', 14, 4000);
    expect(t.blockTimeMs).toBe(1000);
    t.observe('s', 20, 20_000); // stalled at 14 from 4 s, at the front then: 6 blocks in 16 s (slower than the chain: no catch-up)
    expect(t.blockTimeMs).toBeCloseTo(19_000 / 9, 9);
    const u = new HeadTracker();
    u.observe('s', 5, 0); // stalled long before, with nothing else known
    u.observe('s', 30, 2000); // caught up: 25 blocks in 2 s says nothing of the chain
    expect(u.blockTimeMs).toBeUndefined();
  });
});

describe('lagging', () => {
  test("behind: more than maxLagBlocks below the best, named 'behind'", () => {
    const t = new HeadTracker({ maxLagBlocks: 2 });
    t.observe('a', 100, 0);
    t.observe('b', 98, 0);
    t.observe('c', 97, 0);
    expect(t.reason('b', 0)).toBeUndefined();
    expect(t.reason('c', 0)).toBe('behind');
    expect(t.reason('unknown', 0)).toBeUndefined();
    expect(t.lagging(0)).toEqual(['c']);
    expect(t.snapshot(0)).toEqual({
      best: 100,
      blockTimeMs: undefined,
      endpoints: [
        { name: 'a', head: 100, lagging: undefined },
        { name: 'b', head: 98, lagging: undefined },
        { name: 'c', head: 97, lagging: 'behind' },
      ],
    });
  });

  test('cannotServe: latest leaves out the lagging only; a block number those below it too, capped at the best head', () => {
    const t = new HeadTracker({ maxLagBlocks: 5 });
    t.observe('a', 100, 0);
    t.observe('b', 99, 0);
    t.observe('c', 90, 0);
    expect(t.cannotServe('latest', 0)).toEqual(['c']);
    expect(t.cannotServe(100, 0)).toEqual(['c', 'b']);
    expect(t.cannotServe(99, 0)).toEqual(['c']);
    expect(t.cannotServe(5000, 0)).toEqual(['c', 'b']);
  });

  test('retain forgets the others', () => {
    const t = new HeadTracker();
    t.observe('a', 100, 0);
    t.observe('b', 100, 0);
    t.retain(['b', 'z']);
    expect(t.head('a')).toBeUndefined();
    expect(t.head('b')).toBe(100);
  });
});

describe('requiredHead', () => {
  test.each([
    ['eth_blockNumber', [], 'latest'],
    ['eth_getBalance', ['0xabc'], 'latest'],
    ['eth_getBalance', ['0xabc', 'latest'], 'latest'],
    ['eth_getBalance', ['0xabc', 'pending'], 'latest'],
    ['eth_getBalance', ['0xabc', '0x10'], 16],
    ['eth_getBalance', ['0xabc', '0X10'], undefined],
    ['eth_getBalance', ['0xabc', 'x0x10'], undefined],
    ['eth_getBalance', ['0xabc', '0x10z'], undefined],
    ['eth_getBalance', ['0xabc', 16], undefined],
    ['eth_getBalance', ['0xabc', null], undefined],
    ['eth_getBalance', ['0xabc', 'earliest'], undefined],
    ['eth_getBalance', ['0xabc', { blockNumber: '0x20' }], 32],
    ['eth_getBalance', ['0xabc', { blockNumber: 'latest' }], 'latest'],
    ['eth_getBalance', ['0xabc', { blockHash: '0xdead' }], undefined],
    ['eth_getStorageAt', ['0xabc', '0x0', '0x7'], 7],
    ['eth_getBlockByNumber', ['0x5', false], 5],
    ['eth_getBalance', 'not an array', 'latest'],
    ['eth_chainId', [], undefined],
  ])('%s %j needs %j', (method, params, need) => {
    expect(requiredHead(method, params)).toBe(need);
  });

  test("a block given as { blockNumber } leaves the caller's params as they were", () => {
    const params = ['0xabc', { blockNumber: '0x20' }];
    const copy = structuredClone(params);
    requiredHead('eth_call', params);
    expect(params).toEqual(copy);
  });
});

describe('headFromAnswer', () => {
  test.each([
    ['eth_blockNumber', [], '0x10', 16],
    ['eth_blockNumber', [], 16, undefined],
    ['eth_blockNumber', [], '0x', undefined],
    ['eth_blockNumber', [], 'x0x10', undefined],
    ['eth_blockNumber', [], '0x10 ', undefined],
    ['eth_getBlockByNumber', ['latest', false], { number: '0x11' }, 17],
    ['eth_getBlockByNumber', ['latest', false], { number: 17 }, undefined],
    ['eth_getBlockByNumber', ['latest', false], null, undefined],
    ['eth_getBlockByNumber', ['latest', false], '0x11', undefined],
    ['eth_getBlockByHash', ['0xdead', false], { number: '0x11' }, undefined],
    ['eth_getBalance', ['0xabc', 'latest'], '0x11', undefined],
  ])('%s %j answered %j reveals %j', (method, params, result, head) => {
    expect(headFromAnswer(method, params, result)).toBe(head);
  });
});

describe('behind, judged with one block of doubt for a head heard before the front last moved', () => {
  test('exactly maxLagBlocks behind when heard, the front a block further since: not behind; two further: behind', () => {
    const t = new HeadTracker({ maxLagBlocks: 1, stallMs: 60_000 });
    t.observe('front', 100, 0);
    t.observe('n', 99, 0); // heard with the front: 1 behind, within maxLagBlocks
    expect(t.reason('n', 0)).toBeUndefined();
    t.observe('front', 101, 1000); // n may have 100 by now
    expect(t.stale('n')).toBe(true);
    expect(t.reason('n', 1000)).toBeUndefined();
    expect(t.lagging(1000)).toEqual([]);
    t.observe('front', 102, 2000); // 3 behind what n was heard at: more than one block of doubt
    expect(t.reason('n', 2000)).toBe('behind');
    expect(t.lagging(2000)).toEqual(['n']);
    // Heard again (not stale): judged as it is, with no allowance.
    t.observe('n', 100, 2000);
    expect(t.stale('n')).toBe(false);
    expect(t.reason('n', 2000)).toBe('behind');
    t.observe('n', 101, 2000);
    expect(t.reason('n', 2000)).toBeUndefined();
  });
});
