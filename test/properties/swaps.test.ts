/**
 * The RPC adapters end to end (viem's client over `poolTransport` over `custom` nodes, and the
 * ethers provider over a `fetch` that routes each URL to its node) while
 * `setEndpoints` changes the set under it, as a Refresher does: generated chains, nodes at the
 * tip, nodes still syncing (many blocks behind, some catching up), nodes that refuse a method,
 * flaky nodes, slow nodes; swaps that replace a name's node, remove a name, bring one back or
 * change only an endpoint's settings; and concurrent calls of the kinds an application mixes
 * (reads of latest, a method some nodes refuse, filters, pinned reads, quorum reads), with head-aware
 * routing on or off, a head poll or none.
 *
 * Checked:
 * 1. every call settles, and none fails with an error of the pool's own making (INVALID_OPTIONS,
 *    a TypeError): only node answers and PoolErrors of running out (retries, endpoints, time,
 *    a pin whose endpoint left);
 * 2. no request reaches a node after `setEndpoints` took it out of the pool;
 * 3. a call of the method some nodes refuse never ends on a refusal while a healthy node that
 *    serves it is in the pool for the whole call (what a replaced node refused is not held
 *    against its successor);
 * 4. with head-aware routing, while routing knows an endpoint at the tip, a read of latest is never
 *    answered by a node more than `maxLagBlocks` (+1, a block turning meanwhile) behind whose
 *    name routing knew a head for, while a node at the tip, healthy, is in the pool (a syncing
 *    node put under a known name inherited its predecessor's head and answered such reads; so
 *    did one whose predecessor's answer came in after the swap). A node whose head is not known
 *    yet is asked for it, not left out, and may take a read before its first answer.
 *
 * 5. every answer for a filter comes from the node that made it (nodes number their filters from
 *    0x1, so another node under the name has a filter of that id: another client's);
 * 6. with `chainId` (drawn in half the runs; a node in six serves another chain), a node of
 *    another chain is sent `eth_chainId` and nothing else, and counts as no healthy node for 3 and 4.
 * 7. with `close({ abortAfterMs })` while calls and swaps go on (a fifth of the runs, forty-eighth
 *    session): a call after it fails CLOSED at once (viem answered a method every node had refused
 *    with its remembered refusal); a call before it settles by the time it resolves; it resolves
 *    by `abortAfterMs`. CLOSED is no error of the pool's making for a call it cut short.
 *
 * Half the runs set the pool's `hedge` (20 ms, against nodes of 0-40 ms): single reads are hedged;
 * half coalesce identical reads of balances and block numbers (forty-fourth session).
 *
 * Run as well (fortieth session) with every swap made as a request reaches its node, inside the
 * pool's operation, synchronously (`simulate(…, inside)`; `SWAPS_REPLAY='<scenario JSON>'` runs one).
 *
 * Seeded: `FC_SEED` (with `FC_PATH`) replays a failure, `FC_SWAPS_RUNS` sets the runs.
 */
import fc from 'fast-check';
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { isPoolError } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { poolTransport } from '../../src/viem/index.js';
import { PooledJsonRpcProvider } from '../../src/ethers/index.js';
import type { HeadSnapshot } from '../../src/rpc/heads.js';
import { seeded } from '../helpers/prng.js';
import { checkSeeded } from './run.js';

const RUNS = Number(process.env['FC_SWAPS_RUNS'] ?? 400);
const SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 2026120530;
const T0 = 1_000_000;
const BASE = 18_000_000;

interface NodeSpec {
  /** Blocks behind the tip (0: at the tip). */
  readonly lag: number;
  /** When (ms into the run) it catches up to the tip; undefined: never. */
  readonly catchUpAt: number | undefined;
  readonly refuses: boolean;
  /** Chance that a request fails with an internal error. */
  readonly flaky: number;
  readonly latencyMs: number;
  /** The chain it serves (its `eth_chainId`): 1, or now and then another (a testnet URL in the list). Absent in older replays: 1. */
  readonly chain?: number;
  /** Its `eth_chainId` answer takes 2.5 s, past the attempt timeout (2 s): the chain check's question goes unanswered. */
  readonly chainSlow?: boolean;
}

