/**
 * The read policies the RPC adapters (`endpoint-pool/viem`, `endpoint-pool/ethers`) share:
 * quorum reads and coalescing, configured once per adapter and applied per request.
 *
 * `request(method, params, exec, callQuorum, send)` runs one JSON-RPC request: `send(exec,
 * guard?)` is the adapter's own `pool.execute` of it (its operation must call `guard`
 * with `ctx.endpoint` before sending, when one is given). With neither policy for the
 * method, it is exactly `send(exec)`; a filter method goes to the endpoint that made the
 * filter (./filters.ts). Quorum and coalescing are refused for sends and
 * node-bound methods (see `isSendMethod`): in the options at construction, per call at
 * call time, both with `INVALID_OPTIONS`.
 *
 * With the pool's `hedge` set, a single read (not a send, a filter method, a quorum read or a
 * pinned request) is marked `idempotent`, so the pool hedges it as its `hedge` says; a
 * request whose options say `idempotent` already keeps them.
 *
 * `unfit(method, params)`, when given, names the endpoints a request should not go to now
 * (head-aware routing: behind the chain head, or breaker open). A single read excludes none of
 * them: at each selection (the first and every retry) it asks those that cannot serve now, and
 * those whose head is not known yet, only when no other untried endpoint is free now or before
 * the read's deadline (the call's `avoid`, from `unfit.avoid`, patient: call/routing.ts), so once the nodes that can serve have failed it, a node behind
 * still serves (until the fiftieth session they were excluded for all its attempts, and with
 * the only node at the tip failing the read failed though nodes behind were free); a quorum read
 * asks both kinds last, deciding afresh at each leg (the quorum's `avoid`). Its `refuses`, when given, is
 * asked again as each attempt of a single read (or of a quorum leg) starts in a later
 * millisecond than the read (the leg) was routed (a retry, a turn in a queue): an endpoint that
 * fell behind since, or that `setEndpoints` put under a name the read did not leave out, is
 * refused before anything is sent (`NodeBehindError`, classified as `EndpointTakenError`), and
 * the call moves on.
 */
import type { Clock } from '../base/clock.js';
import { invalidOption, PoolError } from '../base/errors.js';
import type { ExecuteOptions } from '../options/options.js';
import { execWith } from './exec-with.js';
import { defaultDeadlineMs, type Pool } from '../pool.js';
import { poolStateOf } from '../pool-core.js';
import { DEFAULTS } from '../options/defaults.js';
import { resolveRetry } from '../call/plan.js';
import { attemptLimit } from '../call/limits-of-a-call.js';
import { patient } from '../call/routing.js';
import { connectionOf } from './connections.js';
import { Coalescer, requestKey, type CoalesceStats } from './coalesce.js';
import { isSendMethod } from './methods.js';
import { EndpointTakenError, quorumRead, type QuorumLeg } from './quorum.js';
import { nearHeights } from './agree.js';
import { FilterRoutes, isFilterMethod } from './filters.js';

export interface QuorumOptions {
  /** Vote weight needed, per method (e.g. `{ eth_call: 2 }`). Reads only. @default none */
  readonly methods?: Readonly<Record<string, number>>;
  /** Vote weight of each endpoint, by name, like ethers' `FallbackProvider` weights. @default 1 each */
  readonly weights?: Readonly<Record<string, number>>;
  /**
   * Whether two results agree. @default equal JSON values, object keys in any order, a field
   * only one of them has left out (see rpc/agree.ts); for `eth_blockNumber`, heights at most
   * one block apart (like ethers' `FallbackProvider`)
   */
  readonly equals?: (a: unknown, b: unknown, method: string) => boolean;
  /** After this long without an answer, an endpoint's leg stops counting and another endpoint is asked (ethers' `stallTimeout`). `Infinity`: wait. @default 400 */
  readonly stallMs?: number;
}

export interface RpcReadOptions {
  /** Quorum reads. @default none */
  readonly quorum?: QuorumOptions;
  /** Methods whose identical requests in flight share one upstream request (reads only). @default none */
  readonly coalesce?: readonly string[];
}

