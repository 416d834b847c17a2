/**
 * Quorum reads of latest under head-aware routing (viem's `poolTransport` and the ethers
 * provider, with `heads` and a `quorum`), over generated chains on the FakeClock: 3-7 nodes,
 * some hung (a balance never comes back) or failing, some falling behind together for a while
 * (their heads stop, then jump back to the tip), a poll; quorums of 2 or 3, stall times and
 * attempt timeouts drawn apart (a leg's retry may come before or after its stall), three
 * strategies; reads at random times, many just before an outage.
 *
 * A node answers a balance with how far behind the tip it is when asked (so every node at the
 * tip agrees, and nodes equally far behind agree with each other). Checked:
 * 1. every read settles by its deadline;
 * 2. when at least `need` nodes answer, stay at the tip for the whole read and were known fit
 *    by routing when it started, a read that resolves resolves with an answer at most
 *    `maxLagBlocks` + 1 blocks behind. Before the forty-seventh session a leg's retry after a
 *    hung attempt went to any node the leg had not excluded when it started: two legs retried
 *    onto two nodes that fell behind meanwhile agreed on their stale answer (and, with
 *    `maxAttempts: 2`, on the legs' last attempts, which the refusal spared);
 * 3. with such nodes, no read fails;
 * 4. a read resolves with an answer distinct nodes weighing `need` gave: a leg's retry
 *    on a node another leg holds is refused before anything is sent;
 * 5. a quorum not met before the read's deadline has asked every node whose
 *    breaker never opened (the nodes weighing `need` in all). Before the forty-seventh session
 *    a leg that left out the nodes to avoid, and found the others open, ended the read at once;
 *    and with permits, the FakeClock's 40 microtask turns after each timer let a leg's
 *    collision reach the pool after its attempt had timed out (now 100).
 * 6. (With `setEndpoints` in half the runs: a node out for a while, or given a new connection.)
 *    A read that started after a swap never reaches a node out of the set, nor a connection
 *    replaced. Nodes swapped during a read are left out of 2, 3 and 5 for it. Before the
 *    forty-eighth session, a node back in the set, its head not known yet, could alone (weight 2)
 *    make a read's quorum with its stale answer (seed 42706).
 * 7. (With `close({ abortAfterMs })` mid-run in a fifth of the runs.) It resolves by
 *    `abortAfterMs` (by the reads' deadline without one); every read begun before it has settled
 *    by then; a read after it fails `CLOSED` at once (it failed `QUORUM_NOT_MET`, its legs refused
 *    by the closed pool); once the swaps are over, no timer is left on the clock.
 * 8. (Through ethers, a node in every read's `exclude` in half the runs.) No read reaches it
 *    while its name keeps that node; it is left out of 2, 3 and 5.
 *
 * Seeded: `FC_SEED` (with `FC_PATH`) replays a failure, `FC_QUORUM_HEADS_RUNS` sets the runs.
 */
import fc from 'fast-check';
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { isPoolError, type PoolEvent } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { poolTransport } from '../../src/viem/index.js';
import { PooledJsonRpcProvider } from '../../src/ethers/index.js';
import type { HeadSnapshot } from '../../src/rpc/heads.js';
import { seeded } from '../helpers/prng.js';
import { checkSeeded } from './run.js';

const RUNS = Number(process.env['FC_QUORUM_HEADS_RUNS'] ?? 300);
const SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 2026120747;
const T0 = 1_000_000;
const BASE = 20_000_000;
const DEADLINE_MS = 6000;
/** The address read k asks for: each node's answers say which read they were for. */
const address = (k: number): `0x${string}` => `0x${k.toString(16).padStart(40, '0')}`;

interface NodeSpec {
  readonly kind: 'ok' | 'hung' | 'failing';
  /** A balance's answer comes after this long. */
  readonly delayMs: number;
  /** The outage it takes part in (an index into the scenario's, modulo their count), if any. */
  readonly outage: number | undefined;
}