type Swap =
  | { readonly at: number; readonly kind: 'replace'; readonly slot: number; readonly node: NodeSpec }
  | { readonly at: number; readonly kind: 'remove'; readonly slot: number }
  | { readonly at: number; readonly kind: 'add'; readonly slot: number; readonly node: NodeSpec }
  | { readonly at: number; readonly kind: 'reweight'; readonly slot: number };

interface Scenario {
  readonly blockMs: number;
  readonly nodes: readonly NodeSpec[];
  readonly swaps: readonly Swap[];
  readonly heads: boolean;
  readonly pollBlocks: number;
  readonly maxLagBlocks: number;
  readonly strategy: 'round-robin' | 'ordered' | 'random';
  /** Calls per block time. */
  readonly rate: number;
  readonly blocks: number;
  readonly seed: number;
  /** The adapter is given `chainId: 1` (nodes of another chain are then never sent a caller's request). */
  readonly chainId?: boolean;
  /** The pool's `hedge` (20 ms): single reads are hedged. */
  readonly hedge?: boolean;
  /** Identical reads of balances and block numbers in flight share one request (`coalesce`). */
  readonly coalesce?: boolean;
  /** `close({ abortAfterMs })` at `at` ms while calls and swaps go on (forty-eighth session). */
  readonly closing?: { readonly at: number; readonly abortAfterMs: number | undefined } | undefined;
}

const nodeArb = (blockMs: number, blocks: number): fc.Arbitrary<NodeSpec> =>
  fc.record({
    lag: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: 5, max: 60 }) }),
    catchUpAt: fc.option(fc.integer({ min: 1, max: blocks }).map((b) => b * blockMs), { nil: undefined }),
    refuses: fc.boolean(),
    flaky: fc.constantFrom(0, 0, 0, 0.1, 0.3),
    latencyMs: fc.constantFrom(0, 0, 5, 40),
    chain: fc.constantFrom(1, 1, 1, 1, 1, 5),
    chainSlow: fc.constantFrom(false, false, false, false, false, false, false, true),
  });

const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({ blockMs: fc.constantFrom(250, 1000, 12_000), blocks: fc.integer({ min: 8, max: 30 }) })
  .chain(({ blockMs, blocks }) => {
    const at = fc.integer({ min: 0, max: blocks * blockMs });
    const slot = fc.integer({ min: 0, max: 3 });
    const node = nodeArb(blockMs, blocks);
    return fc.record({
      blockMs: fc.constant(blockMs),
      blocks: fc.constant(blocks),
      nodes: fc.array(node, { minLength: 2, maxLength: 4 }),
      swaps: fc.array(
        fc.oneof(
          fc.record({ at, kind: fc.constant('replace' as const), slot, node }),
          fc.record({ at, kind: fc.constant('remove' as const), slot }),
          fc.record({ at, kind: fc.constant('add' as const), slot, node }),
          fc.record({ at, kind: fc.constant('reweight' as const), slot }),
        ),
        { maxLength: 6 },
      ),
      heads: fc.boolean(),
      pollBlocks: fc.constantFrom(0, 0, 1, 3),
      maxLagBlocks: fc.integer({ min: 0, max: 3 }),
      strategy: fc.constantFrom('round-robin' as const, 'ordered' as const, 'random' as const),
      rate: fc.constantFrom(1, 3, 8),
      seed: fc.nat(),
      chainId: fc.boolean(),
      hedge: fc.boolean(),
      coalesce: fc.boolean(),
      closing: fc.oneof(
        { weight: 4, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.record({ at, abortAfterMs: fc.constantFrom(undefined, 0, 1, 100, Infinity) }) },
      ),
    });
  });

const DEBUG = process.env['SWAPS_DEBUG'] !== undefined;
const hex = (n: number): string => `0x${n.toString(16)}`;
const NOT_FOUND = -32601;

interface Live {
  readonly id: number;
  readonly spec: NodeSpec;
  /** The connection handed to the adapter: a viem transport, or `{ url }` for ethers. */
  readonly conn: unknown;
  /** Filters it has made. */
  filters: number;
  /** Request sequence number at which `setEndpoints` took it out (undefined: still in). */
  retiredAt: number | undefined;
}

/** What the property needs of an adapter. */
interface Adapter {
  request(method: string, params: unknown[], options?: { pin?: string; quorum?: number }): Promise<unknown>;
  readonly pool: { setEndpoints(list: readonly { name: string; conn: unknown; weight: number }[]): void; readonly endpointNames: string[] };
  heads(): HeadSnapshot | undefined;
  /** Callers served by a request another caller started (`coalesce`). */
  joined(): number;
  close(options?: { abortAfterMs?: number }): Promise<void>;
}

