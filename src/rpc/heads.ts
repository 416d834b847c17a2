/**
 * Head-aware routing, transport-agnostic: what each endpoint's latest block is, which endpoints
 * lag the best head (or stall while others advance), and which block a read needs.
 * Pure: time comes in as `now`; adapters feed it answers and poll results (see `head-poll.ts`).
 *
 * An endpoint is lagging when its head is more than `maxLagBlocks` behind the best head seen
 * (`behind`; a block more when it was last heard from before the best head last advanced), or
 * when its head has not advanced for the stall time while the best head did (`stalled`). The
 * stall time is `stallMs` when given, else `stallBlocks` block times, the block time being
 * `blockTimeMs` when given, else measured from the endpoints' own advances from the front of the
 * chain to the front (30 s until one has been seen).
 */

export interface HeadOptions {
  /** An endpoint more than this many blocks behind the best head is lagging. @default 2 */
  readonly maxLagBlocks?: number;
  /** A head that has not advanced for this long while the best head did is stalled. @default stallBlocks block times */
  readonly stallMs?: number;
  /** Without `stallMs`: block times without an advance (while the best head advances) that make a stall. @default 3 */
  readonly stallBlocks?: number;
  /** The chain's block time. @default measured from the best head's advances */
  readonly blockTimeMs?: number;
  /**
   * Ask every endpoint for `eth_blockNumber` this often. 0: no poll; heads are learned from
   * answers. Either way a lagging endpoint is asked alone while requests come: at most once a
   * block time while it was last heard from before the best head advanced, else once a stall time.
   * @default 0
   */
  readonly pollMs?: number;
}

/** Why an endpoint is left out: too far behind the best head, or not advancing while it does. */
export type LagReason = 'behind' | 'stalled';

export interface HeadSnapshot {
  /** The best head seen, if any. */
  readonly best: number | undefined;
  /** The block time in use (given or measured), if known. */
  readonly blockTimeMs: number | undefined;
  /** Each endpoint whose head is known: its head and, when lagging, why. */
  readonly endpoints: readonly { readonly name: string; readonly head: number; readonly lagging: LagReason | undefined }[];
}

/**
 * `front`: the block was the best known when the endpoint was seen reaching it (never on a first
 * sighting: a node first heard from may have stalled long before, with no other head known yet).
 */
interface Head { block: number; advancedAt: number; seenAt: number; front: boolean }

/** Stall time before the block time is known. */
const UNKNOWN_STALL_MS = 30_000;
/**
 * The block time is the time over the blocks of the last this many samples. Not an average of
 * samples: a head first seen late makes its next sample short, and several endpoints seen at
 * the same instant give the same short sample at once; over a window each endpoint's late
 * sightings cancel out (its samples add up to the time it took for the blocks it went through).
 */
const SAMPLES = 32;
/**
 * Samples needed before a block time is published, and how a catch-up is told from the chain's
 * pace: a sample of several blocks at more than twice the median pace is an endpoint catching
 * up from behind that looked at the front when it was last heard (the fresher heads of others
 * not heard yet). Counted, one such sample made a whole run's block time 3.5 times too short
 * (seed 2026120924: one sample, 7 blocks in 2 s on a 1 s chain), and the stall time with it.
 */
const MIN_SAMPLES = 3;
const CATCH_UP_PACE = 2;
/**
 * And a sample at more than this many times the median's time per block is an endpoint that fell
 * behind while no fresher head was known (the others removed or lagging), its slower progress
 * still at the front: counted, one such sample (3 blocks in 336 s on a 12 s chain, seed 42480)
 * made the block time 39 s, and the stall time with it. Generous: a chain that misses a slot
 * now and then gives samples of two or three block times, which count.
 */
const FELL_BEHIND_PACE = 4;
/**
 * An answer this far below an endpoint's known head is no answer out of order (those are a few
 * blocks old): the node was reset, or the known head was a wrong answer (an overflow, another
 * chain behind a load balancer). It replaces the known head, whenever its request was sent.
 * Ignored, one wrong answer kept its endpoint ahead of all others for good, every other one
 * "behind", every read of latest on it.
 */
const RESET_BLOCKS = 1024;

