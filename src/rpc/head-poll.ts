/**
 * Head-aware routing as the RPC adapters use it: a `HeadTracker` fed by the adapter's
 * answers and by a cheap poll, and the endpoints a read should not go to now.
 *
 * The poll (`pollMs` > 0) asks every endpoint for `eth_blockNumber` once per period, each as
 * a pinned `pool.execute` with no retry (so breakers, rate limits and stats see it like any
 * call), skipping endpoints whose breaker is open and endpoints whose previous poll has not
 * answered yet. Its timer is a background one (it never keeps the process alive) and
 * `stop()` ends it; so does the pool's `close()`, at once (the adapters hand `stop` to the
 * pool's close hook; a poll refused with `CLOSED` stops it too). Poll or not,
 * the same question goes to a lagging endpoint alone, at most once a block time, while
 * requests come (nothing when the pool is idle).
 */
import type { Clock, TimerHandle } from '../base/clock.js';
import { invalidOption, isPoolError } from '../base/errors.js';
import type { ExecuteOptions } from '../options/options.js';
import { checkKeys } from '../options/validate.js';
import { HeadTracker, headFromAnswer, requiredHead, type HeadOptions, type HeadSnapshot } from './heads.js';
import type { Unfit } from './reads.js';
import { defaultDeadlineMs, PoolCore } from '../pool-core.js';
import { patient } from '../call/routing.js';

/** What the routing needs from the pool. */
export interface HeadPool {
  readonly clock: Clock;
  readonly endpointNames: readonly string[];
  breakerState(name: string): unknown;
}

/** Sends `eth_blockNumber` to one endpoint with these options (pinned, no retry); resolves with the result. */
export type PollOne = (exec: ExecuteOptions) => Promise<unknown>;

/** A lagging endpoint is asked for its head at most once a block time, and never more often than this. */
const RECHECK_MIN_MS = 100;
/**
 * A head question's deadline when the pool has none: one question per name is out at a time,
 * so a question that never settled (a transport that hangs, with no bound) silenced that
 * endpoint's head for good, and with it the rechecks that bring a lagging endpoint back.
 */
const QUESTION_MS = 30_000;

/** The period of those questions before the block time is known. */
const RECHECK_UNKNOWN_MS = 10_000;

const KEYS = { maxLagBlocks: true, stallMs: true, stallBlocks: true, blockTimeMs: true, pollMs: true } as const;

/** Validates `heads` options once, naming the field on error. */
export function checkHeadOptions(o: unknown): HeadOptions {
  if (typeof o !== 'object' || o === null) throw invalidOption('heads', 'an object ({ maxLagBlocks, pollMs, ... })', o);
  checkKeys('heads', o as Record<string, unknown>, KEYS);
  const h = o as HeadOptions;
  const num = (field: keyof HeadOptions, min: number, integer = false) => {
    const v = h[field];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < min || (integer && !Number.isInteger(v)))) {
      throw invalidOption(`heads.${field}`, `a finite ${integer ? 'integer' : 'number'} >= ${min}`, v);
    }
  };
  num('maxLagBlocks', 0, true);
  num('stallMs', 0);
  num('stallBlocks', 0);
  num('blockTimeMs', 0);
  num('pollMs', 0);
  return h;
}

export class HeadRouting {
  readonly tracker: HeadTracker;
  readonly #pool: HeadPool;
  readonly #pollMs: number;
  readonly #pollOne: PollOne;
  readonly #polling = new Set<string>();
  /**
   * Names whose question (#ask) is out and that lost their node since (removed or replaced):
   * its answer does not count. At most one question per name is out, so an entry goes when its
   * question settles (a count per name ever replaced, kept for good, was ~150 B per swap).
   */
  readonly #overtaken = new Set<string>();
  /** When each lagging endpoint was last asked for its head outside a poll. */
  readonly #rechecked = new Map<string, number>();
  /** Head checks sent so far: each runs the pool's operation, and user code with it (listeners, the node's transport). */
  #asked = 0;
  /** Names `setEndpoints` removed or gave other connections since the last look (`connectionWatch`). */
  readonly #replaced: (() => readonly string[] | undefined) | undefined;
  #timer: TimerHandle | undefined;
  #stopped = false;
  /** Aborts the questions out when routing stops: no caller waits for them, and the pool's `close()` would. */
  #questions: AbortController | undefined;
  /** Whether the pool sets no deadline: each question then carries `QUESTION_MS`. */
  readonly #unbounded: boolean;