type Answer = (method: string, params: unknown[]) => Promise<unknown>;

/** viem's client over `poolTransport` over `custom` nodes. */
function viemAdapter(initial: readonly { name: string; conn: unknown }[], options: Record<string, unknown>): Adapter {
  const transport = poolTransport({ endpoints: initial.map((e) => ({ name: e.name, transport: e.conn as never })), custom, ...options });
  const client = createClient({ transport });
  return {
    request: (method, params, o) => {
      const c = o?.pin !== undefined ? createClient({ transport: transport.pin(o.pin) }) : o?.quorum !== undefined ? createClient({ transport: transport.quorum(o.quorum) }) : client;
      return c.request({ method, params } as never);
    },
    pool: transport.pool as unknown as Adapter['pool'],
    heads: () => transport.heads(),
    joined: () => transport.readStats().coalesce.joined,
    close: (o) => transport.close(o),
  };
}

/**
 * viem's client over `poolTransport` whose endpoints are URLs, built by an `http` that routes
 * each URL to its node, the set changed with `transport.setEndpoints` and a list of `{ url }`
 * made anew each time (a URL it has keeps its transport).
 */
function viemUrlAdapter(initial: readonly { name: string; conn: unknown }[], options: Record<string, unknown>, nodeAt: (url: string) => Answer | undefined): Adapter {
  const http = (url: string) =>
    custom({
      request: ({ method, params }: { method: string; params?: unknown[] }) => {
        const answer = nodeAt(url);
        return answer === undefined ? Promise.reject(Object.assign(new Error(`no node at ${url}`), { code: -32603 })) : answer(method, params ?? []);
      },
    });
  const urlOf = (conn: unknown): string => (conn as { url: string }).url;
  const transport = poolTransport({ endpoints: initial.map((e) => ({ name: e.name, url: urlOf(e.conn) })), http, custom, ...options });
  const client = createClient({ transport });
  return {
    request: (method, params, o) => {
      const c = o?.pin !== undefined ? createClient({ transport: transport.pin(o.pin) }) : o?.quorum !== undefined ? createClient({ transport: transport.quorum(o.quorum) }) : client;
      return c.request({ method, params } as never);
    },
    pool: {
      setEndpoints: (list) => transport.setEndpoints(list.map((e) => ({ name: e.name, url: urlOf(e.conn), weight: e.weight }))),
      get endpointNames() {
        return transport.pool.endpointNames;
      },
    },
    heads: () => transport.heads(),
    joined: () => transport.readStats().coalesce.joined,
    close: (o) => transport.close(o),
  };
}

/** The ethers provider over a `fetch` that routes each URL to its node. */
function ethersAdapter(initial: readonly { name: string; conn: unknown }[], options: Record<string, unknown>, nodeAt: (url: string) => Answer | undefined): Adapter {
  const fetch = async (url: string, init: { body: string }) => {
    const body = JSON.parse(init.body) as { id: unknown; method: string; params: unknown[] };
    const answer = nodeAt(url);
    let json: unknown;
    try {
      if (answer === undefined) throw Object.assign(new Error(`no node at ${url}`), { code: -32603 });
      json = { jsonrpc: '2.0', id: body.id, result: await answer(body.method, body.params) };
    } catch (e) {
      json = { jsonrpc: '2.0', id: body.id, error: { code: (e as { code?: number }).code ?? -32603, message: (e as Error).message } };
    }
    return { status: 200, ok: true, headers: new Headers(), text: async () => JSON.stringify(json) };
  };
  const provider = new PooledJsonRpcProvider({ network: 1, fetch, endpoints: initial.map((e) => ({ name: e.name, url: (e.conn as { url: string }).url })), ...options });
  return {
    request: (method, params, o) => provider.sendWith(method, params, { ...(o?.pin !== undefined ? { pin: o.pin } : {}), ...(o?.quorum !== undefined ? { quorum: o.quorum } : {}) }),
    pool: provider.pool as unknown as Adapter['pool'],
    heads: () => provider.heads(),
    joined: () => provider.readStats().coalesce.joined,
    close: (o) => provider.close(o),
  };
}