interface Scenario {
  readonly blockMs: number;
  readonly nodes: readonly NodeSpec[];
  /** While an outage lasts, the heads of its nodes stop (all at the same block), then they are back at the tip. */
  readonly outages: readonly { readonly at: number; readonly forMs: number }[];
  readonly maxLagBlocks: number;
  readonly need: number;
  readonly stallMs: number;
  readonly attemptTimeoutMs: number;
  readonly strategy: 'ordered' | 'round-robin' | undefined;
  /** When each read starts, in ms into the run (after the first poll): many just before an outage. */
  readonly reads: readonly number[];
  /** The pool's random source (backoff jitter): seeded, so a run replays exactly. */
  readonly seed: number;
  /** viem's `poolTransport` over `custom` nodes, or the ethers provider over a `fetch` routing each URL to its node. */
  readonly adapter: 'viem' | 'ethers';
  /** The pool's `maxAttempts`. @default every endpoint once */
  readonly maxAttempts?: number | undefined;
  /** Failures in a row that open a node's breaker. @default the pool's */
  readonly breakerThreshold?: number | undefined;
  /** Vote weights by node (`undefined`: 1 each). */
  readonly weights?: readonly number[] | undefined;
  /** The pool's permits: legs (and head polls) queue for them. Properties 2 and 3 are then not checked (routing learns late, reads wait). */
  readonly maxConcurrentCalls?: number | undefined;
  /**
   * `setEndpoints` during the run: a node taken out for `forMs`, or given a new connection (a new
   * `custom` transport, another URL) to the same node. Never the last node present.
   */
  readonly swaps?: readonly Swap[] | undefined;
  /** Through ethers, every read's `exclude` names this node (while it is in the set). */
  readonly exclude?: number | undefined;
  /** `close({ abortAfterMs })` on the transport or provider at `at` ms, while reads run. */
  readonly closing?: { readonly at: number; readonly abortAfterMs: number | undefined } | undefined;
}

interface Swap {
  readonly at: number;
  readonly node: number;
  readonly kind: 'remove' | 'renew';
  readonly forMs: number;
}

const nodeArb: fc.Arbitrary<NodeSpec> = fc.record({
  kind: fc.oneof({ weight: 4, arbitrary: fc.constant('ok' as const) }, { weight: 3, arbitrary: fc.constant('hung' as const) }, { weight: 1, arbitrary: fc.constant('failing' as const) }),
  delayMs: fc.integer({ min: 0, max: 30 }),
  outage: fc.option(fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1) }), { nil: undefined, freq: 3 }),
});

const rank = (n: NodeSpec): number => (n.kind === 'hung' ? 0 : n.outage !== undefined ? 1 : 2);

const generalArb: fc.Arbitrary<Scenario> = fc
  .record({
    blockMs: fc.constantFrom(250, 500, 1000),
    nodes: fc.array(nodeArb, { minLength: 3, maxLength: 7 }),
    outages: fc.array(fc.record({ at: fc.integer({ min: 200, max: 8000 }), forMs: fc.integer({ min: 500, max: 6000 }) }), { minLength: 0, maxLength: 2 }),
    maxLagBlocks: fc.integer({ min: 0, max: 2 }),
    need: fc.integer({ min: 2, max: 3 }),
    stallMs: fc.constantFrom(150, 400, 1500, Infinity),
    attemptTimeoutMs: fc.constantFrom(200, 600, 1000),
    strategy: fc.constantFrom('ordered' as const, 'round-robin' as const, undefined),
    reads: fc.array(fc.record({ near: fc.boolean(), off: fc.integer({ min: 0, max: 800 }), at: fc.integer({ min: 1, max: 9000 }) }), { minLength: 1, maxLength: 8 }),
    arranged: fc.boolean(),
    seed: fc.integer(),
    adapter: fc.constantFrom('viem' as const, 'ethers' as const),
    maxAttempts: fc.constantFrom(undefined, 1, 2, 3),
    breakerThreshold: fc.constantFrom(undefined, 1, 2),
    weights: fc.option(fc.array(fc.constantFrom(0, 1, 1, 2), { minLength: 7, maxLength: 7 }), { nil: undefined, freq: 3 }),
    maxConcurrentCalls: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) }),
    swaps: fc.option(
      fc.array(fc.record({ at: fc.integer({ min: 1, max: 9000 }), node: fc.nat(6), kind: fc.constantFrom('remove' as const, 'renew' as const), forMs: fc.integer({ min: 200, max: 4000 }) }), { minLength: 1, maxLength: 3 }),
      { nil: undefined, freq: 2 },
    ),
    exclude: fc.option(fc.nat(6), { nil: undefined, freq: 2 }),
    closing: fc.oneof(
      { weight: 4, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.record({ at: fc.integer({ min: 1, max: 9000 }), abortAfterMs: fc.constantFrom(undefined, 0, 1, 50, 700, Infinity) }) },
    ),
  })
  .map(({ arranged, ...sc }) => ({
    ...sc,
    swaps: sc.swaps?.map((w) => ({ ...w, node: w.node % sc.nodes.length })),
    exclude: sc.exclude === undefined || sc.adapter !== 'ethers' ? undefined : sc.exclude % sc.nodes.length,
    // Half the runs put the hung nodes first, then those in an outage: the first legs hang, and
    // their retries meet nodes fallen behind before the nodes at the tip.
    nodes: arranged ? [...sc.nodes].sort((a, b) => rank(a) - rank(b)) : sc.nodes,
    need: Math.min(sc.need, sc.nodes.length - 1),
    reads: sc.reads.map((r, k) => (r.near && sc.outages.length > 0 ? Math.max(1, sc.outages[k % sc.outages.length]!.at - r.off) : r.at)).sort((a, b) => a - b),
  }));