export interface RpcReadsStats {
  readonly coalesce: CoalesceStats;
  /** Quorum reads started. */
  readonly quorumReads: number;
}

/**
 * The endpoints a request of `method` with `params` should not go to now; `refuses`: why
 * `endpoint` should not serve it now when another outside `exclude` can (see the module comment).
 */
export type Unfit = ((method: string, params: unknown, unheard?: boolean) => readonly string[]) & {
  readonly refuses?: (endpoint: string, method: string, params: unknown, exclude: readonly string[] | undefined) => string | undefined;
  /** A single read's `avoid`: endpoints to ask only when no other can serve it, asked at each selection (undefined: none for this method). */
  readonly avoid?: (method: string, params: unknown, unfitNow?: readonly string[]) => ((endpoint: string) => boolean) | undefined;
};

/** An attempt refused before sending: its endpoint cannot serve the read now, and another can. Classified as `EndpointTakenError`. */
export class NodeBehindError extends EndpointTakenError {
  override readonly name = 'NodeBehindError';
  constructor(endpoint: string, why: string) {
    super(endpoint);
    this.message = `endpoint ${JSON.stringify(endpoint)} fell out of head routing after this read was routed (${why}); nothing was sent to it`;
  }
}

/** Called by the operation with `ctx.endpoint` and `ctx.attempt` before it sends anything; a throw is the attempt's failure. */
export type Guard = (endpoint: string, attempt?: number) => void;

/** `params`, when given, replace the request's (a filter's id as its node knows it: ./filters.ts). */
export type RpcSend<T> = (exec: ExecuteOptions, guard?: Guard, params?: unknown) => Promise<T>;

/** `C`: the pool's connection type (the read layer never looks at it). */
export class RpcReads<C = unknown> {
  readonly #pool: Pool<C>;
  /** The pool's default deadline: a quorum read without one of its own is bounded by it as a whole. */
  readonly #deadlineMs: number;
  readonly #methods: ReadonlyMap<string, number>;
  readonly #weights: ReadonlyMap<string, number>;
  readonly #equals: QuorumOptions['equals'];
  readonly #stallMs: number;
  readonly #clock: Clock;
  readonly #attemptTimeoutMs: number;
  /** The pool's `maxAttempts` as resolved (`AUTO_ATTEMPTS`: unset). */
  readonly #maxAttempts: number;
  readonly #joinWithin: { readonly maxAgeMs: number; readonly now: () => number };
  readonly #coalesce: ReadonlySet<string>;
  readonly #coalescer = new Coalescer();
  readonly #filters: FilterRoutes;
  readonly #voteOf: ((error: unknown) => string | undefined) | undefined;
  readonly #unfit: Unfit | undefined;
  /** The pool's `hedge` is set: single reads are marked idempotent (see the module comment). */
  readonly #hedgeReads: boolean;
  #quorumReads = 0;