async function simulate(sc: Scenario, which: 'viem' | 'viem-url' | 'ethers', inside = false) {
  const violations: string[] = [];
  const clock = new FakeClock(T0);
  const B = sc.blockMs;
  const t = (): number => clock.now() - T0;
  const tip = (ms: number): number => BASE + Math.floor(ms / B);
  const rnd = seeded(sc.seed);
  let seq = 0;
  let nextId = 0;
  const lagOf = (spec: NodeSpec, ms: number): number => (spec.catchUpAt !== undefined && ms >= spec.catchUpAt ? 0 : spec.lag);
  const make = (spec: NodeSpec): Live => {
    const id = nextId++;
    const answer: Answer = async (method, params) => {
          const n = ++seq;
          // `inside`: the swaps due run here, as the request reaches its node (synchronously, inside the pool's operation).
          if (inside) swapsDue();
          if (DEBUG) console.log(`${t()} #${id} ${method}`);
          if (live.retiredAt !== undefined && n > live.retiredAt) violations.push(`node #${id} got ${method} at ${t()} ms, after setEndpoints took it out`);
          if (spec.latencyMs > 0) await new Promise<void>((r) => clock.setTimeout(r, spec.latencyMs));
          if (rnd() < spec.flaky) throw Object.assign(new Error('internal error'), { code: -32603 });
          const lag = lagOf(spec, t());
          if (method === 'eth_foo') {
            if (spec.refuses) throw Object.assign(new Error('the method eth_foo does not exist/is not available'), { code: NOT_FOUND });
            return '0xf00';
          }
          if (method === 'eth_blockNumber') return hex(tip(t()) - lag);
          // A balance that says which node answered and how far behind it was.
          if (method === 'eth_getBalance') return hex(lag * 1000 + id);
          if (method === 'eth_chainId') {
            if (spec.chainSlow === true) await new Promise<void>((r) => clock.setTimeout(r, 2_500));
            return hex(spec.chain ?? 1);
          }
          // 6. With `chainId`, a node of another chain is asked its chain and nothing else.
          if (sc.chainId === true && (spec.chain ?? 1) !== 1) violations.push(`node #${id} of chain ${spec.chain} got ${method} at ${t()} ms`);
          // Filters numbered from 0x1 on each node, as anvil, hardhat and ganache do.
          if (method === 'eth_newBlockFilter') {
            const fid = hex(++live.filters);
            return fid;
          }
          if (method === 'eth_getFilterChanges') {
            const fid = Number.parseInt(String((params as unknown[])[0]), 16);
            if (!(fid >= 1 && fid <= live.filters)) throw Object.assign(new Error('filter not found'), { code: -32000 });
            return [hex(id), hex(fid)];
          }
          throw new Error(`unexpected ${method} ${JSON.stringify(params)}`);
    };
    const url = `http://node-${id}.test/`;
    const live: Live = { id, spec, retiredAt: undefined, filters: 0, conn: which === 'viem' ? custom({ request: ({ method, params }: { method: string; params?: unknown[] }) => answer(method, params ?? []) }) : { url } };
    answers.set(url, answer);
    return live;
  };
  const answers = new Map<string, Answer>();
  // Slots 0..3 name endpoints s0..s3; a slot holds a node or nothing.
  const slots: (Live | undefined)[] = [0, 1, 2, 3].map((i) => (i < sc.nodes.length ? make(sc.nodes[i]!) : undefined));
  const weights = [1, 1, 1, 1];
  // ethers users often make their `{ url }` values anew for each setEndpoints: so does this (and viem's with URLs).
  const connOf = (l: Live): unknown => (which !== 'viem' ? { url: (l.conn as { url: string }).url } : l.conn);
  const configs = () => slots.flatMap((l, i) => (l === undefined ? [] : [{ name: `s${i}`, conn: connOf(l), weight: weights[i]! }]));
  const options = {
    clock,
    // Its own draws (the random strategy, backoff jitter), so that a counterexample replays.
    random: seeded(sc.seed ^ 0x5bd1e995),
    strategy: sc.strategy,
    attemptTimeoutMs: 2_000,
    deadlineMs: 10_000,
    backoff: { initialMs: 10, maxMs: 100 },
    ...(sc.chainId === true ? { chainId: 1 } : {}),
    ...(sc.hedge === true ? { hedge: { afterMs: 20 } } : {}),
    ...(sc.coalesce === true ? { coalesce: ['eth_getBalance', 'eth_blockNumber'] } : {}),
    ...(sc.heads ? { heads: { maxLagBlocks: sc.maxLagBlocks, blockTimeMs: B, ...(sc.pollBlocks > 0 ? { pollMs: sc.pollBlocks * B } : {}) } } : {}),
  };
  const initial = slots.flatMap((l, i) => (l === undefined ? [] : [{ name: `s${i}`, conn: l.conn }]));
  const nodeAt = (url: string) => answers.get(url);
  const transport = which === 'viem' ? viemAdapter(initial, options) : which === 'viem-url' ? viemUrlAdapter(initial, options, nodeAt) : ethersAdapter(initial, options, nodeAt);
  const inPool = (): Live[] => slots.filter((l): l is Live => l !== undefined);
  // Hedges started (the viem-url adapter's pool is a view without events: none counted there).
  let hedges = 0;
  const events = transport.pool as { on?: (type: 'hedge', listener: () => void) => unknown };
  if (typeof events.on === 'function') events.on('hedge', () => hedges++);
  const swap = (s: Swap): void => {
    const before = slots[s.slot];
    if (s.kind === 'remove') {
      if (before === undefined || inPool().length <= 1) return;
      slots[s.slot] = undefined;
    } else if (s.kind === 'add') {
      if (before !== undefined) return;
      slots[s.slot] = make(s.node);
    } else if (s.kind === 'replace') {
      if (before === undefined) return;
      slots[s.slot] = make(s.node);
    } else {
      if (before === undefined) return;
      weights[s.slot] = weights[s.slot] === 1 ? 2 : 1;
    }
    transport.pool.setEndpoints(configs());
    if (DEBUG) console.log(`${t()} swap ${JSON.stringify(s)}`);
    if (before !== undefined && slots[s.slot] !== before) before.retiredAt = seq;
  };

  /**
   * Whether a node serves the pool: with `chainId`, only a node of chain 1 does (another is
   * disabled). One whose `eth_chainId` answers past the attempt timeout never does: with
   * `chainId` its question never passes, without it the callers' own `eth_chainId` reads time
   * out on it and open its breaker (seeds 42560, 42561).
   */
  const onChain = (l: Live): boolean => l.spec.chainSlow !== true && (sc.chainId !== true || (l.spec.chain ?? 1) === 1);
  const calls: Promise<void>[] = [];
  let settled = 0;
  const refusingSeen = { any: false };
  /** When `close()` was called, and when it resolved. */
  let closedAt: number | undefined;
  let closeEnd: number | undefined;
  let afterClose = 0;
  const onCall = (label: string, run: () => Promise<unknown>, check: (value: unknown, startMs: number, served: boolean) => void, onError: (e: unknown, served: boolean) => void) => {
    const startMs = t();
    // 7. A call after close() fails CLOSED at once; one before it has settled once it resolves.
    const late = closedAt !== undefined;
    if (late) afterClose++;
    const closedCheck = (e: unknown): void => {
      if (late && (t() !== startMs || !isPoolError(e) || e.code !== 'CLOSED')) violations.push(`${label} at ${startMs} ms, after close(), ended at ${t()} ms with ${e === undefined ? 'a value' : String((e as Error)?.message ?? e).slice(0, 160)}`);
      if (!late && closeEnd !== undefined && t() > closeEnd) violations.push(`${label} at ${startMs} ms settled at ${t()} ms, after close() resolved (${closeEnd} ms)`);
    };
    if (DEBUG) console.log(`${startMs} call ${label} heads ${JSON.stringify(transport.heads())}`);
    // The healthy nodes that serve eth_foo and stay in the pool for the whole call.
    const watch = { servers: new Set(inPool().filter((l) => !l.spec.refuses && l.spec.flaky === 0 && onChain(l))) };
    watching.add(watch);
    const tag = `${label} from ${startMs} ms`;
    pending.add(tag);
    calls.push(
      run().then(
        (v) => (closedCheck(undefined), check(v, startMs, watch.servers.size > 0)),
        (e: unknown) => {
          closedCheck(e);
          // Cut short by close(): CLOSED is then no error of the pool's making.
          if (closedAt !== undefined && isPoolError(e) && e.code === 'CLOSED') return;
          onError(e, watch.servers.size > 0);
        },
      ).finally(() => {
        watching.delete(watch);
        pending.delete(tag);
        settled++;
      }).catch((e: unknown) => {
        violations.push(`${label} at ${startMs} ms: the check threw ${String(e)}`);
      }),
    );
  };
  const watching = new Set<{ servers: Set<Live> }>();
  const filters: { id: string; node: string | undefined }[] = [];
  const pending = new Set<string>();
  const ownMaking = (e: unknown): string | undefined => {
    if (isPoolError(e)) return ['INVALID_OPTIONS', 'CLOSED'].includes(e.code) ? `${e.code}: ${e.message}` : undefined;
    if (e instanceof TypeError || e instanceof RangeError) return `${e.name}: ${e.message}`;
    // With `chainId`, every node left serving another chain: the call ends on that answer.
    if ((e as { code?: unknown })?.code === 'CHAIN_MISMATCH' && sc.chainId === true) return undefined;
    const text = String((e as Error)?.message ?? e);
    return /does not exist|internal error|RPC Request failed|An internal error|Method not found|Missing or invalid|filter not found/i.test(text) ? undefined : `unexpected error: ${text.slice(0, 200)}`;
  };
  const isRefusal = (e: unknown): boolean => {
    const walk = (x: unknown, depth: number): boolean => {
      if (typeof x !== 'object' || x === null || depth > 6) return false;
      const r = x as { code?: unknown; cause?: unknown; message?: unknown; error?: unknown; info?: unknown };
      if (r.code === NOT_FOUND || (typeof r.message === 'string' && /eth_foo does not exist/.test(r.message))) return true;
      // viem chains causes; ethers keeps the node's error under `error` (and `info.error`).
      return walk(r.cause, depth + 1) || walk(r.error, depth + 1) || walk(r.info, depth + 1);
    };
    return walk(e, 0);
  };

  const end = sc.blocks * B;
  const gap = Math.max(5, Math.round(B / sc.rate));
  const swaps = [...sc.swaps].sort((a, b) => a.at - b.at);
  let nextSwap = 0;
  let swapsInside = 0;
  /** When a swap last ran inside a request (the set changed while a call was being routed). */
  let insideSwapAt = -1;
  /** The swaps whose time came `lateMs` ago or more, in order. */
  function swapsDue(lateMs = 0): void {
    while (nextSwap < swaps.length && swaps[nextSwap]!.at + lateMs <= t()) {
      if (inside && lateMs === 0) {
        swapsInside++;
        insideSwapAt = t();
      }
      swap(swaps[nextSwap++]!);
      for (const w of watching) for (const l of w.servers) if (!inPool().includes(l)) w.servers.delete(l);
    }
  }
  // Whether a node at the tip, healthy, has been in the pool since the call started and routing knows a head at the tip.
  const fitNodeIn = (): boolean => inPool().some((l) => lagOf(l.spec, t()) === 0 && l.spec.flaky === 0 && onChain(l));
  for (let now = 0; now < end; now += gap) {
    if (sc.closing !== undefined && closedAt === undefined && t() >= sc.closing.at) {
      const { abortAfterMs } = sc.closing;
      closedAt = t();
      transport.close(abortAfterMs === undefined ? undefined : { abortAfterMs }).then(
        () => (closeEnd = t()),
        (e: unknown) => violations.push(`close() rejected: ${String(e)}`),
      );
    }
    // With `inside`, a swap no request reached within 250 ms of its time runs here.
    swapsDue(inside ? 250 : 0);
    const r = rnd();
    if (r < 0.35) {
      // A read of latest: its answer says how far behind the node was.
      const snap = transport.heads();
      // Routing knows the tip now, from an endpoint of the pool (not only from a node since replaced).
      // Without a poll, what it knows is only as fresh as the answers it sees: a best head some
      // blocks old makes a node seen since look less far behind than it is.
      // And the node it knows at the tip is a fit one: a flaky one at the tip may fail the read,
      // and a node that caught up since routing last heard of it still looks behind (seed 3901:
      // the flaky node failed, the read went to one of the nodes routing knew as behind, while
      // the node that had just caught up waited for the next head poll to be known at the tip).
      const fitAtTip = (name: string): boolean => {
        const l = slots[Number(name.slice(1))];
        return l !== undefined && lagOf(l.spec, t()) === 0 && l.spec.flaky === 0 && onChain(l);
      };
      const informed = snap !== undefined && snap.endpoints.some((e) => e.lagging === undefined && e.head >= tip(t()) && fitAtTip(e.name)) && fitNodeIn();
      const startTip = tip(t());
      // The names routing knew a head for at the call's start, and the node under each name.
      const knownAtStart = new Set((snap?.endpoints ?? []).map((e) => e.name));
      const nameAtStart = new Map(slots.flatMap((l, i) => (l === undefined ? [] : [[l.id, `s${i}`] as const])));
      onCall(
        'eth_getBalance latest',
        () => transport.request('eth_getBalance', ['0x0000000000000000000000000000000000000000', 'latest']),
        (v, startMs) => {
          const n = Number.parseInt(String(v), 16);
          const lag = Math.floor(n / 1000);
          const name = nameAtStart.get(n % 1000);
          // A node whose head routing did not know yet (new under its name) may take a read before its first answer.
          const known = name !== undefined && knownAtStart.has(name);
          // A swap made inside a request at the call's start changed the set while the call was routed: what routing
          // knew then (the node it knew at the tip may be the one removed) is not what the snapshot before it says.
          if (sc.heads && informed && known && lag > sc.maxLagBlocks + 1 && fitNodeIn() && insideSwapAt !== startMs) {
            violations.push(`a read of latest at tip ${startTip} (${t()} ms) was answered by a node ${lag} blocks behind (maxLagBlocks ${sc.maxLagBlocks}); heads(): ${JSON.stringify(transport.heads())}`);
          }
        },
        (e) => {
          const own = ownMaking(e);
          if (own !== undefined) violations.push(`eth_getBalance failed: ${own}`);
        },
      );
    } else if (r < 0.55) {
      onCall(
        'eth_foo',
        () => transport.request('eth_foo', []),
        () => undefined,
        (e, served) => {
          const own = ownMaking(e);
          if (own !== undefined) violations.push(`eth_foo failed: ${own}`);
          else if (served && isRefusal(e)) violations.push(`eth_foo at ${t()} ms ended on a refusal though a healthy node that serves it was in the pool throughout: ${String((e as Error).message).slice(0, 160)}`);
        },
      );
    } else if (r < 0.7) {
      const names = transport.pool.endpointNames;
      const name = names[Math.floor(rnd() * names.length)]!;
      onCall(
        `pinned eth_blockNumber to ${name}`,
        () => transport.request('eth_blockNumber', [], { pin: name }),
        () => undefined,
        (e) => {
          if (isPoolError(e) && e.code === 'PIN_UNAVAILABLE') return;
          const own = ownMaking(e);
          if (own !== undefined) violations.push(`pinned eth_blockNumber to ${name} failed: ${own}`);
        },
      );
    } else if (r < 0.75) {
      // Filters: a new one now and then, and a use of one made before; every answer for a
      // filter must come from the node that first answered for it.
      if (filters.length === 0 || rnd() < 0.3) {
        onCall(
          'eth_newBlockFilter',
          () => transport.request('eth_newBlockFilter', []),
          (v) => filters.push({ id: String(v), node: undefined }),
          (e) => {
            const own = ownMaking(e);
            if (own !== undefined) violations.push(`eth_newBlockFilter failed: ${own}`);
          },
        );
      } else {
        const f = filters[Math.floor(rnd() * filters.length)]!;
        onCall(
          `eth_getFilterChanges ${f.id}`,
          () => transport.request('eth_getFilterChanges', [f.id]),
          (v) => {
            const [node, fid] = v as [string, string];
            f.node ??= node;
            if (node !== f.node) violations.push(`filter ${f.id} (node #${Number.parseInt(f.node, 16)}'s ${fid}) was answered by node #${Number.parseInt(node, 16)}`);
          },
          (e) => {
            const own = ownMaking(e);
            if (own !== undefined && !/filter not found/.test(own)) violations.push(`eth_getFilterChanges failed: ${own}`);
          },
        );
      }
    } else if (r < 0.8) {
      onCall(
        'quorum eth_chainId',
        () => transport.request('eth_chainId', [], { quorum: Math.min(2, transport.pool.endpointNames.length) }),
        (v) => {
          if (sc.chainId === true && v !== '0x1') violations.push(`a quorum read of eth_chainId answered ${String(v)} with chainId 1`);
        },
        (e) => {
          if ((e as { name?: string })?.name === 'QuorumError') return;
          const own = ownMaking(e);
          if (own !== undefined) violations.push(`quorum eth_chainId failed: ${own}`);
        },
      );
    } else {
      onCall(
        'eth_blockNumber',
        () => transport.request('eth_blockNumber', []),
        () => undefined,
        (e) => {
          const own = ownMaking(e);
          if (own !== undefined) violations.push(`eth_blockNumber failed: ${own}`);
        },
      );
    }
    await clock.advance(gap);
    if (violations.length > 5) break;
  }
  // 1. Every call settles: within the deadline (10 s) and a bit, in bounded steps.
  for (let i = 0; i < 200 && settled < calls.length; i++) await clock.advance(100);
  if (settled < calls.length) {
    violations.push(`${calls.length - settled} of ${calls.length} calls never settled (${[...pending].join('; ')})`);
    return { violations, calls: calls.length, hedges };
  }
  await Promise.all(calls);
  if (closedAt !== undefined) {
    const limit = sc.closing!.abortAfterMs ?? Infinity;
    if (closeEnd === undefined) violations.push(`close() at ${closedAt} ms never resolved`);
    else if (closeEnd - closedAt > limit) violations.push(`close() at ${closedAt} ms resolved ${closeEnd - closedAt} ms later (abortAfterMs ${limit})`);
  }
  let closed = false;
  void transport.close().then(() => (closed = true));
  for (let i = 0; i < 50 && !closed; i++) await clock.advance(100);
  if (!closed) violations.push('close() never resolved');
  return { violations, calls: calls.length, swapsInside, hedges, joined: transport.joined(), afterClose };
}