  /** `replaced`: what `connectionWatch(pool)` returns (rpc/connections.ts); what is known of a replaced endpoint is forgotten. */
  constructor(options: HeadOptions, pool: HeadPool, pollOne: PollOne, replaced?: () => readonly string[] | undefined) {
    this.tracker = new HeadTracker(checkHeadOptions(options));
    this.#pool = pool;
    this.#pollMs = options.pollMs ?? 0;
    this.#pollOne = pollOne;
    this.#replaced = replaced;
    this.#unbounded = pool instanceof PoolCore && defaultDeadlineMs(pool) === Infinity;
    // The first poll on the next turn: nothing is sent from inside the adapter's constructor.
    if (this.#pollMs > 0) this.#timer = pool.clock.setTimeout(() => this.#tick(), 0, true);
  }

  /**
   * When a request of `method` is sent, if its answer may reveal a head (else -Infinity, and no
   * clock read): `observe`'s `sentAt`, which tells a node that went back from an answer out of order.
   */
  sending(method: string): number {
    return method === 'eth_blockNumber' || method === 'eth_getBlockByNumber' ? this.#pool.clock.now() : -Infinity;
  }

  /** Feeds an answer the adapter got from `endpoint` to a request sent at `sentAt` (`sending`). */
  observe(endpoint: string, method: string, params: unknown, result: unknown, sentAt?: number): void {
    const block = headFromAnswer(method, params, result);
    if (block === undefined) return;
    // The set's changes are looked at first: else a name added and then given another node
    // between two looks, with a head recorded for the first node, is not in the set the next
    // look compares against, and the second node kept that head (seed 2026120709).
    this.#sync();
    this.tracker.observe(endpoint, block, this.#pool.clock.now(), sentAt);
  }

  /**
   * The endpoints a request should not go to now: those that cannot serve the block it needs,
   * and open breakers. Only endpoints of the pool are named (the heads of those `setEndpoints`
   * removed are forgotten here). A lagging endpoint is asked for its head at most once a block
   * time while requests come (`#recheck`): left out of the reads that would tell, it would
   * otherwise stay out once it has caught up (with no poll, for good; with one, until the next
   * poll, while one endpoint's fresh answer makes every other look behind). With `unheard`
   * (a quorum leg, which may ask them later), also those whose head is not known yet while another's is.
   */
  unfit(method: string, params: unknown, unheard?: boolean): string[] {
    const names = this.#pool.endpointNames;
    const now = this.#pool.clock.now();
    this.#forget(names);
    const need = requiredHead(method, params);
    // Computed once, for what the request avoids and for the questions to lagging endpoints.
    const lagging = this.tracker.lagging(now);
    const out = need === undefined ? [] : this.tracker.cannotServe(need, now, lagging);
    // An endpoint whose head is unknown (new to the pool, or given another connection) is not
    // named here but by `avoid` (and, with `unheard`, below). `#recheck` asks it now.
    const asked = this.#asked;
    if (!this.#stopped) this.#recheck(now, lagging, names);
    // A check sent by `#recheck` ran user code (a listener, the node's transport), which may have
    // changed the set: then the set as it is now (a name that left is no exclusion: the call's
    // `exclude` takes only names of the pool).
    const live = this.#asked === asked ? names : this.#pool.endpointNames;
    const fit = live === names ? out : out.filter((name) => live.includes(name));
    const known = unheard === true && need !== undefined && this.tracker.best() !== undefined;
    const listed = new Set(fit);
    for (const name of live) if ((isOpen(this.#pool.breakerState(name)) || (known && this.tracker.head(name) === undefined)) && !listed.has(name)) fit.push(name);
    return fit;
  }

  /**
   * A single read's `avoid` for `method`, asked at each selection: endpoints whose head is not
   * known yet while another's is (added to the pool, or given another connection, and not heard
   * from since), and those that cannot serve it now (lagging, or a head below the block asked
   * for). A retry then goes to a node that can serve while one is free, spending no attempt on a
   * refusal. Undefined for a method that needs no head. `unfitNow`: what `unfit` answered for
   * this request just now, which serves its first selection (in the same job).
   */
  avoid(method: string, params: unknown, unfitNow?: readonly string[]): ((endpoint: string) => boolean) | undefined {
    const need = requiredHead(method, params);
    if (need === undefined) return undefined;
    const drop = (): void => {
      out = undefined;
    };
    // Worked out once for each selection, which asks about every endpoint in one go (a clock
    // read per endpoint cost 100 µs a selection at 1,000 endpoints): kept until the current job
    // ends, or `setEndpoints` replaces a node.
    let out: ReadonlySet<string> | undefined;
    if (unfitNow !== undefined) {
      out = new Set(unfitNow);
      queueMicrotask(drop);
    }
    let known = this.tracker.best() !== undefined;
    const avoid = (endpoint: string): boolean => {
      if (this.#sync() || out === undefined) {
        if (out === undefined) queueMicrotask(drop);
        out = new Set(this.tracker.cannotServe(need, this.#pool.clock.now()));
        known = this.tracker.best() !== undefined;
      }
      return out.has(endpoint) || (known && this.tracker.head(endpoint) === undefined);
    };
    return patient(avoid);
  }

  /**
   * Why `endpoint` should not serve this request now (it lags, or its head is below the block),
   * when another endpoint of the pool outside `exclude` (the read's exclusions and the endpoints
   * it tried) can; undefined otherwise. For an attempt that starts after its call was routed: a
   * retry long after, on a node that fell behind or that `setEndpoints` put under a name routing
   * had not left out (the call's exclusions are its start's).
   */
  refuses(endpoint: string, method: string, params: unknown, exclude: readonly string[] | undefined): string | undefined {
    const need = requiredHead(method, params);
    if (need === undefined) return undefined;
    const names = this.#pool.endpointNames;
    const now = this.#pool.clock.now();
    this.#forget(names);
    const out = this.tracker.cannotServe(need, now);
    if (!out.includes(endpoint)) return undefined;
    const other = names.some((n) => n !== endpoint && !out.includes(n) && exclude?.includes(n) !== true && this.#open(n) === false);
    if (!other) return undefined;
    const head = this.tracker.head(endpoint)!;
    const why = this.tracker.reason(endpoint, now);
    if (why === undefined) return `its head (${head}) is below the block asked for`;
    return why === 'stalled' ? `its head (${head}) stopped while the best advanced` : `its head (${head}) is ${this.tracker.best()! - head} blocks behind the best`;
  }

  /** Whether `name`'s breaker is open; undefined once `name` has left the pool (an earlier check of a `#recheck` may have removed it). */
  #open(name: string): boolean | undefined {
    try {
      return isOpen(this.#pool.breakerState(name));
    } catch {
      return undefined;
    }
  }

  snapshot(): HeadSnapshot {
    this.#forget(this.#pool.endpointNames);
    return this.tracker.snapshot(this.#pool.clock.now());
  }

  /**
   * Forgets what is known of endpoints that left the pool, and of those `setEndpoints` gave
   * another connection (a node behind would otherwise inherit its predecessor's head, and
   * serve reads of latest until it stalled). Between two changes of the set there is nothing
   * to forget: the sweep of every record ran on each answer and each request, a cost in the
   * square of the endpoints (77 % of the CPU with 300 endpoints polled).
   */
  #forget(names: readonly string[]): void {
    if (!this.#sync()) return;
    this.tracker.retain(names);
    if (this.#rechecked.size !== 0) for (const name of this.#rechecked.keys()) if (!names.includes(name)) this.#rechecked.delete(name);
  }

  /** Forgets what is known of the names `setEndpoints` removed or gave another connection since the last look (one comparison while the set is unchanged); whether any was (always, with no watch). */
  #sync(): boolean {
    if (this.#replaced === undefined) return true;
    const replaced = this.#replaced();
    if (replaced === undefined) return false;
    this.tracker.forget(replaced);
    for (const name of replaced) {
      this.#rechecked.delete(name);
      if (this.#polling.has(name)) this.#overtaken.add(name);
    }
    return true;
  }

  /** Stops the poll. Idempotent. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#pool.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    // A question out held a plain `close()` open until its attempt timeout (one to a new node whose
    // chain question answered late: swaps generator, seed 42760).
    if (this.#polling.size > 0) this.#questions?.abort();
  }

  #tick(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    for (const name of this.#pool.endpointNames) this.#ask(name);
    if (!this.#stopped) this.#timer = this.#pool.clock.setTimeout(() => this.#tick(), this.#pollMs, true);
  }

  /**
   * Asks each lagging endpoint for its head: once a block time (10 s before one is known, 100 ms
   * at least) while what is known of it predates the best head's last advance, else once a stall
   * time (it was heard from since and lagged, but may catch up while the front stands still).
   * Once any head was known (all may have been forgotten since), an endpoint whose head is not
   * (new to the pool, or given another connection) is asked once a block time too, until it answers.
   */
  #recheck(now: number, lagging: readonly string[], names: readonly string[]): void {
    const tracker = this.tracker;
    const unknown = tracker.seen && tracker.known < names.length;
    if (lagging.length === 0 && !unknown) return;
    const often = Math.max(RECHECK_MIN_MS, tracker.blockTimeMs ?? RECHECK_UNKNOWN_MS);
    // Once a stall time, but no more than `often` while the block time is unknown (its stall time, 30 s, is a guess).
    const seldom = tracker.blockTimeMs === undefined ? often : Math.max(often, tracker.stallMs);
    let nearest = Infinity;
    const best = tracker.best()!;
    for (const name of lagging) {
      const last = this.#rechecked.get(name);
      if (last !== undefined && now - last < (tracker.stale(name) ? often : seldom)) continue;
      this.#rechecked.set(name, now);
      this.#ask(name);
      nearest = Math.min(nearest, best - tracker.head(name)!);
    }
    // A front far ahead of every other head is asked again once a stall time when nothing was
    // heard from it since: it may be a wrong answer, which only the node's own next answer undoes
    // (heads.ts), and reads of balances reveal no head.
    if (lagging.length > 0 && tracker.aloneAhead()) {
      for (const [name, seenAt] of tracker.leaders()) {
        const last = this.#rechecked.get(name);
        if (now - seenAt < seldom || (last !== undefined && now - last < seldom)) continue;
        this.#rechecked.set(name, now);
        this.#ask(name);
      }
    }
    // An endpoint at the front heard from a while ago is asked at the same moment when the
    // blocks produced since could make the fresh answer pass it: the answers then compare heads
    // of one instant. Without it, a node one block behind (asked) and one at the tip (heard a
    // block or two before) took turns looking behind, and with no poll and maxLagBlocks 0 the
    // node at the tip got a third of the reads of latest (seed 2026120601).
    // The others heard from as long ago are asked with them: a fresh front leaves every head heard
    // before it stale, and one not heard from for a stall time then looked stalled (a node one
    // block late was left out of every other read when reads came once two block times, seed 2026120708).
    if (nearest !== Infinity) {
      const blockMs = tracker.blockTimeMs ?? RECHECK_MIN_MS;
      let refresh = false;
      for (const [name, seenAt] of tracker.leaders()) {
        const age = now - seenAt;
        if (age >= RECHECK_MIN_MS && nearest <= tracker.maxLagBlocks + Math.ceil(age / blockMs) && !lagging.includes(name)) refresh = true;
      }
      if (refresh) for (const [name, seenAt] of tracker.heard()) if (now - seenAt >= RECHECK_MIN_MS && !lagging.includes(name)) this.#ask(name);
    }
    if (unknown) {
      for (const name of names) {
        if (tracker.head(name) !== undefined) continue;
        const last = this.#rechecked.get(name);
        if (last !== undefined && now - last < often) continue;
        this.#rechecked.set(name, now);
        this.#ask(name);
      }
    }
  }

  /** One pinned `eth_blockNumber` to `name`, unless its breaker is open or its last one is still out. */
  #ask(name: string): void {
    if (this.#polling.has(name) || this.#open(name) !== false) return;
    this.#polling.add(name);
    this.#asked++;
    const sentAt = this.#pool.clock.now();
    let pending: Promise<unknown>;
    try {
      const signal = (this.#questions ??= new AbortController()).signal;
      pending = this.#pollOne(this.#unbounded ? { pin: name, retry: 'none', deadlineMs: QUESTION_MS, signal } : { pin: name, retry: 'none', signal });
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (result) => {
        // Only if the name still stands for the node asked: the set's changes first, while the
        // question still counts as out (#sync marks it overtaken).
        this.#forget(this.#pool.endpointNames);
        this.#polling.delete(name);
        if (!this.#overtaken.delete(name)) this.observe(name, 'eth_blockNumber', [], result, sentAt);
      },
      (error: unknown) => {
        this.#polling.delete(name);
        this.#overtaken.delete(name);
        if (isPoolError(error) && error.code === 'CLOSED') this.stop();
      },
    );
  }
}

/** `breakerState` answers an object only when open. */
function isOpen(state: unknown): boolean {
  return typeof state === 'object' && state !== null;
}

/** What `RpcReads` takes of head routing: the endpoints a read leaves out, and the refusal of a later attempt. */
export function unfitOf(routing: HeadRouting): Unfit {
  return Object.assign((method: string, params: unknown, unheard?: boolean) => routing.unfit(method, params, unheard), {
    refuses: (endpoint: string, method: string, params: unknown, exclude: readonly string[] | undefined) => routing.refuses(endpoint, method, params, exclude),
    avoid: (method: string, params: unknown, unfitNow?: readonly string[]) => routing.avoid(method, params, unfitNow),
  });
}
