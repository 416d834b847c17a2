import { describe, expect, it } from 'vitest';
import { HeadTracker, headFromAnswer, requiredHead } from '../src/rpc/heads.js';

describe('HeadTracker', () => {
  it('marks an endpoint more than maxLagBlocks behind the best head', () => {
    const t = new HeadTracker({ maxLagBlocks: 2, stallMs: 1000 });
    t.observe('a', 10, 0); t.observe('b', 8, 0); t.observe('c', 7, 0);
    expect(t.lagging(0)).toEqual(['c']);
    t.observe('c', 9, 1);
    expect(t.lagging(1)).toEqual([]);
    expect(t.best()).toBe(10);
  });
  it('ignores lower or invalid observations', () => {
    const t = new HeadTracker();
    t.observe('a', 10, 0); t.observe('a', 5, 1); t.observe('a', Number.NaN, 2);
    expect(t.head('a')).toBe(10);
  });
  it('treats a stalled head as lagging only while another advances', () => {
    const t = new HeadTracker({ maxLagBlocks: 5, stallMs: 1000 });
    t.observe('a', 10, 0); t.observe('b', 10, 0);
    expect(t.lagging(5000)).toEqual([]); // nobody advanced: chain idle, not a stall
    t.observe('a', 11, 500);
    expect(t.lagging(999)).toEqual([]);
    expect(t.lagging(1000)).toEqual(['b']);
    t.observe('b', 11, 1001);
    expect(t.lagging(1001)).toEqual([]);
  });
  it('an answer far below an endpoint\'s head (more than 1,024 blocks: a reset, or the head was a wrong answer) replaces it, and the best head comes down with it', () => {
    const t = new HeadTracker({ maxLagBlocks: 2, stallMs: 60_000 });
    t.observe('a', 1000, 0); t.observe('b', 1000, 0); t.observe('c', 1000, 0);
    // One wrong answer of c (an overflow, a node of another chain behind its load balancer).
    t.observe('c', 5_000_000, 1);
    expect(t.lagging(1)).toEqual(['a', 'b']);
    // Before the forty-second session c kept that head (lower numbers were ignored), and a and b stayed behind for good.
    t.observe('c', 1001, 2);
    expect([t.head('c'), t.best()]).toEqual([1001, 1001]);
    expect(t.lagging(2)).toEqual([]);
    // A drop within the bound is an answer out of order: ignored.
    t.observe('c', 1001 - 1024, 3);
    expect(t.head('c')).toBe(1001);
  });
  it("an endpoint forgotten or gone takes its head out of the best head: the others are judged against what is left", () => {
    const t = new HeadTracker({ maxLagBlocks: 2, stallMs: 60_000 });
    t.observe('a', 1000, 0); t.observe('b', 990, 0); t.observe('c', 5_000_000, 1);
    expect(t.lagging(1)).toEqual(['a', 'b']);
    t.forget(['c']);
    expect(t.best()).toBe(1000);
    expect(t.lagging(1)).toEqual(['b']);
    t.observe('c', 5_000_000, 2);
    t.retain(['a', 'b']);
    expect(t.best()).toBe(1000);
    expect(t.lagging(2)).toEqual(['b']);
    t.retain([]);
    expect(t.best()).toBeUndefined();
  });
  it('cannotServe adds endpoints whose head is below a named block', () => {
    const t = new HeadTracker({ maxLagBlocks: 2 });
    t.observe('a', 10, 0); t.observe('b', 9, 0);
    expect(t.cannotServe(10, 0)).toEqual(['b']);
    expect(t.cannotServe(9, 0)).toEqual([]);
    expect(t.cannotServe('latest', 0)).toEqual([]);
  });
});

describe('requiredHead / headFromAnswer', () => {
  it('names the block a read needs', () => {
    expect(requiredHead('eth_blockNumber', [])).toBe('latest');
    expect(requiredHead('eth_getBlockByNumber', ['latest', false])).toBe('latest');
    expect(requiredHead('eth_getBlockByNumber', ['0x1f', false])).toBe(31);
    expect(requiredHead('eth_call', [{}, '0xa'])).toBe(10);
    expect(requiredHead('eth_getBalance', ['0xabc', 'pending'])).toBe('latest');
    expect(requiredHead('eth_getBalance', ['0xabc', 'earliest'])).toBeUndefined();
    expect(requiredHead('eth_call', [{}, { blockNumber: '0x2' }])).toBe(2);
    expect(requiredHead('eth_sendRawTransaction', ['0x00'])).toBeUndefined();
    // A method named like a member of Object.prototype takes no block (the table was an object: 'latest').
    for (const m of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) expect(requiredHead(m, [])).toBeUndefined();
  });
  it('reads heads from answers', () => {
    expect(headFromAnswer('eth_blockNumber', [], '0x10')).toBe(16);
    expect(headFromAnswer('eth_getBlockByNumber', ['latest', false], { number: '0x5' })).toBe(5);
    expect(headFromAnswer('eth_getBlockByNumber', ['latest', false], null)).toBeUndefined();
    expect(headFromAnswer('eth_getBalance', [], '0x10')).toBeUndefined();
  });
});