describe('the RPC adapters while setEndpoints changes the set', () => {
  test.each(['viem', 'viem-url', 'ethers'] as const)('%s: calls settle, removed nodes get nothing, refusals, heads and filters follow the node, not the name', async (which) => {
    const totals = { runs: 0, calls: 0, hedges: 0, joined: 0, afterClose: 0 };
    await checkSeeded(`swaps-${which}`, scenarioArb, (sc) => simulate(sc, which), {
      seed: SEED,
      runs: RUNS,
      seen: (o) => {
        if (DEBUG && o.violations.length > 0) console.log('VIOLATIONS', JSON.stringify(o.violations.slice(0, 3)));
        totals.runs++;
        totals.calls += o.calls;
        totals.hedges += o.hedges ?? 0;
        totals.joined += o.joined ?? 0;
        totals.afterClose += o.afterClose ?? 0;
      },
    });
    if (process.env['SWAPS_DEBUG']) console.log(JSON.stringify(totals));
    // The generator reaches what it aims at: runs with calls in them, and hedged reads.
    expect(totals.calls).toBeGreaterThan(totals.runs * 20);
    // (Not on a replay of one run, which may draw neither.)
    if (process.env['FC_PATH'] === undefined) {
      if (which !== 'viem-url') expect(totals.hedges).toBeGreaterThan(totals.runs);
      expect(totals.joined).toBeGreaterThan(0);
      expect(totals.afterClose).toBeGreaterThan(totals.runs);
    }
    if (DEBUG) console.log(which, totals);
  }, 600_000);

  // The same with each swap made as a request reaches its node (inside the pool's operation,
  // synchronously: a Refresher or a listener acting while the pool sends), fortieth session.
  test.each(['viem', 'ethers'] as const)('%s, the swaps made as a request reaches its node: the same promises', async (which) => {
    const replay = process.env['SWAPS_REPLAY'];
    if (replay !== undefined) {
      expect((await simulate(JSON.parse(replay) as Scenario, which, true)).violations).toEqual([]);
      return;
    }
    const totals = { runs: 0, calls: 0, inside: 0 };
    await checkSeeded(`swaps-${which}-inside`, scenarioArb, (sc) => simulate(sc, which, true), {
      seed: SEED + 1,
      offset: 1,
      runs: Math.ceil(RUNS / 2),
      seen: (o) => {
        totals.runs++;
        totals.calls += o.calls;
        totals.inside += o.swapsInside ?? 0;
      },
    });
    console.log(`swaps made inside a request (${which})`, totals.inside);
    expect(totals.inside).toBeGreaterThan(totals.runs);
  }, 600_000);
});
