/**
 * Head-aware routing (src/rpc/heads.ts, head-poll.ts, through RpcReads as the adapters use it)
 * over generated chains on the FakeClock: a block time, nodes that follow the tip, fall behind,
 * stall and catch up, `setEndpoints` removing and bringing back a node, and a stream of reads
 * of the kinds an application mixes (balances at latest, block numbers, the latest block, a
 * backfill of old blocks in order), with and without a poll, with the block time given or
 * measured.
 *
 * Checked:
 * 1. no read fails (every node answers; what routing leaves out is never an error: no
 *    INVALID_OPTIONS naming an endpoint that left the pool);
 * 2. `heads()` names only endpoints of the pool;
 * 3. a node that has caught up comes back: once it has followed the tip for a recovery bound
 *    (a poll period, or the question a lagging node is asked once a block time, plus a few
 *    blocks), routing lets it take at least 35 % of the reads of latest to the end (one node's
 *    fresh answer making the others look behind until the next poll was found here: 18 %);
 * 4. the measured block time, once the front has advanced ten times, is within a factor of
 *    three of the chain's (a backfill's old blocks are no advances of anyone's head);
 * 5. routing's own questions (beyond its poll) come to about one per node per block time at most.
 *
 * One node in four runs gives one wrong head (2^30 blocks ahead) once: before the forty-second
 * session it kept that head, and the others stayed behind it for good (check 3 fails).
 *
 * Seeded: `FC_SEED` (with `FC_PATH`) replays a failure, `FC_HEADS_RUNS` sets the runs.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type AttemptContext, type ExecuteOptions } from '../../src/index.js';
import { HeadRouting } from '../../src/rpc/head-poll.js';
import { RpcReads } from '../../src/rpc/reads.js';
import { FakeClock } from '../../src/testing/index.js';
import { seeded } from '../helpers/prng.js';
import { checkSeeded } from './run.js';

const RUNS = Number(process.env['FC_HEADS_RUNS'] ?? 300);
const SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 2026120529;
const T0 = 1_000_000;
const BASE = 20_000_000;

/** What a node does from `from` (ms into the run) to `to`; outside its phases it follows the tip. */
type Phase = { readonly from: number; readonly to: number } & ({ readonly kind: 'behind'; readonly blocks: number } | { readonly kind: 'stall' });

interface Scenario {
  readonly blockMs: number;
  readonly nodes: readonly { readonly delay: 0 | 1; readonly phases: readonly Phase[] }[];
  readonly maxLagBlocks: number;
  /** In block times; 0: no poll. */
  readonly pollBlocks: number;
  readonly giveBlockTime: boolean;
  readonly stallBlocks: number | undefined;
  /** Node 0 leaves the pool at this time and comes back at `back`. */
  readonly removal: { readonly at: number; readonly back: number } | undefined;
  /** Per 100 reads: balances, block numbers, latest blocks, old blocks (the rest). */
  readonly mix: readonly [number, number, number];
  /** Reads per block time. */
  readonly rate: number;
  readonly seed: number;
  /** A node whose first head from `at` on is wrong: 2^30 blocks ahead (an overflow, another chain behind its load balancer). */
  readonly wrong: { readonly node: number; readonly at: number } | undefined;
}

const phaseArb = (blockMs: number): fc.Arbitrary<Phase> =>
  fc
    .record({
      start: fc.integer({ min: 0, max: 40 }),
      len: fc.integer({ min: 2, max: 30 }),
      kind: fc.constantFrom('behind' as const, 'stall' as const),
      blocks: fc.integer({ min: 1, max: 40 }),
    })
    .map(({ start, len, kind, blocks }) => {
      const from = start * blockMs;
      const to = from + len * blockMs;
      return kind === 'stall' ? { from, to, kind } : { from, to, kind, blocks };
    });

const scenarioArb: fc.Arbitrary<Scenario> = fc.constantFrom(250, 1000, 2000, 12_000).chain((blockMs) =>
  fc.record({
    blockMs: fc.constant(blockMs),
    nodes: fc.array(fc.record({ delay: fc.constantFrom(0 as const, 0 as const, 1 as const), phases: fc.array(phaseArb(blockMs), { maxLength: 2 }) }), { minLength: 2, maxLength: 5 }),
    maxLagBlocks: fc.integer({ min: 0, max: 4 }),
    pollBlocks: fc.constantFrom(0, 0, 1, 3, 8),
    giveBlockTime: fc.boolean(),
    stallBlocks: fc.option(fc.constantFrom(1.5, 2, 3, 5), { nil: undefined }),
    removal: fc.option(
      fc.record({ at: fc.integer({ min: 0, max: 40 }), len: fc.integer({ min: 1, max: 30 }) }).map(({ at, len }) => ({ at: at * blockMs, back: (at + len) * blockMs })),
      { nil: undefined },
    ),
    // One run in eight reads only what reveals no head (balances, old blocks): routing then learns heads from its own questions alone.
    mix: fc.oneof(
      { weight: 7, arbitrary: fc.tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 })).filter(([a, b, c]) => a + b + c <= 100) },
      { weight: 1, arbitrary: fc.constant<[number, number, number]>([60, 0, 0]) },
    ),
    rate: fc.constantFrom(0.5, 2, 6),
    seed: fc.nat(),
    wrong: fc.option(fc.record({ node: fc.nat({ max: 4 }), at: fc.integer({ min: 0, max: 40 }).map((b) => b * blockMs) }), { nil: undefined, freq: 3 }),
  }),
);

