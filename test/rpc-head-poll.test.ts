/**
 * Head-aware routing's moving parts on the fake clock: the block-time-based stall, the
 * `eth_blockNumber` poll (HeadRouting) over a real Pool of scripted endpoints, the
 * exclusion of unfit endpoints from single reads, and the quorum's live `avoid`.
 */
import { describe, expect, test } from 'vitest';
import type { AttemptContext } from '../src/index.js';
import { HeadRouting, checkHeadOptions } from '../src/rpc/head-poll.js';
import { HeadTracker } from '../src/rpc/heads.js';
import { readHarness } from './helpers/reads.js';
import { fail, harness, ok, start, type FakeEndpoint } from './support.js';

const hex = (n: number) => `0x${n.toString(16)}`;

describe('HeadTracker stall in block times', () => {
  test('measures the block time from the best head and stalls after stallBlocks of them', () => {
    const t = new HeadTracker({ maxLagBlocks: 10, stallBlocks: 2 });
    for (let i = 0; i <= 4; i++) {
      t.observe('a', 100 + i, i * 1000);
      if (i <= 1) t.observe('b', 100 + i, i * 1000);
    }
    expect(t.blockTimeMs).toBeCloseTo(1000, 5);
    expect(t.stallMs).toBeCloseTo(2000, 5);
    // b last advanced at 1000; a is only 3 blocks ahead (within maxLagBlocks 10).
    expect(t.reason('b', 2999)).toBeUndefined();
    expect(t.reason('b', 3000)).toBe('stalled');
    expect(t.lagging(3000)).toEqual(['b']);
    expect(t.snapshot(3000)).toEqual({ best: 104, blockTimeMs: expect.closeTo(1000, 5), endpoints: [{ name: 'a', head: 104, lagging: undefined }, { name: 'b', head: 101, lagging: 'stalled' }] });
  });

  test('first sightings of endpoints a block apart are no block time (no spurious stall)', () => {
    const t = new HeadTracker({ maxLagBlocks: 3, stallBlocks: 2 });
    t.observe('l', 95, 0); t.observe('b', 99, 1); t.observe('a', 100, 2);
    expect(t.blockTimeMs).toBeUndefined();
    expect(t.lagging(1000)).toEqual(['l']);
    t.observe('a', 101, 12_002);
    // Nor is a's first advance since: its first sighting might have been long after it got there.
    expect(t.blockTimeMs).toBeUndefined();
    t.observe('a', 102, 24_002);
    // One sample is no block time yet (three are needed: see the catch-up below).
    expect(t.blockTimeMs).toBeUndefined();
    expect(t.lagging(24_000)).toEqual(['l']); // b is 3 behind, within maxLagBlocks, and not stalled (30 s while the block time is unknown)
    t.observe('a', 103, 36_002);
    t.observe('a', 104, 48_002);
    expect(t.blockTimeMs).toBe(12_000);
  });

  test('an endpoint catching up from behind that looked at the front is no block time (seed 2026120924)', () => {
    const t = new HeadTracker({ maxLagBlocks: 1 });
    // c is heard first, twice, 5 blocks behind the tip the others report next: at the front as far as anyone knew.
    t.observe('c', 134, 39_000);
    t.observe('c', 135, 40_000);
    t.observe('a', 140, 40_000);
    t.observe('b', 140, 40_000);
    // Two seconds on, c has caught up: 7 blocks in 2 s on a 1 s chain.
    t.observe('a', 142, 42_000);
    t.observe('c', 142, 42_000);
    t.observe('b', 143, 43_000);
    t.observe('a', 144, 44_000);
    expect(t.blockTimeMs).toBeUndefined(); // two samples: c's 7 blocks in 2 s, a's 2 in 2 s
    t.observe('b', 145, 45_000);
    // Counted, the catch-up made it (2 + 2 + 2 s) / (7 + 2 + 2 blocks) = 545 ms.
    expect(t.blockTimeMs).toBe(1_000);
  });

  test('an endpoint that falls behind while no fresher head is known is no block time (seed 42480)', () => {
    const t = new HeadTracker({ maxLagBlocks: 0 });
    /** n1, the only endpoint known (at the front at each sighting), seen at these [block, ms]. */
    const sightings = (...list: [number, number][]) => list.forEach(([block, at]) => t.observe('n1', block, at));
    // One sighting every two blocks of a 12 s chain; then it falls behind, alone: 28 block times
    // later it has gained 3 blocks, and is still the front.
    sightings([100, 0], [102, 24_000], [104, 48_000], [107, 384_000], [109, 408_000]);
    // Counted, the fall behind made it (24 + 336 + 24) s / (2 + 3 + 2) blocks = 55 s.
    expect(t.blockTimeMs).toBe(12_000);
    // A slot missed now and then still counts: 2 blocks in 60 s (2.5 block times each).
    sightings([111, 432_000], [113, 492_000]);
    expect(t.blockTimeMs).toBeCloseTo((24_000 * 3 + 60_000) / 8, 5);
  });

  test('a given blockTimeMs wins over the measure; stallMs wins over both; 30 s before anything is known', () => {
    expect(new HeadTracker().stallMs).toBe(30_000);
    const t = new HeadTracker({ blockTimeMs: 12_000 });
    t.observe('a', 1, 0); t.observe('a', 2, 100);
    expect(t.blockTimeMs).toBe(12_000);
    expect(t.stallMs).toBe(36_000);
    expect(new HeadTracker({ blockTimeMs: 12_000, stallMs: 5 }).stallMs).toBe(5);
  });

  test('a block beyond the best head keeps the endpoints at the best head', () => {
    const t = new HeadTracker({ maxLagBlocks: 5 });
    t.observe('a', 10, 0); t.observe('b', 10, 0); t.observe('c', 8, 0);
    expect(t.cannotServe(11, 0)).toEqual(['c']);
    expect(t.cannotServe(10, 0)).toEqual(['c']);
    expect(t.cannotServe(8, 0)).toEqual([]);
  });

  test.each([
    [{ maxLagBlocks: -1 }, 'heads.maxLagBlocks'],
    [{ maxLagBlocks: 1.5 }, 'heads.maxLagBlocks'],
    [{ pollMs: Number.NaN }, 'heads.pollMs'],
    [{ stallBlocks: -2 }, 'heads.stallBlocks'],
    [{ pollms: 100 }, 'pollms'],
  ])('rejects %j naming %s', (o, field) => {
    expect(() => checkHeadOptions(o)).toThrow(field);
  });
});

