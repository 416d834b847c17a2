/**
 * The head poll behind `heads: { pollMs }` (src/rpc/head-poll.ts), where the twenty-eighth
 * session's first mutation run found no test holding: no timer without `pollMs`, `stop()`
 * clearing the next poll, a `CLOSED` pool stopping it, a throwing poll not breaking the loop,
 * open breakers and polls still running skipped, answers fed to the tracker, and the checks
 * of `heads` options.
 */
import { describe, expect, test } from 'vitest';
import { PoolError, type ExecuteOptions } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { HeadRouting, checkHeadOptions } from '../../src/rpc/head-poll.js';
import { thrown } from './thrown.js';

function setup(pollMs: number | undefined, answer: (name: string) => Promise<unknown> | unknown = async () => '0x10') {
  const clock = new FakeClock();
  const open = new Set<string>();
  const pool = { clock, endpointNames: ['a', 'b'], breakerState: (n: string) => (open.has(n) ? { state: 'open', untilMs: 1 } : 'closed') };
  const polls: ExecuteOptions[] = [];
  const h = new HeadRouting(pollMs === undefined ? {} : { pollMs }, pool, (exec) => {
    polls.push(exec);
    return answer(exec.pin!) as Promise<unknown>;
  });
  return { clock, open, polls, h };
}

describe('the head poll', () => {
  test('no pollMs: no timer, no poll', async () => {
    const { clock, polls } = setup(undefined);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(60_000);
    expect(polls).toEqual([]);
  });

  test('pollMs: every endpoint pinned, no retry, on the next turn and then every pollMs; the heads reach the tracker; stop() ends it', async () => {
    const { clock, polls, h } = setup(1000);
    expect(polls).toEqual([]);
    await clock.advance(0);
    expect(polls).toEqual([
      { pin: 'a', retry: 'none', signal: expect.any(AbortSignal) },
      { pin: 'b', retry: 'none', signal: expect.any(AbortSignal) },
    ]);
    expect(h.snapshot().endpoints.map((e) => [e.name, e.head])).toEqual([
      ['a', 16],
      ['b', 16],
    ]);
    await clock.advance(1000);
    expect(polls).toHaveLength(4);
    h.stop();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    expect(polls).toHaveLength(4);
  });

  test('stop() from inside a poll (the pool closing as it is polled) arms no next poll', async () => {
    let stop: () => void = () => undefined;
    const { clock, polls, h } = setup(1000, async () => {
      stop();
      return '0x1';
    });
    stop = () => h.stop();
    await clock.advance(0);
    expect(polls.map((p) => p.pin)).toEqual(['a', 'b']);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(5_000);
    expect(polls).toHaveLength(2);
  });

  test('a pool that answers CLOSED stops the poll', async () => {
    const { clock, polls } = setup(1000, async () => {
      throw new PoolError('CLOSED', 'the pool is closed');
    });
    await clock.advance(0);
    expect(polls).toHaveLength(2);
    await clock.advance(0);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(5_000);
    expect(polls).toHaveLength(2);
  });

  test('a poll that throws synchronously or fails otherwise is polled again next time', async () => {
    const { clock, polls } = setup(1000, (name) => {
      if (name === 'a') throw new Error('sync');
      return Promise.reject(new Error('async'));
    });
    await clock.advance(0);
    await clock.advance(1000);
    expect(polls.map((p) => p.pin)).toEqual(['a', 'b', 'a', 'b']);
  });

  test('an endpoint behind an open breaker, or whose last poll is still out, is skipped', async () => {
    const pending: Record<string, () => void> = {};
    const { clock, open, polls } = setup(1000, (name) => new Promise<unknown>((res) => (pending[name] = () => res('0x1'))));
    open.add('b');
    await clock.advance(0);
    expect(polls.map((p) => p.pin)).toEqual(['a']);
    await clock.advance(1000);
    expect(polls.map((p) => p.pin)).toEqual(['a']);
    pending['a']!();
    await clock.advance(1000);
    expect(polls.map((p) => p.pin)).toEqual(['a', 'a']);
  });
});

describe('heads options', () => {
  test.each([
    [null, 'heads', /an object \(\{ maxLagBlocks, pollMs, \.\.\. \}\)/],
    ['fast', 'heads', /an object/],
    [{ maxLagBlocks: 1.5 }, 'heads.maxLagBlocks', /a finite integer >= 0/],
    [{ maxLagBlocks: -1 }, 'heads.maxLagBlocks', /a finite integer >= 0/],
    [{ stallMs: -1 }, 'heads.stallMs', /a finite number >= 0/],
    [{ stallMs: '5' }, 'heads.stallMs', /a finite number >= 0/],
    [{ stallBlocks: Number.NaN }, 'heads.stallBlocks', /a finite number >= 0/],
    [{ blockTimeMs: Number.POSITIVE_INFINITY }, 'heads.blockTimeMs', /a finite number >= 0/],
    [{ pollMs: -5 }, 'heads.pollMs', /a finite number >= 0/],
  ] as [unknown, string, RegExp][])('%j: INVALID_OPTIONS naming %s', (o, field, message) => {
    const e = thrown(() => checkHeadOptions(o));
    expect([e?.code, e?.field]).toEqual(['INVALID_OPTIONS', field]);
    expect(e?.message).toMatch(message);
  });

  test('zeros and a fractional stallMs are accepted', () => {
    expect(() => checkHeadOptions({ maxLagBlocks: 0, stallMs: 0.5, stallBlocks: 0, blockTimeMs: 0, pollMs: 0 })).not.toThrow();
  });
});