const hex = (n: number): string => `0x${n.toString(16)}`;

async function simulate(sc: Scenario) {
  const violations: string[] = [];
  const clock = new FakeClock(T0);
  const B = sc.blockMs;
  const tip = (t: number): number => BASE + Math.floor(t / B);
  const names = sc.nodes.map((_n, i) => `n${i}`);
  // Each node's head: the tip (less its delay) but where a phase says otherwise. A stalled node
  // keeps the head it had when the stall began; a node behind is `blocks` + delay below the tip.
  const headOf = (i: number, t: number): number => {
    const node = sc.nodes[i]!;
    for (const p of node.phases) {
      if (t < p.from || t >= p.to) continue;
      return p.kind === 'stall' ? tip(p.from) - node.delay : tip(t) - node.delay - p.blocks;
    }
    return tip(t) - node.delay;
  };
  /** From when node i follows the tip to the end (its last phase's end). */
  const followsFrom = (i: number): number => Math.max(0, ...sc.nodes[i]!.phases.map((p) => p.to));
  let backfill = BASE - 1_000_000;
  const wrong = sc.wrong === undefined ? undefined : { node: sc.wrong.node % sc.nodes.length, at: sc.wrong.at };
  let wrongGiven = false;
  const answer = (i: number, method: string, params: readonly unknown[], t: number): unknown => {
    let head = headOf(i, t);
    if (wrong !== undefined && !wrongGiven && i === wrong.node && t >= wrong.at && (method === 'eth_blockNumber' || params[0] === 'latest')) {
      wrongGiven = true;
      head = BASE + 2 ** 30;
    }
    if (method === 'eth_blockNumber') return hex(head);
    if (method === 'eth_getBalance') return '0x1';
    const tag = params[0];
    const n = tag === 'latest' ? head : Number.parseInt(String(tag), 16);
    return n > head ? null : { number: hex(n), hash: `0x${n.toString(16).padStart(64, '0')}` };
  };
  const endpoint = (i: number) => ({ name: names[i]!, conn: i });
  /** Questions routing asked (`eth_blockNumber` pinned to one node): its poll's, and those it asks lagging nodes and the front. */
  let asks = 0;
  const pool = new Pool<number>({ endpoints: sc.nodes.map((_n, i) => endpoint(i)), clock, strategy: 'round-robin', classify: () => 'transient', random: seeded(sc.seed ^ 0x2545f491) });
  const routing = new HeadRouting(
    {
      maxLagBlocks: sc.maxLagBlocks,
      ...(sc.pollBlocks > 0 ? { pollMs: sc.pollBlocks * B } : {}),
      ...(sc.giveBlockTime ? { blockTimeMs: B } : {}),
      ...(sc.stallBlocks !== undefined ? { stallBlocks: sc.stallBlocks } : {}),
    },
    pool,
    (exec) => (asks++, pool.execute((i: number) => Promise.resolve(answer(i, 'eth_blockNumber', [], clock.now() - T0)), exec)),
  );
  const reads = new RpcReads({}, pool, undefined, (m, p) => routing.unfit(m, p));
  // Reads of latest, per node: when it served one, and when routing would let it.
  const latestServed: number[][] = sc.nodes.map(() => []);
  const latestFit: number[][] = sc.nodes.map(() => []);
  const recover = Math.max(100, sc.giveBlockTime ? B : 10_000) + sc.pollBlocks * B + 4 * B;
  // A wrong head holds until its node is asked again: at its poll, or once a stall time (at most
  // `stallBlocks` block times, 30 s while the block time is unknown) as the front while others lag.
  const wrongBound = wrong === undefined ? 0 : wrong.at + Math.max(30_000, (sc.stallBlocks ?? 3) * B) + 2 * B;
  const lastPhase = Math.max(0, ...sc.nodes.map((_n, i) => followsFrom(i)), sc.removal?.back ?? 0, wrongBound);
  const end = lastPhase + 3 * recover;
  const gap = Math.max(10, Math.round(B / sc.rate));
  const rnd = seeded(sc.seed);
  let present = [...names];
  for (let t = 0; t < end; t += gap) {
    const now = clock.now() - T0;
    if (sc.removal !== undefined) {
      const out = now >= sc.removal.at && now < sc.removal.back;
      if (out && present.includes('n0')) {
        present = names.slice(1);
        pool.setEndpoints(present.map((n) => endpoint(names.indexOf(n))));
      } else if (!out && !present.includes('n0')) {
        present = [...names];
        pool.setEndpoints(names.map((_n, i) => endpoint(i)));
      }
    }
    const r = rnd() * 100;
    const [bal, num, lat] = sc.mix;
    const [method, params]: [string, unknown[]] =
      r < bal ? ['eth_getBalance', ['0x0', 'latest']] : r < bal + num ? ['eth_blockNumber', []] : r < bal + num + lat ? ['eth_getBlockByNumber', ['latest', false]] : ['eth_getBlockByNumber', [hex(backfill++), false]];
    const needsLatest = needsLatestOf(method, params);
    const send = (exec: ExecuteOptions) =>
      pool.execute(async (i: number, ctx: AttemptContext) => {
        const result = answer(i, method, params, clock.now() - T0);
        routing.observe(ctx.endpoint, method, params, result);
        if (needsLatest) latestServed[i]!.push(clock.now() - T0);
        return result;
      }, exec);
    if (needsLatestOf(method, params)) {
      const unfit = routing.unfit(method, params);
      for (const n of present) if (!unfit.includes(n)) latestFit[names.indexOf(n)]!.push(now);
    }
    try {
      await reads.request(method, params, {}, undefined, send);
    } catch (e) {
      violations.push(`${method} ${JSON.stringify(params)} at ${now} ms failed: ${isPoolError(e) ? `${e.code} ${e.message}` : String(e)}`);
      if (violations.length > 3) break;
    }
    const listed = routing.snapshot().endpoints.map((e) => e.name);
    const stray = listed.filter((n) => !present.includes(n));
    if (stray.length > 0) violations.push(`heads() at ${now} ms lists ${stray.join(', ')}, not in the pool`);
    await clock.advance(gap);
  }
  // 3. Back once caught up.
  for (let i = 0; i < names.length; i++) {
    const from = Math.max(followsFrom(i), i === 0 ? (sc.removal?.back ?? 0) : 0, wrongBound) + recover;
    if (from >= end - recover) continue;
    // A node whose delay puts it more than maxLagBlocks behind the front is behind for good.
    if (sc.nodes[i]!.delay - Math.min(...sc.nodes.map((n) => n.delay)) > sc.maxLagBlocks) continue;
    // Only where reads of latest were many enough for round robin to reach every node.
    const after = latestServed.reduce((sum, served) => sum + served.filter((t) => t >= from).length, 0);
    if (after < 4 * names.length) continue;
    // Routing lets it take reads of latest again (which one takes a read is round robin's), and
    // not only now and then: in at least 35 % of them (the least seen over 7,000 runs: 44 %, with
    // maxLagBlocks 0 and one read per two blocks, each revealing a head the others are then a
    // block behind until asked; 18 % when a lagging node was asked only at the next poll; 28-33 %
    // in 3,000-run sweeps, before the front was asked with a lagging node and a head heard before
    // the front's last advance was given a block of doubt: thirty-first session).
    const fit = latestFit[i]!.filter((t) => t >= from).length;
    if (fit < 0.35 * after) {
      const snap = routing.snapshot().endpoints.find((e) => e.name === names[i]);
      violations.push(`n${i} follows the tip from ${followsFrom(i)} ms, yet routing let it take only ${fit} of the ${after} reads of latest from ${from} ms to the end (${end} ms); heads(): ${JSON.stringify(snap)}, best ${routing.snapshot().best}, tip ${tip(end)}`);
    }
  }
  // 4. The measured block time.
  const measured = routing.snapshot().blockTimeMs;
  const advances = Math.floor(end / B);
  if (!sc.giveBlockTime && advances >= 10 && measured !== undefined && (measured < B / 3 || measured > 3 * B)) {
    violations.push(`block time measured ${measured.toFixed(1)} ms, the chain's is ${B} ms`);
  }
  // 5. What the questions cost: beyond the poll's, at most about one per node per block time (the
  // most seen over 3,000 runs: 0.96 before the thirty-second session asked every node not
  // lagging with the front, 0.89 after); a question per node at every read would be up to 6.
  const polls = sc.pollBlocks > 0 ? names.length * Math.ceil(end / (sc.pollBlocks * B)) : 0;
  const allowed = 1.25 * names.length * (end / B) + 2 * names.length;
  if (asks - polls > allowed) violations.push(`routing asked ${asks - polls} questions beyond its poll over ${end / B} block times with ${names.length} nodes (at most ${allowed})`);
  routing.stop();
  await pool.close();
  return { violations, wrongGiven };
}

const needsLatestOf = (method: string, params: readonly unknown[]): boolean => method !== 'eth_getBlockByNumber' || params[0] === 'latest';

describe('head-aware routing over generated chains', () => {
  test('no read fails, heads() names the pool, a node that caught up comes back, the block time is measured right', async () => {
    let wrongs = 0;
    await checkSeeded('heads', scenarioArb, simulate, { seed: SEED, runs: RUNS, seen: (o) => void (wrongs += o.wrongGiven ? 1 : 0) });
    // The generator reaches wrong heads.
    expect(wrongs).toBeGreaterThan(RUNS / 10);
  }, 300_000);
});