function pollSetup(names: string[], pollMs: number) {
  const h = harness(names, { breaker: { threshold: 1, cooldownMs: 60_000 } });
  const polled: string[] = [];
  const heads: Record<string, number> = Object.fromEntries(names.map((n) => [n, 100]));
  const routing = new HeadRouting({ pollMs, maxLagBlocks: 1 }, h.pool, (exec) =>
    h.pool.execute(async (ep: FakeEndpoint, ctx: AttemptContext) => {
      polled.push(ctx.endpoint);
      const r = await h.op(ep, ctx);
      return r === ep.name ? hex(heads[ctx.endpoint]!) : r;
    }, exec),
  );
  return { h, routing, polled, heads };
}

describe('HeadRouting poll', () => {
  test('polls every endpoint each period on a background timer, learning heads without traffic', async () => {
    const { h, routing, polled, heads } = pollSetup(['a', 'b', 'c'], 1000);
    expect(polled).toEqual([]); // nothing sent from the constructor
    expect(h.clock.pendingForegroundTimers).toBe(0);
    await h.clock.advance(0);
    expect(polled).toEqual(['a', 'b', 'c']);
    heads.a = 105; heads.b = 104;
    await h.clock.advance(1000);
    expect(polled).toHaveLength(6);
    expect(routing.snapshot().best).toBe(105);
    expect(routing.unfit('eth_getBalance', ['0x0', 'latest'])).toEqual(['c']);
    expect(routing.unfit('eth_getBlockByNumber', [hex(105), false])).toEqual(['c', 'b']);
    expect(routing.unfit('eth_chainId', [])).toEqual([]);
    // c, lagging, was asked for its head besides the poll (once: the first unfit asked it).
    await h.clock.advance(0);
    expect(polled).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'c']);
    expect(h.clock.pendingForegroundTimers).toBe(0);
    routing.stop();
    await h.clock.advance(10_000);
    expect(polled).toHaveLength(7);
    expect(h.clock.pendingTimers).toBe(0);
  });

  test('skips an endpoint whose breaker is open (and names it unfit), and one whose poll is still out', async () => {
    const { h, routing, polled } = pollSetup(['a', 'b', 'c'], 1000);
    h.eps.b!.fallback = fail('transient');
    h.eps.c!.fallback = { hang: true };
    await h.clock.advance(0);
    expect(polled).toEqual(['a', 'b', 'c']);
    expect(h.pool.breakerState('b')).toMatchObject({ state: 'open' });
    await h.clock.advance(1000);
    await h.clock.advance(1000);
    expect(polled).toEqual(['a', 'b', 'c', 'a', 'a']);
    // Not even asked of the pool: no pinned call refused for the open breaker.
    expect(h.events.filter((e) => e.type === 'call-failed' && e.error.code === 'PIN_UNAVAILABLE')).toEqual([]);
    expect(routing.unfit('eth_chainId', [])).toEqual(['b']);
    routing.stop();
  });

  test("the pool's close ends the poll at its next tick", async () => {
    const { h, polled } = pollSetup(['a'], 1000);
    await h.clock.advance(0);
    await h.pool.close();
    await h.clock.advance(1000);
    await h.clock.advance(5000);
    expect(polled).toEqual(['a']);
    expect(h.clock.pendingTimers).toBe(0);
  });
});