/**
 * The family the forty-seventh session's fix is for, drawn on purpose (the general draw meets it
 * about once in 9,000 runs): the first legs hang, nodes fall behind together after the read
 * starts, and the legs' retries (before their stall) meet them before the nodes at the tip.
 */
const retryArb: fc.Arbitrary<Scenario> = fc
  .record({
    need: fc.integer({ min: 2, max: 3 }),
    blockMs: fc.constantFrom(250, 500),
    maxLagBlocks: fc.integer({ min: 0, max: 1 }),
    attemptTimeoutMs: fc.constantFrom(600, 1000),
    extraTip: fc.integer({ min: 0, max: 1 }),
    off: fc.integer({ min: 0, max: 300 }),
    forMs: fc.integer({ min: 2000, max: 5000 }),
    delays: fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 10, maxLength: 10 }),
    strategy: fc.constantFrom('ordered' as const, 'round-robin' as const),
    seed: fc.integer(),
    adapter: fc.constantFrom('viem' as const, 'ethers' as const),
    maxAttempts: fc.constantFrom(undefined, 2, 3),
  })
  .map((p) => {
    const kinds: NodeSpec['kind'][] = [];
    const outage: (number | undefined)[] = [];
    for (let i = 0; i < p.need; i++) (kinds.push('hung'), outage.push(undefined));
    for (let i = 0; i < p.need; i++) (kinds.push('ok'), outage.push(0));
    for (let i = 0; i < p.need + p.extraTip; i++) (kinds.push('ok'), outage.push(undefined));
    return {
      blockMs: p.blockMs,
      nodes: kinds.map((kind, i) => ({ kind, delayMs: p.delays[i]!, outage: outage[i] })),
      outages: [{ at: 100 + p.off, forMs: p.forMs }],
      maxLagBlocks: p.maxLagBlocks,
      need: p.need,
      stallMs: 1500,
      attemptTimeoutMs: p.attemptTimeoutMs,
      strategy: p.strategy,
      reads: [100],
      seed: p.seed,
      adapter: p.adapter,
      maxAttempts: p.maxAttempts,
    };
  });

const scenarioArb: fc.Arbitrary<Scenario> = fc.oneof({ weight: 3, arbitrary: generalArb }, { weight: 1, arbitrary: retryArb });

interface Outcome {
  readonly violations: string[];
  readonly resolved: number;
  /** Reads checked by property 2. */
  readonly checked: number;
  readonly staleAnswers: number;
  /** Reads that settled with a swap during them (a node taken out, back, or renewed). */
  readonly swappedReads: number;
  /** Reads that close() cut short, or that began after it. */
  readonly closedReads: number;
  readonly adapter: Scenario['adapter'];
}