  /**
   * `pool`: the pool the requests run on (its endpoints, clock and default deadline);
   * `voteOf`: a key for errors that are a node's answer; `unfit`: the endpoints a request
   * should not go to now; `nodeKey`: what tells two connections to the same node (a filter
   * lives on one), identity by default.
   */
  constructor(options: RpcReadOptions, pool: Pool<C>, voteOf?: (error: unknown) => string | undefined, unfit?: Unfit, nodeKey: (conn: C) => unknown = (c) => c) {
    this.#pool = pool;
    this.#filters = new FilterRoutes((name) => {
      const conn = connectionOf(pool, name);
      return conn === undefined ? undefined : nodeKey(conn);
    });
    this.#deadlineMs = defaultDeadlineMs(pool);
    this.#unfit = unfit;
    this.#clock = pool.clock;
    this.#attemptTimeoutMs = poolStateOf(pool).opts.attemptTimeoutMs;
    this.#maxAttempts = poolStateOf(pool).opts.maxAttempts;
    this.#hedgeReads = poolStateOf(pool).opts.hedgeConfigured;
    this.#joinWithin = { maxAgeMs: DEFAULTS.attemptTimeoutMs, now: () => this.#clock.now() };
    this.#voteOf = voteOf;
    const q = options.quorum;
    if (q !== undefined && (typeof q !== 'object' || q === null)) throw invalidOption('quorum', 'an object ({ methods, weights, equals })', q);
    const methods = new Map<string, number>();
    for (const [method, need] of Object.entries(q?.methods ?? {})) {
      if (isSendMethod(method)) throw invalidOption(`quorum.methods.${method}`, 'a read method (quorum is never used for sends)', method);
      methods.set(method, checkNeed(`quorum.methods.${method}`, need));
    }
    this.#methods = methods;
    // A Map of the object's own keys: looked up on the object, an endpoint named `constructor`
    // or `toString` weighed the prototype's function (NaN: no quorum of such endpoints, ever).
    const weights = new Map<string, number>();
    for (const [name, w] of Object.entries(q?.weights ?? {})) {
      if (typeof w !== 'number' || !Number.isFinite(w) || w < 0) throw invalidOption(`quorum.weights.${name}`, 'a finite number >= 0', w);
      weights.set(name, w);
    }
    this.#weights = weights;
    if (q?.equals !== undefined && typeof q.equals !== 'function') throw invalidOption('quorum.equals', 'a function (a, b, method) => boolean', q.equals);
    this.#equals = q?.equals;
    const stall = q?.stallMs;
    if (stall !== undefined && (typeof stall !== 'number' || Number.isNaN(stall) || stall < 0)) throw invalidOption('quorum.stallMs', 'a number of milliseconds >= 0, or Infinity', stall);
    this.#stallMs = stall ?? 400;
    const c = options.coalesce;
    if (c !== undefined && !Array.isArray(c)) throw invalidOption('coalesce', 'an array of method names', c);
    for (const [i, method] of (c ?? []).entries()) {
      if (typeof method !== 'string' || isSendMethod(method)) throw invalidOption(`coalesce[${i}]`, 'a read method name (sends are never coalesced)', method);
    }
    this.#coalesce = new Set(c ?? []);
  }

  /** Whether the pool's `hedge` makes single reads hedged (the adapters' plain path marks them itself). */
  get hedgeReads(): boolean {
    return this.#hedgeReads;
  }

  /** Whether `method` has neither a quorum nor coalescing configured and is no filter method (then `request` is exactly `send(exec)`, idempotent when `hedgeReads` and a read). */
  isPlain(method: string): boolean {
    // Most adapters configure neither: the sizes spare two look-ups per request.
    return (this.#methods.size === 0 || !this.#methods.has(method)) && (this.#coalesce.size === 0 || !this.#coalesce.has(method)) && !isFilterMethod(method);
  }

  /** Runs one request under the method's policies (see the module comment). */
  async request<T>(method: string, params: unknown, exec: ExecuteOptions, callQuorum: number | undefined, send: RpcSend<T>): Promise<T> {
    let need = this.#methods.get(method);
    if (callQuorum !== undefined) {
      if (isSendMethod(method)) throw invalidOption('quorum', 'a read method (quorum is never used for sends)', method);
      need = checkNeed('quorum', callQuorum);
    }
    if (need !== undefined && exec.pin !== undefined) throw invalidOption('quorum', 'no quorum on a pinned request (a quorum needs several endpoints)', need);
    // As the pool's own calls: not a quorum not met (weights may say so before any leg runs), nor
    // the value of a shared request started before close(), nor a filter's answer made here.
    if (this.#pool.closed) throw new PoolError('CLOSED', 'the pool is closed');
    // A filter's requests go to the endpoint that made it (./filters.ts).
    if (isFilterMethod(method)) return this.#filters.request(method, params, exec, this.#pool.endpointNames, (e, p, started) => send(e, started, p));
    let guard: Guard | undefined;
    const unfit = this.#unfit;
    const own = exec.avoid;
    if (need === undefined && exec.pin === undefined && unfit !== undefined) {
      // The set before the head check (only a request with exclusions of its own needs it).
      const before = exec.exclude?.length ? this.#pool.endpointNames : undefined;
      // Asked for its side effects too: the head questions to lagging endpoints (head-poll.ts).
      const out = unfit(method, params);
      if (before !== undefined) exec = this.#stillIn(exec, before);
      const refuses = unfit.refuses;
      if (refuses !== undefined) guard = this.#refusal(refuses, method, params, exec);
      // Without an `avoid` of its own (a test's), the endpoints unfit now are avoided at each selection.
      // Patient (call/routing.ts): the read waits for a fit endpoint's turn rather than go to one behind.
      const later = unfit.avoid !== undefined ? unfit.avoid(method, params, out) : out.length === 0 ? undefined : patient((ep: string) => out.includes(ep));
      if (later !== undefined) exec = execWith(exec, { avoid: own === undefined ? later : patient((ep: string) => later(ep) || own(ep)) });
    }
    if (this.#hedgeReads && need === undefined && exec.pin === undefined && exec.idempotent === undefined && !isSendMethod(method)) exec = execWith(exec, { idempotent: true });
    const go = (e: ExecuteOptions): Promise<T> => (need === undefined ? send(e, guard) : this.#quorum(method, params, need, e, send));
    // A caller's own `avoid` is a function, no part of a key: such a request shares nothing.
    if (!this.#coalesce.has(method) || own !== undefined) return go(exec);
    // Only callers on the same deadline and the same policy share a request: a joiner then never
    // outlasts the request it waits on nor fails at a shorter deadline than its own, and a caller's
    // own retry mode, attempt timeout, backoff or breaker mode never decides another's outcome.
    const deadlineMs = exec.deadlineMs ?? this.#deadlineMs;
    const key = requestKey(method, params, exec.pin, need, exec.exclude === undefined ? undefined : JSON.stringify(exec.exclude), deadlineMs, policyOf(exec));
    // With no deadline and no attempt timeout, nothing ends a request that is never answered:
    // a caller then joins only one started within the default attempt timeout.
    const unbounded = deadlineMs === Infinity && (exec.attemptTimeoutMs ?? this.#attemptTimeoutMs) === Infinity;
    return this.#coalescer.run(key, exec.signal, (signal) => go(execWith(exec, { signal })), unbounded ? this.#joinWithin : undefined);
  }

  stats(): RpcReadsStats {
    return { coalesce: this.#coalescer.stats(), quorumReads: this.#quorumReads };
  }

  /**
   * `exec` without the exclusions of endpoints that left the pool since `before` (the head check
   * asks endpoints, and a listener or a node's answer may change the set meanwhile): `exclude`
   * takes only names of the pool, and one that was never in it is still refused.
   */
  #stillIn(exec: ExecuteOptions, before: readonly string[]): ExecuteOptions {
    const x: unknown = exec.exclude;
    if (!Array.isArray(x) || x.length === 0) return exec;
    const now = this.#pool.endpointNames;
    const kept = x.filter((n) => !before.includes(n) || now.includes(n));
    return kept.length === x.length ? exec : execWith(exec, { exclude: kept });
  }

  /**
   * The guard of a routed single read or quorum leg (`held`: endpoints other legs hold): an attempt
   * that starts after the millisecond it was routed in asks `refuses` again. Only for another
   * endpoint the read has not tried yet (one it tried, a hung first attempt at the tip, is no reason
   * to refuse the last that can answer), and never on a single read's last attempt: an answer from
   * a node behind beats none, as when it was routed. A leg's last attempt is refused like any: the
   * quorum asks the endpoint that can serve with another leg (with `maxAttempts: 2`, two legs whose
   * first attempts hung agreed on the answer of two nodes behind).
   */
  #refusal(refuses: NonNullable<Unfit['refuses']>, method: string, params: unknown, exec: ExecuteOptions, held?: (endpoint: string) => boolean): Guard {
    const clock = this.#clock;
    const at = clock.now();
    const used = exec.exclude === undefined ? [] : [...exec.exclude];
    return (endpoint, attempt) => {
      // The call's cap as the pool counts it (with its endpoints now, not those that left under the call: a guess
      // that errs toward serving), read once the pool has taken the call's options.
      const later = clock.now() - at >= 1 && (held !== undefined || (attempt ?? 1) < attemptLimit(poolStateOf(this.#pool), resolveRetry('retry', exec.retry, this.#maxAttempts)));
      const why = later ? refuses(endpoint, method, params, held === undefined ? used : [...used, ...this.#pool.endpointNames.filter(held)]) : undefined;
      if (!used.includes(endpoint)) used.push(endpoint);
      if (why !== undefined) throw new NodeBehindError(endpoint, why);
    };
  }

  #quorum<T>(method: string, params: unknown, need: number, exec: ExecuteOptions, send: RpcSend<T>): Promise<T> {
    // The read splits its deadline among its legs before any leg could check it (the legs check the rest) …
    const d: unknown = exec.deadlineMs;
    if (d !== undefined && !(typeof d === 'number' && d > 0)) return Promise.reject(invalidOption('deadlineMs', 'a number of milliseconds > 0, or Infinity', d));
    // … and its endpoints among what `exclude` leaves (a string would be searched as text).
    const x: unknown = exec.exclude;
    if (x !== undefined && !(Array.isArray(x) && x.every((n) => typeof n === 'string'))) return Promise.reject(invalidOption('exclude', 'an array of endpoint names', x));
    this.#quorumReads++;
    const weights = this.#weights;
    const equals = this.#equals;
    const unfit = this.#unfit;
    const refuses = unfit?.refuses;
    // A leg's later attempt asks head routing again, as a single read's does; endpoints other legs hold count as tried.
    const leg: QuorumLeg<T> =
      refuses === undefined
        ? (e, guard) => send(e, guard)
        : (e, guard, held) => {
            const refusal = this.#refusal(refuses, method, params, e, held);
            return send(e, (ep, attempt) => {
              refusal(ep, attempt);
              guard(ep);
            });
          };
    return quorumRead<T>({
      method,
      need,
      endpoints: () => this.#pool.endpointNames,
      weightOf: (ep) => weights.get(ep) ?? 1,
      equals: equals !== undefined ? (a, b) => equals(a, b, method) : method === 'eth_blockNumber' ? nearHeights : undefined,
      voteOf: this.#voteOf,
      stallMs: this.#stallMs,
      // Endpoints whose head is not known yet (added, or given another node) are asked after those known fit.
      // Asked about each endpoint as a leg launches: worked out once a job, not once an endpoint
      // (167 ms of CPU a read of three legs at 1,000 endpoints: bench/paths/heads-scale.mjs --quorum).
      avoid: unfit === undefined ? undefined : perJob(() => new Set(unfit(method, params, true))),
      clock: this.#clock,
      // Bounded as a whole: each leg gets what is left of the read's deadline, the pool's if it has none.
      exec: exec.deadlineMs === undefined ? execWith(exec, { deadlineMs: this.#deadlineMs }) : exec,
      leg,
    });
  }
}

/** A predicate over a set worked out at its first question in a job and kept until the job ends. */
function perJob(make: () => ReadonlySet<string>): (endpoint: string) => boolean {
  let set: ReadonlySet<string> | undefined;
  return (endpoint) => {
    if (set === undefined) {
      set = make();
      queueMicrotask(() => {
        set = undefined;
      });
    }
    return set.has(endpoint);
  };
}

/** The per-call options besides routing and deadline that change how a call runs, as a key part (`undefined`: the pool's). */
function policyOf(exec: ExecuteOptions): string | undefined {
  const { retry, attemptTimeoutMs, backoff, breakerMode } = exec;
  if (retry === undefined && attemptTimeoutMs === undefined && backoff === undefined && breakerMode === undefined) return undefined;
  return JSON.stringify([retry, attemptTimeoutMs, backoff, breakerMode]);
}

function checkNeed(field: string, need: unknown): number {
  if (typeof need !== 'number' || !Number.isFinite(need) || need <= 0) throw invalidOption(field, 'a quorum weight > 0', need);
  return need;
}