function readSetup(names: string[], unfit: () => readonly string[]) {
  const { h, reads, sent, send } = readHarness(names, { quorum: { stallMs: Number.POSITIVE_INFINITY } }, { strategy: 'ordered' }, () => unfit());
  return { h, sent, read: (quorum?: number) => reads.request('eth_blockNumber', [], {}, quorum, send) };
}

describe('unfit endpoints in reads', () => {
  test('a single read goes to them only when no other can (avoid, at each selection)', async () => {
    let unfit: string[] = ['a'];
    const { h, sent, read } = readSetup(['a', 'b'], () => unfit);
    const r1 = start(read());
    await h.clock.advance(0);
    expect(r1.value).toBe('b');
    unfit = ['a', 'b'];
    const r2 = start(read());
    await h.clock.advance(0);
    expect(r2.value).toBe('a');
    expect(sent).toEqual(['b', 'a']);
  });

  test('a quorum asks them last, deciding afresh at each leg', async () => {
    let unfit: string[] = ['a', 'b'];
    const { h, sent, read } = readSetup(['a', 'b', 'c', 'd'], () => unfit);
    for (const n of ['a', 'b', 'c', 'd']) h.eps[n]!.fallback = ok('0x10');
    h.eps.c!.fallback = ok('0x12');
    const r = start(read(2));
    await h.clock.advance(0);
    // c and d disagree (two blocks apart); the third leg goes to an avoided endpoint only because none is left.
    expect(r.value).toBe('0x10');
    expect(sent).toEqual(['c', 'd', 'a']);
    sent.length = 0;
    unfit = [];
    h.eps.c!.fallback = ok('0x10');
    const r2 = start(read(2));
    await h.clock.advance(0);
    expect(r2.value).toBe('0x10');
    expect(sent).toEqual(['a', 'b']);
  });

  test('the predicate is live: an endpoint that becomes unfit mid-read is not asked', async () => {
    let unfit: string[] = [];
    const { h, sent, read } = readSetup(['a', 'b', 'c', 'd'], () => unfit);
    h.eps.a!.fallback = ok('0x1');
    h.eps.b!.fallback = { ok: '0x3', delayMs: 10 };
    h.eps.c!.fallback = ok('0x3');
    h.eps.d!.fallback = ok('0x3');
    const r = start(read(2));
    await h.clock.advance(0);
    expect(sent).toEqual(['a', 'b']);
    unfit = ['c'];
    await h.clock.advance(10);
    expect(r.value).toBe('0x3');
    expect(sent).toEqual(['a', 'b', 'd']);
  });
});