async function simulate(sc: Scenario): Promise<Outcome> {
  const clock = new FakeClock(T0);
  const since = (): number => clock.now() - T0;
  const tip = (t: number): number => BASE + Math.floor(t / sc.blockMs);
  const outageOf = (i: number) => {
    const k = sc.nodes[i]!.outage;
    return k === undefined || sc.outages.length === 0 ? undefined : sc.outages[k % sc.outages.length];
  };
  const head = (i: number, t: number): number => {
    const f = outageOf(i);
    return f !== undefined && t >= f.at && t < f.at + f.forMs ? tip(f.at) : tip(t);
  };
  const answers: { read: number; node: number; lag: number }[] = [];
  /** Nodes whose breaker has opened: the pool may refuse them, and a quorum end without them. */
  const opened = new Set<number>();
  /** `read:node` for every balance request a node received. */
  const asked = new Set<string>();
  const weigh = (nodes: readonly number[]): number => nodes.reduce((w, i) => w + (sc.weights?.[i] ?? 1), 0);
  /** Node i's answer to a request, as its JSON-RPC result (a failing node throws `{ code, message }`). */
  /** Balance requests that reached a node out of the set, or through a connection `setEndpoints` replaced. */
  const misrouted: { read: number; node: number; at: number; why: string }[] = [];
  const answer = async (i: number, method: string, params: unknown, v: number): Promise<string> => {
    const t = since();
    if (method === 'eth_blockNumber') return `0x${head(i, t).toString(16)}`;
    if (method === 'eth_chainId') return '0x1';
    if (method !== 'eth_getBalance') throw Object.assign(new Error(`unexpected ${method}`), { code: -32601 });
    const spec = sc.nodes[i]!;
    asked.add(`${Number.parseInt((params as string[])[0]!, 16)}:${i}`);
    if (out[i]! > 0 || v !== version[i]) misrouted.push({ read: Number.parseInt((params as string[])[0]!, 16), node: i, at: t, why: out[i]! > 0 ? 'out of the set' : `connection ${v} replaced by ${version[i]}` });
    if (spec.kind === 'hung') return new Promise<never>(() => {});
    if (spec.kind === 'failing') throw Object.assign(new Error('internal error'), { code: -32603 });
    const lag = tip(t) - head(i, t);
    await new Promise<void>((r) => clock.setTimeout(r, spec.delayMs));
    answers.push({ read: Number.parseInt((params as string[])[0]!, 16), node: i, lag });
    return `0x${(1000 + lag).toString(16)}`;
  };
  const common = {
    heads: { maxLagBlocks: sc.maxLagBlocks, blockTimeMs: sc.blockMs, pollMs: sc.blockMs },
    quorum: { methods: { eth_getBalance: sc.need }, stallMs: sc.stallMs, ...(sc.weights === undefined ? {} : { weights: Object.fromEntries(sc.weights.map((w, i) => [`n${i}`, w])) }) },
    attemptTimeoutMs: sc.attemptTimeoutMs,
    deadlineMs: DEADLINE_MS,
    ...(sc.strategy === undefined ? {} : { strategy: sc.strategy }),
    clock,
    random: seeded(sc.seed ^ 0x27d4eb2f),
    ...(sc.maxAttempts === undefined ? {} : { maxAttempts: sc.maxAttempts }),
    ...(sc.breakerThreshold === undefined ? {} : { breaker: { threshold: sc.breakerThreshold, cooldownMs: 2000 } }),
    ...(sc.maxConcurrentCalls === undefined ? {} : { maxConcurrentCalls: sc.maxConcurrentCalls }),
    onEvent: (e: PoolEvent) => {
      if (e.type === 'breaker-opened') opened.add(Number(e.endpoint.slice(1)));
    },
  };
  let read: (k: number) => Promise<unknown>;
  let heads: () => HeadSnapshot | undefined;
  let close: (options?: { abortAfterMs?: number }) => Promise<void>;
  let swap: (present: readonly number[]) => void;
  /** Each node's connection: a swap 'renew' makes the next. */
  const version = sc.nodes.map(() => 0);
  if (sc.adapter === 'viem') {
    const made = new Map<string, ReturnType<typeof custom>>();
    const endpoint = (i: number) => {
      const v = version[i]!;
      const key = `${i}:${v}`;
      if (!made.has(key)) made.set(key, custom({ request: ({ method, params }: { method: string; params?: unknown }) => answer(i, method, params, v) }));
      return { name: `n${i}`, transport: made.get(key)! };
    };
    const transport = poolTransport({ ...common, endpoints: sc.nodes.map((_, i) => endpoint(i)) });
    const client = createClient({ transport });
    read = (k) => client.request({ method: 'eth_getBalance', params: [address(k), 'latest'] });
    heads = () => transport.heads();
    close = (o) => transport.close(o);
    swap = (present) => transport.setEndpoints(present.map(endpoint));
  } else {
    const url = (i: number): string => `https://n${i}.example/rpc/${version[i]}`;
    const fetch = (to: string, init: { body: string }) => {
      const [, i, v] = /^https:\/\/n(\d+)\.example\/rpc\/(\d+)$/.exec(to)!.map(Number) as [number, number, number];
      const body = JSON.parse(init.body) as { id: unknown; method: string; params: unknown };
      const reply = (o: object) => ({ status: 200, ok: true, headers: new Headers(), text: async () => JSON.stringify({ jsonrpc: '2.0', id: body.id, ...o }) });
      return answer(i, body.method, body.params, v).then(
        (result) => reply({ result }),
        (e: { code: number; message: string }) => reply({ error: { code: e.code, message: e.message } }),
      );
    };
    const provider = new PooledJsonRpcProvider({ ...common, network: 1, fetch, endpoints: sc.nodes.map((_, i) => ({ name: `n${i}`, url: url(i) })) });
    read = (k) => {
      const ex = sc.exclude;
      // Excluded per read (only a name of the pool: an unknown name is INVALID_OPTIONS).
      if (ex !== undefined && out[ex] === 0) excluded.add(k);
      return provider.sendWith('eth_getBalance', [address(k), 'latest'], excluded.has(k) ? { exclude: [`n${ex}`] } : {});
    };
    heads = () => provider.heads();
    close = (o) => provider.close(o);
    swap = (present) => provider.setEndpoints(present.map((i) => ({ name: `n${i}`, url: url(i) })));
  }
  // Swaps, on the clock: a node out (never the last present), back after `forMs`; a node's new connection.
  const out = sc.nodes.map(() => 0);
  /** When each node was out or renewed: a node swapped during a read is left out of the read's checks. */
  const swapped: { node: number; from: number; to: number }[] = [];
  const apply = () => swap(sc.nodes.flatMap((_, i) => (out[i] === 0 ? [i] : [])));
  for (const w of sc.swaps ?? []) {
    clock.setTimeout(() => {
      if (w.kind === 'renew') {
        version[w.node]!++;
        swapped.push({ node: w.node, from: since(), to: since() });
        apply();
        return;
      }
      if (out.filter((n) => n === 0).length <= 1 && out[w.node] === 0) return;
      out[w.node]!++;
      const entry = { node: w.node, from: since(), to: Infinity };
      swapped.push(entry);
      apply();
      clock.setTimeout(() => {
        out[w.node]!--;
        entry.to = since();
        apply();
      }, w.forMs);
    }, w.at);
  }
  const swappedIn = (i: number, from: number, to: number): boolean => swapped.some((w) => w.node === i && w.from <= to && w.to >= from);
  const violations: string[] = [];
  /** Reads whose `exclude` named `sc.exclude`. */
  const excluded = new Set<number>();
  /** When `close()` was called, and when it resolved. */
  let closedAt: number | undefined;
  let closeEnd: number | undefined;
  if (sc.closing !== undefined) {
    const { at, abortAfterMs } = sc.closing;
    clock.setTimeout(() => {
      closedAt = since();
      close(abortAfterMs === undefined ? undefined : { abortAfterMs }).then(
        () => (closeEnd = since()),
        (e: unknown) => violations.push(`close() rejected: ${String(e)}`),
      );
    }, at);
  }
  let resolved = 0;
  let checked = 0;
  let staleAnswers = 0;
  let swappedReads = 0;
  let closedReads = 0;
  const reads: { start: number; fit: Set<number>; end?: number; value?: number; error?: unknown }[] = [];
  try {
    await clock.advance(1); // the first poll
    for (const at of sc.reads) {
      if (at > since()) await clock.advance(at - since());
      const snap = heads();
      const fit = new Set(sc.nodes.flatMap((_, i) => (snap?.endpoints.some((e) => e.name === `n${i}` && e.lagging === undefined) ? [i] : [])));
      const r: (typeof reads)[number] = { start: since(), fit };
      reads.push(r);
      read(reads.length - 1).then(
        (v) => {
          r.end = since();
          r.value = Number.parseInt(String(v), 16) - 1000;
        },
        (e: unknown) => {
          r.end = since();
          r.error = e;
        },
      );
      await clock.advance(0);
    }
    // Every read's deadline, and a little: a read that has not settled by then never will.
    for (let i = 0; i < 8; i++) await clock.advance(DEADLINE_MS / 4);
    if (closedAt !== undefined) {
      // 7. close(): it resolves by `abortAfterMs` (by the reads' deadline without one), every
      // read begun before it has settled by then, reads after it fail CLOSED at once, and once
      // the swaps are over (setEndpoints on a closed pool changes the set, and starts nothing)
      // nothing is left on the clock.
      const limit = sc.closing!.abortAfterMs ?? Infinity;
      if (closeEnd === undefined) violations.push(`close() at ${closedAt} ms never resolved`);
      else if (closeEnd - closedAt > Math.min(limit, DEADLINE_MS)) violations.push(`close() at ${closedAt} ms resolved after ${closeEnd - closedAt} ms (abortAfterMs ${limit})`);
      for (const [k, r] of reads.entries()) {
        if (r.start < closedAt && r.end !== undefined && closeEnd !== undefined && r.end > closeEnd) violations.push(`read ${k} (start ${r.start} ms) settled at ${r.end} ms, after close() resolved (${closeEnd} ms)`);
        if (r.start >= closedAt && (r.end !== r.start || !isPoolError(r.error) || r.error.code !== 'CLOSED')) violations.push(`read ${k} (start ${r.start} ms, after close()) ended ${r.end === undefined ? 'never' : `at ${r.end} ms with ${String((r.error as Error | undefined)?.message ?? r.value)}`}`);
      }
      await clock.advance(Math.max(0, 14_000 - since()));
      if (clock.pendingTimers > 0) violations.push(`${clock.pendingTimers} timer(s) left on the clock after close() (next in ${clock.nextTimerInMs()} ms)`);
    }
    // 6. A read that started after a node was taken out, or given a new connection, never reaches
    // it while it is out, nor through the connection replaced.
    for (const m of misrouted) {
      const since = Math.max(...swapped.filter((w) => w.node === m.node && w.from <= m.at).map((w) => w.from));
      if (reads[m.read]!.start >= since) violations.push(`read ${m.read} (start ${reads[m.read]!.start} ms) reached n${m.node} at ${m.at} ms, ${m.why} at ${since} ms`);
    }
    for (const [k, r] of reads.entries()) {
      const tag = `read ${k} (start ${r.start} ms)`;
      if (r.end === undefined) {
        violations.push(`${tag} never settled`);
        continue;
      }
      if (sc.nodes.some((_, i) => swappedIn(i, r.start, r.end!))) swappedReads++;
      // 8. A read never reaches the node its caller excluded, while that name keeps its node (names
      // are looked up when the call starts: a new connection under it, or the name back after it
      // left, is another endpoint to the read, docs/calls.md).
      if (excluded.has(k) && asked.has(`${k}:${sc.exclude}`) && !swappedIn(sc.exclude!, r.start, r.end!)) violations.push(`${tag} reached n${sc.exclude}, which it excluded`);
      const barred = (i: number): boolean => swappedIn(i, r.start, r.end!) || (excluded.has(k) && i === sc.exclude);
      if (r.end - r.start > DEADLINE_MS) violations.push(`${tag} settled after ${r.end - r.start} ms, deadline ${DEADLINE_MS} ms`);
      // Reads that close() ended are checked by 7 (and 4).
      const cut = closedAt !== undefined && r.end >= closedAt;
      if (cut) closedReads++;
      // Nodes that answer, were fit to routing at the start, and stayed at the tip to the end.
      const atTip = [...r.fit].filter((i) => {
        const n = sc.nodes[i]!;
        if (n.kind !== 'ok') return false;
        const f = outageOf(i);
        return (f === undefined || f.at + f.forMs <= r.start || f.at > r.end!) && !barred(i);
      });
      if (r.error !== undefined) {
        if (cut) continue;
        if (isPoolError(r.error) && r.error.code === 'INVALID_OPTIONS') violations.push(`${tag} failed with ${r.error.message}`);
        else if (weigh(atTip) >= sc.need && sc.maxConcurrentCalls === undefined) violations.push(`${tag} failed (${String((r.error as Error).message).slice(0, 300)}) while ${atTip.map((i) => `n${i}`).join(', ')} stayed at the tip and answered (need ${sc.need})`);
        // 5. A quorum not met before the read's deadline asked every node (unless they weigh too little in all).
        const unasked = sc.nodes.flatMap((_, i) => (asked.has(`${k}:${i}`) || opened.has(i) || barred(i) ? [] : [i]));
        if (isPoolError(r.error) && r.error.code === 'QUORUM_NOT_MET' && r.end - r.start < DEADLINE_MS && weigh(sc.nodes.flatMap((_, i) => (barred(i) ? [] : [i]))) >= sc.need && unasked.length > 0) {
          violations.push(`${tag} failed after ${r.end - r.start} ms (${String((r.error as Error).message).slice(0, 300)}) without asking ${unasked.map((i) => `n${i}`).join(', ')}`);
        }
        continue;
      }
      resolved++;
      if (r.value! > 0) staleAnswers++;
      // 4. The answer is that of `need` distinct nodes (each weighs 1).
      const agreeing = new Set(answers.filter((a) => a.read === k && a.lag === r.value).map((a) => a.node));
      if (weigh([...agreeing]) < sc.need) violations.push(`${tag} resolved with an answer distinct nodes weighing ${weigh([...agreeing])} gave (need ${sc.need}): ${JSON.stringify(answers.filter((a) => a.read === k))}`);
      if (weigh(atTip) < sc.need || sc.maxConcurrentCalls !== undefined || cut) continue;
      checked++;
      if (r.value! > sc.maxLagBlocks + 1) {
        violations.push(`${tag} resolved with an answer ${r.value} blocks behind (maxLagBlocks ${sc.maxLagBlocks}) while ${atTip.map((i) => `n${i}`).join(', ')} stayed at the tip and answered (need ${sc.need})`);
      }
    }
  } finally {
    await close();
  }
  return { violations, resolved, checked, staleAnswers, swappedReads, closedReads, adapter: sc.adapter };
}