describe('a lagging endpoint asked with the front (heads of one instant)', () => {
  /** Routing over a, b, c with no poll, block time 100 ms; `heard` are [name, head, at ms] observations. */
  async function asked(maxLagBlocks: number, heard: [string, number, number][], at: number): Promise<string[]> {
    const clock = new FakeClock(0);
    const pool = { clock, endpointNames: ['a', 'b', 'c'], breakerState: () => 'closed' };
    const pins: string[] = [];
    const h = new HeadRouting({ maxLagBlocks, blockTimeMs: 100 }, pool, (exec) => {
      pins.push(exec.pin!);
      return new Promise(() => undefined);
    });
    for (const [name, head, t] of heard) {
      await clock.advance(t - clock.now());
      h.observe(name, 'eth_blockNumber', [], `0x${head.toString(16)}`);
    }
    await clock.advance(at - clock.now());
    h.unfit('eth_getBalance', ['0x0', 'latest']);
    h.stop();
    return pins.sort();
  }

  test('the front is asked when the blocks made since it was heard could let the answer pass it', async () => {
    // c two behind, heard 200 ms (two blocks) after the front: the front is asked with it.
    expect(await asked(0, [['a', 100, 0], ['b', 100, 0], ['c', 98, 200]], 200)).toEqual(['a', 'b', 'c']);
    // Three behind: two blocks cannot close that; c alone.
    expect(await asked(0, [['a', 100, 0], ['b', 100, 0], ['c', 97, 200]], 200)).toEqual(['c']);
  });

  test('not a front heard less than 100 ms before (its answer is as fresh)', async () => {
    expect(await asked(0, [['a', 100, 0], ['b', 100, 0], ['c', 99, 100]], 100)).toEqual(['a', 'b', 'c']);
    expect(await asked(0, [['a', 100, 0], ['b', 100, 0], ['c', 99, 99]], 99)).toEqual(['c']);
  });

  test('the others not lagging are asked with the front when heard from as long ago, never on their own', async () => {
    // maxLagBlocks 1: b, a block behind, is not lagging: asked with the front (the fresh front
    // would leave it stale, and then stalled once a stall time had passed without news of it).
    expect(await asked(1, [['a', 100, 0], ['b', 99, 0], ['c', 97, 200]], 200)).toEqual(['a', 'b', 'c']);
    // b heard less than 100 ms before: its answer is as fresh.
    expect(await asked(1, [['a', 100, 0], ['b', 99, 150], ['c', 97, 200]], 200)).toEqual(['a', 'c']);
    // The front too far ahead for c's answer to pass it: neither the front nor b.
    expect(await asked(1, [['a', 100, 0], ['b', 99, 0], ['c', 96, 200]], 200)).toEqual(['c']);
    // The front heard 50 ms before: no refresh, though b was heard long ago and c's answer could pass it.
    expect(await asked(1, [['b', 99, 0], ['a', 100, 150], ['c', 98, 200]], 200)).toEqual(['c']);
  });
});

describe('an endpoint whose head is unknown', () => {
  test('asked once a block time (given: 1 s) until it answers, once any head is known', async () => {
    const clock = new FakeClock(0);
    const pool = { clock, endpointNames: ['a', 'b', 'c'], breakerState: () => 'closed' };
    const pins: string[] = [];
    const h = new HeadRouting({ blockTimeMs: 1000 }, pool, (exec) => {
      pins.push(exec.pin!);
      return Promise.reject(new Error('no answer'));
    });
    const read = () => h.unfit('eth_getBalance', ['0x0', 'latest']);
    read();
    expect(pins).toEqual([]); // no head known yet: nothing to compare with
    h.observe('a', 'eth_blockNumber', [], '0x64');
    h.observe('b', 'eth_blockNumber', [], '0x64');
    read();
    expect(pins).toEqual(['c']);
    for (const t of [500, 999]) {
      await clock.advance(t - clock.now());
      read();
    }
    expect(pins).toEqual(['c']);
    await clock.advance(1);
    read();
    expect(pins).toEqual(['c', 'c']);
    h.observe('c', 'eth_blockNumber', [], '0x64');
    await clock.advance(5000);
    read();
    expect(pins).toEqual(['c', 'c']);
    h.stop();
  });
});