export class HeadTracker {
  readonly maxLagBlocks: number;
  readonly #stallMs: number | undefined;
  readonly #stallBlocks: number;
  readonly #blockTimeMs: number | undefined;
  readonly #heads = new Map<string, Head>();
  #best = -1;
  #bestAt = -Infinity;
  #measured: number | undefined;
  /** The last samples, as milliseconds and blocks in turn (a ring of SAMPLES pairs). */
  readonly #samples: number[] = [];
  #next = 0;

  constructor(options: HeadOptions = {}) {
    this.maxLagBlocks = options.maxLagBlocks ?? 2;
    this.#stallMs = options.stallMs;
    this.#stallBlocks = options.stallBlocks ?? 3;
    this.#blockTimeMs = options.blockTimeMs;
  }

  /** The block time in use: given, or measured from the best head's advances. */
  get blockTimeMs(): number | undefined {
    return this.#blockTimeMs ?? this.#measured;
  }

  /** How long a head may stay put while the best advances before it is stalled. */
  get stallMs(): number {
    if (this.#stallMs !== undefined) return this.#stallMs;
    const bt = this.blockTimeMs;
    return bt === undefined ? UNKNOWN_STALL_MS : this.#stallBlocks * bt;
  }

  /**
   * Records that `endpoint` has `block` at `now`, from a request sent at `sentAt` (unknown: as
   * early as can be). A lower number than known is an answer out of order, ignored, unless its
   * request was sent after the answer behind the known head arrived (requests that did not
   * overlap: the node went back, a load balancer moved its URL to a backend behind, or the known
   * head was a glitch) or it is more than RESET_BLOCKS lower; then it replaces the known head.
   */
  observe(endpoint: string, block: number, now: number, sentAt = -Infinity): void {
    if (!Number.isSafeInteger(block) || block < 0) return;
    const head = this.#heads.get(endpoint);
    if (head !== undefined && block < head.block && (head.block - block > RESET_BLOCKS || sentAt > head.seenAt)) {
      const held = head.block === this.#best;
      Object.assign(head, { block, advancedAt: now, seenAt: now, front: false });
      if (held) this.#rebest();
      return;
    }
    const front = block >= this.#best;
    this.#seen = true;
    if (head === undefined) this.#heads.set(endpoint, { block, advancedAt: now, seenAt: now, front: false });
    else if (block >= head.block) head.seenAt = now;
    if (head !== undefined && block > head.block) {
      // The block time is measured on one endpoint's own advances from the front of the chain to
      // the front, never across endpoints (first sightings of two endpoints a block apart say
      // nothing of it), nor on an endpoint catching up from behind (many blocks in little time).
      if (front && head.front && now > head.advancedAt) this.#sample(now - head.advancedAt, block - head.block);
      head.block = block;
      head.advancedAt = now;
      head.front = front;
    }
    if (block > this.#best) {
      this.#best = block;
      this.#bestAt = now;
    }
  }

  #sample(ms: number, blocks: number): void {
    const s = this.#samples;
    s[this.#next] = ms;
    s[this.#next + 1] = blocks;
    this.#next = (this.#next + 2) % (2 * SAMPLES);
    const paces: number[] = [];
    for (let i = 0; i < s.length; i += 2) paces.push(s[i]! / s[i + 1]!);
    if (paces.length < MIN_SAMPLES) return;
    const median = paces.sort((x, y) => x - y)[paces.length >> 1]!;
    let time = 0;
    let count = 0;
    for (let i = 0; i < s.length; i += 2) {
      const pace = s[i]! / s[i + 1]!;
      if ((s[i + 1]! > 1 && pace < median / CATCH_UP_PACE) || pace > median * FELL_BEHIND_PACE) continue; // a catch-up, or a fall behind
      time += s[i]!;
      count += s[i + 1]!;
    }
    this.#measured = time / count;
  }

  /** The best head seen, or undefined before any observation. */
  best(): number | undefined { return this.#best < 0 ? undefined : this.#best; }

  head(endpoint: string): number | undefined { return this.#heads.get(endpoint)?.block; }

  /** The endpoints at the best head, each with when it was last heard from. */
  leaders(): [name: string, seenAt: number][] {
    const out: [string, number][] = [];
    for (const [name, head] of this.#heads) if (head.block === this.#best) out.push([name, head.seenAt]);
    return out;
  }

  /** Every endpoint whose head is known, with when it was last heard from. */
  heard(): [name: string, seenAt: number][] {
    const out: [string, number][] = [];
    for (const [name, head] of this.#heads) out.push([name, head.seenAt]);
    return out;
  }

  /** How many endpoints' heads are known. */
  get known(): number { return this.#heads.size; }

  /**
   * Whether the best head is more than the reset bound above every other head known (one other
   * at least): a wrong answer, likely, which only its node's next answer undoes.
   */
  aloneAhead(): boolean {
    let others = false;
    for (const h of this.#heads.values()) {
      if (h.block === this.#best) continue;
      if (this.#best - h.block <= RESET_BLOCKS) return false;
      others = true;
    }
    return others;
  }

  /** Whether any head was ever known (they may all have been forgotten since). */
  get seen(): boolean { return this.#seen; }
  #seen = false;

  /**
   * Whether what is known of `endpoint` may be out of date: it was last heard from before the
   * best head last advanced (a lagging endpoint heard from since is lagging for sure).
   */
  stale(endpoint: string): boolean {
    const head = this.#heads.get(endpoint);
    return head !== undefined && head.seenAt < this.#bestAt;
  }

  /** Forgets what is known of these endpoints (`setEndpoints` gave their names other connections). */
  forget(names: readonly string[]): void {
    let held = false;
    for (const name of names) {
      held ||= this.#heads.get(name)?.block === this.#best;
      this.#heads.delete(name);
    }
    if (held) this.#rebest();
  }

  /** Forgets the heads of endpoints not in `names` (they left the pool). */
  retain(names: readonly string[]): void {
    if (this.#heads.size === 0) return;
    const gone: string[] = [];
    for (const name of this.#heads.keys()) if (!names.includes(name)) gone.push(name);
    if (gone.length > 0) this.forget(gone);
  }

  /**
   * The best head from the heads known now, once the one that held it went (forgotten, or reset
   * far lower): before, it stayed, and every endpoint left looked behind a head nobody had.
   */
  #rebest(): void {
    // When the front reached that block: the first of those at it to get there (the head of one
    // reset just now is no advance of the chain, and would make the others look stalled).
    let best = -1;
    let at = -Infinity;
    for (const h of this.#heads.values()) {
      if (h.block > best || (h.block === best && h.advancedAt < at)) at = h.advancedAt;
      if (h.block > best) best = h.block;
    }
    this.#best = best;
    this.#bestAt = at;
  }

  /** Why `endpoint` is lagging at `now`, or undefined when it is not (or its head is unknown). */
  reason(endpoint: string, now: number): LagReason | undefined {
    const head = this.#heads.get(endpoint);
    return head === undefined ? undefined : this.#reason(head, now, this.stallMs);
  }

  #reason(head: Head, now: number, stallMs: number): LagReason | undefined {
    // A head heard before the front last advanced is given one block of doubt: the block the
    // front gained since may be one this endpoint has as well (without it, a node exactly
    // maxLagBlocks behind, or at the tip but heard a block ago, looked one block further behind
    // than it is until asked again).
    if (this.#best - head.block > this.maxLagBlocks + (head.seenAt < this.#bestAt ? 1 : 0)) return 'behind';
    if (now - head.advancedAt >= stallMs && this.#bestAt > head.advancedAt) return 'stalled';
    return undefined;
  }

  /** Endpoints more than maxLagBlocks behind the best head, or stalled while the best advanced. */
  lagging(now: number): string[] {
    const out: string[] = [];
    const stallMs = this.stallMs;
    for (const [name, head] of this.#heads) if (this.#reason(head, now, stallMs) !== undefined) out.push(name);
    return out;
  }

  /**
   * Endpoints that cannot serve `block`: lagging ones, and those whose known head is below it.
   * A block beyond the best head seen (the caller knows of it before the tracker does) is
   * taken as the best head: endpoints at the best head are kept, being the likeliest to have it.
   * `lagging`: `lagging(now)` when the caller has it already.
   */
  cannotServe(block: number | 'latest', now: number, lagging?: readonly string[]): string[] {
    const lag = lagging === undefined ? this.lagging(now) : [...lagging];
    if (block === 'latest') return lag;
    const need = Math.min(block, this.#best);
    const listed = new Set(lag); // a list scan per head cost n² at 1,000 endpoints
    for (const [name, head] of this.#heads) if (head.block < need && !listed.has(name)) lag.push(name);
    return lag;
  }

  snapshot(now: number): HeadSnapshot {
    const stallMs = this.stallMs;
    return {
      best: this.best(),
      blockTimeMs: this.blockTimeMs,
      endpoints: [...this.#heads].map(([name, head]) => ({ name, head: head.block, lagging: this.#reason(head, now, stallMs) })),
    };
  }
}
/** Position of the block parameter for methods that take one. */
const BLOCK_PARAM: ReadonlyMap<string, number> = new Map(Object.entries({
  eth_getBlockByNumber: 0, eth_getBlockTransactionCountByNumber: 0, eth_getUncleCountByBlockNumber: 0,
  eth_getTransactionByBlockNumberAndIndex: 0, eth_getBalance: 1, eth_getCode: 1, eth_getTransactionCount: 1,
  eth_call: 1, eth_estimateGas: 1, eth_getProof: 2, eth_getStorageAt: 2,
  eth_getBlockReceipts: 0, eth_feeHistory: 1, // feeHistory(count, newestBlock, percentiles)
}));

/**
 * Which head a request needs: 'latest' (latest/pending), a block number, or undefined (none:
 * earliest, safe, finalized, a block hash). `eth_getLogs` needs the end of its range (`toBlock`,
 * `latest` when not given, as for the node; `latest` when `fromBlock` is), none with `blockHash`.
 */
export function requiredHead(method: string, params: unknown): number | 'latest' | undefined {
  if (method === 'eth_blockNumber') return 'latest';
  if (method === 'eth_getLogs') return logsHead(Array.isArray(params) ? params[0] : undefined);
  const at = BLOCK_PARAM.get(method); // a Map: `toString` is no method of the table
  if (at === undefined) return undefined;
  return headOf(Array.isArray(params) ? params[at] : undefined);
}

function headOf(tag: unknown): number | 'latest' | undefined {
  if (tag === undefined || tag === 'latest' || tag === 'pending') return 'latest';
  if (typeof tag === 'string' && /^0x[0-9a-fA-F]+$/.test(tag)) {
    const n = Number.parseInt(tag, 16);
    return Number.isSafeInteger(n) ? n : undefined; // a block hash (eth_getBlockReceipts takes one) is no height
  }
  if (tag !== null && typeof tag === 'object' && 'blockNumber' in tag) return headOf((tag as { blockNumber: unknown }).blockNumber);
  return undefined; // earliest, safe, finalized, block hashes
}

function logsHead(filter: unknown): number | 'latest' | undefined {
  if (filter === null || typeof filter !== 'object') return 'latest';
  const f = filter as { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown };
  if (f.blockHash !== undefined) return undefined;
  const to = headOf(f.toBlock);
  return to === 'latest' || headOf(f.fromBlock) === 'latest' ? 'latest' : to;
}

/**
 * The head an answer reveals: eth_blockNumber's result, or the number of the block object a
 * read of `latest` returned. A block asked for by number (a backfill reads old ones, quickly
 * and in order), `pending` (the block after the head) or `safe` / `finalized` says nothing of
 * the head: taken as one, it made an endpoint first heard of that way look far behind, and its
 * reads in order a chain of 10 ms blocks.
 */
export function headFromAnswer(method: string, params: unknown, result: unknown): number | undefined {
  if (method === 'eth_blockNumber' && typeof result === 'string') return hex(result);
  if (method === 'eth_getBlockByNumber' && result !== null && typeof result === 'object') {
    const tag = Array.isArray(params) ? params[0] : undefined;
    if (tag !== undefined && tag !== 'latest') return undefined;
    const n = (result as { number?: unknown }).number;
    return typeof n === 'string' ? hex(n) : undefined;
  }
  return undefined;
}

function hex(s: string): number | undefined {
  return /^0x[0-9a-fA-F]+$/.test(s) ? Number.parseInt(s, 16) : undefined;
}