describe('quorum reads of latest under head routing (generated)', () => {
  test(`no read hangs; with enough fit nodes at the tip, no stale quorum (${RUNS} runs)`, async () => {
    const totals = { runs: 0, resolved: 0, checked: 0, staleAnswers: 0, swappedReads: 0, closedReads: 0, checkedBy: { viem: 0, ethers: 0 } };
    await checkSeeded('quorum-heads', scenarioArb, simulate, {
      seed: SEED,
      runs: RUNS,
      seen: (o) => {
        totals.runs++;
        totals.resolved += o.resolved;
        totals.checked += o.checked;
        totals.checkedBy[o.adapter] += o.checked;
        totals.staleAnswers += o.staleAnswers;
        totals.swappedReads += o.swappedReads;
        totals.closedReads += o.closedReads;
      },
    });
    if (process.env['FC_VERBOSE'] === '1') console.log(JSON.stringify(totals));
    // The generator reaches what it is for: reads checked, and stale answers where they are allowed.
    expect(totals.checked).toBeGreaterThan(RUNS / 2);
    expect(Math.min(totals.checkedBy.viem, totals.checkedBy.ethers)).toBeGreaterThan(RUNS / 5);
    expect(totals.staleAnswers).toBeGreaterThan(0);
    expect(totals.swappedReads).toBeGreaterThan(RUNS / 50);
    expect(totals.closedReads).toBeGreaterThan(RUNS / 50);
  }, 300_000);
});

