/**
 * Quorum reads: one read sent to several distinct endpoints through the pool, resolved
 * when endpoints whose vote weights add up to `need` agree on the answer.
 *
 * Each "leg" is one ordinary `pool.execute` (breakers, limits, retries, deadline as for
 * any call). Legs are launched one after another with `exclude` naming every endpoint
 * an earlier leg has touched, so that in the common case (the pool selects and starts
 * an attempt synchronously) each leg lands on a new endpoint. The adapter calls `guard`
 * with the attempt's endpoint before sending; if another leg already holds that endpoint
 * (a leg's retry chose it after the leg's `exclude` was fixed), `guard` throws an
 * `EndpointTakenError`, which adapters classify `unsupported`: the pool moves that leg on
 * to another endpoint at once, and no request goes upstream.
 *
 * Launching is lazy, like ethers' `FallbackProvider`: legs are added while the weight
 * still in flight (an unplaced leg counts 1) plus the heaviest group of agreeing answers
 * cannot reach `need`. A leg that has not answered after `stallMs` stops counting as in
 * flight (its answer is still taken if it comes), so a hanging endpoint costs one stall,
 * not an attempt timeout. Answers are grouped by `equals` (default: `sameAnswer`, equal JSON
 * values up to key order and fields only one answer has). A leg that ends with a node's
 * error answer votes too when `voteOf` gives the error a key (so three nodes reverting alike
 * is a quorum on the revert). The read resolves with the first answer of the winning group
 * (or rejects with its error), aborts the legs still running, and fails with `QuorumError`
 * (`QUORUM_NOT_MET`) when no endpoint is left to ask and no group is heavy enough. Endpoints
 * the live `avoid` predicate names (lagging behind the chain head, breaker open) are asked
 * only once no other endpoint is left, or once a leg that left them out reached no endpoint
 * (the others open or probing). A leg refused before sending does not end the read's legs.
 */
import type { Clock, TimerHandle } from '../base/clock.js';
import { PoolError } from '../base/errors.js';
import { UNSENT, type ClassifyResult } from '../base/classify.js';
import type { ExecuteOptions } from '../options/options.js';
import { execWith } from './exec-with.js';
import { QuorumError, type QuorumAnswer } from './quorum-error.js';
import { redactUrls } from './redact.js';
import { sameAnswer } from './agree.js';

const TAKEN = Symbol.for('endpoint-pool.EndpointTakenError');

/** Thrown by `guard` when a leg's attempt lands on an endpoint another leg holds. Classify it `unsupported`. */
export class EndpointTakenError extends Error {
  override readonly name: string = 'EndpointTakenError';
  readonly endpoint: string;
  constructor(endpoint: string) {
    super(`endpoint ${JSON.stringify(endpoint)} already serves another leg of this quorum read`);
    this.endpoint = endpoint;
  }
  /** @internal */
  get [TAKEN](): true {
    return true;
  }
}

/** How the adapters classify an `EndpointTakenError` (and its kinds): `unsupported`, unsent (the node learns nothing from it). */
export const TAKEN_CLASS = { class: 'unsupported', [UNSENT]: true } as ClassifyResult;

export function isEndpointTaken(error: unknown): error is EndpointTakenError {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[TAKEN] === true;
}

/**
 * One leg: a `pool.execute` with these options whose operation calls `guard(ctx.endpoint)` first;
 * `held(endpoint)`: whether another leg holds that endpoint now.
 */
export type QuorumLeg<T> = (exec: ExecuteOptions, guard: (endpoint: string) => void, held: (endpoint: string) => boolean) => Promise<T>;

export interface QuorumRead<T> {
  readonly method: string;
  /** Vote weight needed. */
  readonly need: number;
  /** The pool's endpoints now (`pool.endpointNames`), asked at each leg: `setEndpoints` may change them while the read runs. */
  readonly endpoints: () => readonly string[];
  /** @default 1 per endpoint */
  readonly weightOf: (endpoint: string) => number;
  /** @default `sameAnswer` (./agree.ts): equal JSON values, keys in any order, a field only one has left out */
  readonly equals?: ((a: T, b: T) => boolean) | undefined;
  /** A key for a leg's error when it is a node's answer (a vote); `undefined` for a failure. */
  readonly voteOf?: ((error: unknown) => string | undefined) | undefined;
  /** After this long without an answer a leg no longer counts as in flight. `Infinity`: never. */
  readonly stallMs: number;
  /** The pool's clock, for the stall timers. */
  readonly clock: Clock;
  /**
   * Endpoints to leave to last (lagging, unhealthy): asked, live at each leg's launch, only
   * once no other endpoint is left. @default none
   */
  readonly avoid?: ((endpoint: string) => boolean) | undefined;
  /** The caller's options (signal, exclude, deadline, retry); `pin` is not allowed. */
  readonly exec: ExecuteOptions;
  readonly leg: QuorumLeg<T>;
}

interface Leg {
  endpoint: string | undefined;
  /** Its `exclude` left out endpoints `avoid` named. */
  avoiding: boolean;
  done: boolean;
  stalled: boolean;
  timer: TimerHandle | undefined;
}

interface Group<T> {
  readonly kind: 'result' | 'error';
  readonly first: T | unknown;
  readonly key: string | undefined;
  weight: number;
}

export function quorumRead<T>(q: QuorumRead<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => new QuorumRun(q, resolve, reject).start());
}

class QuorumRun<T> {
  readonly #q: QuorumRead<T>;
  readonly #resolve: (v: T) => void;
  readonly #reject: (e: unknown) => void;
  readonly #controller = new AbortController();
  /** Endpoint → the leg that holds it. */
  readonly #touched = new Map<string, Leg>();
  readonly #legs: Leg[] = [];
  readonly #groups: Group<T>[] = [];
  readonly #answers: QuorumAnswer[] = [];
  #lastFailure: unknown;
  #settled = false;
  #launching = false;
  /** A leg ended without reaching any endpoint: the pool cannot place another one either. */
  #stuck = false;
  /** A leg failed `CLOSED`: the pool takes no more legs, and a read not met fails with that error. */
  #closed: PoolError | undefined;
  /**
   * A leg that left out what `avoid` names ended without reaching any endpoint (those it could use
   * were open or had their probe out): later legs may use every endpoint.
   */
  #lastResort = false;
  readonly #startedAt: number;
  /** The pool's endpoints when the read started. */
  readonly #atStart: readonly string[];

  constructor(q: QuorumRead<T>, resolve: (v: T) => void, reject: (e: unknown) => void) {
    this.#q = q;
    this.#startedAt = q.clock.now();
    this.#atStart = q.endpoints();
    this.#resolve = resolve;
    this.#reject = reject;
  }

  start(): void {
    const signal = this.#q.exec.signal;
    if (signal !== undefined) {
      if (signal.aborted) return this.#fail(new PoolError('ABORTED', 'the call was aborted before it started', { cause: signal.reason }));
      signal.addEventListener('abort', this, { once: true });
    }
    const total = this.#candidates().reduce((sum, ep) => sum + this.#q.weightOf(ep), 0);
    if (total < this.#q.need) {
      return this.#fail(this.#notMet(`the endpoints it may use weigh ${total} in all`));
    }
    this.#evaluate();
  }

  /** The caller's signal fired. */
  handleEvent(): void {
    this.#fail(new PoolError('ABORTED', 'the call was aborted', { cause: this.#q.exec.signal?.reason }));
  }

  #candidates(live: readonly string[] = this.#q.endpoints()): string[] {
    const excluded = this.#q.exec.exclude ?? [];
    return live.filter((ep) => !excluded.includes(ep) && !this.#touched.has(ep));
  }

  #launch(): boolean {
    if (this.#stuck) return false;
    const fresh = this.#candidates();
    if (fresh.length === 0) return false;
    const exec = this.#legExec();
    if (exec === undefined) return false;
    // What head routing would rather not use. Asking it can run a request (a head question),
    // and a request can change the pool's endpoints (swaps generator, seed 42585): the names
    // below are read after it.
    const avoid = this.#q.avoid;
    const avoided = avoid === undefined ? [] : fresh.filter((ep) => safe(avoid, ep));
    const live = new Set(this.#q.endpoints());
    // Names only endpoints of the pool: one that left it while the read ran (`setEndpoints`)
    // would be an unknown name, INVALID_OPTIONS to the pool. A name the caller got wrong stays;
    // an endpoint a leg touched was the pool's, added since the read began or not (one added and
    // gone again while the read ran failed it: swaps generator, seed 42570).
    const gone = (ep: string): boolean => !live.has(ep) && this.#atStart.includes(ep);
    const exclude = (this.#q.exec.exclude ?? []).filter((ep) => !gone(ep));
    for (const ep of this.#touched.keys()) if (live.has(ep) && !exclude.includes(ep)) exclude.push(ep);
    const avoiding = !this.#lastResort && avoided.length > 0 && avoided.length < fresh.length;
    if (avoiding) for (const ep of avoided) if (live.has(ep)) exclude.push(ep);
    const leg: Leg = { endpoint: undefined, avoiding, done: false, stalled: false, timer: undefined };
    this.#legs.push(leg);
    const guard = (endpoint: string) => {
      if (held(endpoint)) throw new EndpointTakenError(endpoint);
      this.#touched.set(endpoint, leg);
      leg.endpoint = endpoint;
    };
    const held = (endpoint: string): boolean => {
      const holder = this.#touched.get(endpoint);
      return holder !== undefined && holder !== leg;
    };
    let pending: Promise<T>;
    try {
      pending = this.#q.leg(execWith(exec, { exclude, signal: this.#controller.signal }), guard, held);
    } catch (error) {
      pending = Promise.reject(error);
    }
    if (this.#q.stallMs !== Infinity) {
      leg.timer = this.#q.clock.setTimeout(() => {
        leg.timer = undefined;
        leg.stalled = true;
        this.#evaluate();
      }, this.#q.stallMs);
    }
    pending.then(
      (value) => this.#answered(leg, value),
      (error: unknown) => this.#errored(leg, error),
    );
    return true;
  }

  #legExec(): ExecuteOptions | undefined {
    const exec = this.#q.exec;
    const d = exec.deadlineMs;
    if (d === undefined || d === Infinity) return exec;
    const left = d - (this.#q.clock.now() - this.#startedAt);
    return left > 0 ? execWith(exec, { deadlineMs: left }) : undefined;
  }

  #endLeg(leg: Leg): void {
    leg.done = true;
    if (leg.timer !== undefined) this.#q.clock.clearTimeout(leg.timer);
    leg.timer = undefined;
  }

  #answered(leg: Leg, value: T): void {
    this.#endLeg(leg);
    if (this.#settled) return;
    // An answer from no known endpoint (a leg that never called `guard`) weighs nothing: more
    // legs like it would only loop.
    if (leg.endpoint === undefined) this.#stuck = true;
    this.#vote(leg, 'result', value, undefined);
    this.#evaluate();
  }

  #errored(leg: Leg, error: unknown): void {
    this.#endLeg(leg);
    if (this.#settled) return;
    // The caller's options are wrong: every leg would say so, and no node was asked. The read
    // fails with that error, not as a quorum not met.
    if (error instanceof PoolError && error.code === 'INVALID_OPTIONS') return this.#fail(error);
    if (error instanceof PoolError && error.code === 'CLOSED') {
      this.#closed = error; // the read, not met, fails with it
      this.#stuck = true; // and launches no further leg
    }
    // A leg refused before sending (another leg took its endpoint while it queued, or the node fell
    // behind) was placed: another leg may be. Before, with `retry: 'none'`, two legs queued for a
    // permit both went to the first endpoint, and the read failed with the second's collision.
    if (leg.endpoint === undefined && !isEndpointTaken(error) && !isEndpointTaken((error as { cause?: unknown } | undefined)?.cause)) {
      // One that left out the endpoints `avoid` names may have had none else to go to (a quorum read
      // failed at once, a node behind that could answer never asked, the others' breakers open).
      if (leg.avoiding) this.#lastResort = true;
      else this.#stuck = true;
    }
    const key = this.#q.voteOf?.(error);
    if (key !== undefined) this.#vote(leg, 'error', error, key);
    else {
      this.#lastFailure = error;
      this.#answers.push({ endpoint: leg.endpoint, weight: 0, kind: 'failed', error: describeError(error) });
    }
    this.#evaluate();
  }

  #vote(leg: Leg, kind: 'result' | 'error', value: unknown, key: string | undefined): void {
    const weight = leg.endpoint === undefined ? 0 : this.#q.weightOf(leg.endpoint);
    let index = this.#groups.findIndex((g) => g.kind === kind && (kind === 'error' ? g.key === key : this.#same(g.first as T, value as T)));
    if (index < 0) {
      index = this.#groups.push({ kind, first: value, key, weight: 0 }) - 1;
    }
    this.#groups[index]!.weight += weight;
    this.#answers.push(
      kind === 'result'
        ? { endpoint: leg.endpoint, weight, kind, value: redactUrls(value), group: index }
        : { endpoint: leg.endpoint, weight, kind, error: describeError(value), group: index },
    );
  }

  #same(a: T, b: T): boolean {
    const equals = this.#q.equals;
    if (equals === undefined) return sameAnswer(a, b);
    try {
      return equals(a, b);
    } catch {
      return false;
    }
  }

  #best(): Group<T> | undefined {
    let best: Group<T> | undefined;
    for (const g of this.#groups) if (best === undefined || g.weight > best.weight) best = g;
    return best;
  }

  /** Settles if a group is heavy enough or nothing can change any more; otherwise launches what is needed. */
  #evaluate(): void {
    if (this.#settled || this.#launching) return;
    const best = this.#best();
    if (best !== undefined && best.weight >= this.#q.need) {
      if (best.kind === 'result') return this.#succeed(best.first as T);
      return this.#fail(best.first);
    }
    this.#launching = true;
    try {
      while (!this.#settled && (best?.weight ?? 0) + this.#inFlightWeight() < this.#q.need) {
        if (!this.#launch()) break;
      }
    } finally {
      this.#launching = false;
    }
    if (this.#settled) return;
    if (this.#legs.every((l) => l.done)) {
      this.#fail(this.#closed ?? this.#notMet(this.#groups.length > 1 ? 'the endpoints disagree' : 'too few endpoints answered'));
    }
  }

  #inFlightWeight(): number {
    let w = 0;
    for (const l of this.#legs) if (!l.done && !l.stalled) w += l.endpoint === undefined ? 1 : this.#q.weightOf(l.endpoint);
    return w;
  }

  #notMet(why: string): QuorumError {
    const best = this.#best()?.weight ?? 0;
    const distinct = this.#groups.length;
    return new QuorumError(
      `quorum of ${this.#q.need} not met for ${this.#q.method}: ${why} (${distinct} distinct answer(s), heaviest weighs ${best}, ${this.#legs.length} endpoint(s) asked)`,
      { needed: this.#q.need, bestWeight: best, answers: this.#answers.slice(), attempts: this.#legs.length, cause: this.#lastFailure },
    );
  }

  #succeed(value: T): void {
    this.#finish();
    this.#resolve(value);
  }

  #fail(error: unknown): void {
    if (this.#settled) return;
    this.#finish();
    this.#reject(error);
  }

  #finish(): void {
    this.#settled = true;
    this.#q.exec.signal?.removeEventListener('abort', this);
    for (const l of this.#legs) if (l.timer !== undefined) this.#q.clock.clearTimeout(l.timer);
    // The legs still running are not needed any more.
    if (this.#legs.some((l) => !l.done)) this.#controller.abort(new PoolError('ABORTED', 'the quorum read settled'));
  }
}

function safe(avoid: (endpoint: string) => boolean, endpoint: string): boolean {
  try {
    return avoid(endpoint) === true;
  } catch {
    return false;
  }
}

function describeError(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(redactUrls(String(error)));
  const r = error as { code?: unknown; message?: unknown; shortMessage?: unknown; cause?: unknown };
  const inner = r.cause as { code?: unknown; shortMessage?: unknown; message?: unknown } | undefined;
  const parts: string[] = [];
  if (typeof r.code === 'string' || typeof r.code === 'number') parts.push(String(r.code));
  parts.push(typeof r.shortMessage === 'string' ? r.shortMessage : typeof r.message === 'string' ? r.message : 'error');
  if (typeof inner === 'object' && inner !== null) {
    const code = typeof inner.code === 'string' || typeof inner.code === 'number' ? `${inner.code} ` : '';
    const msg = typeof inner.shortMessage === 'string' ? inner.shortMessage : typeof inner.message === 'string' ? inner.message : '';
    if (code !== '' || msg !== '') parts.push(`(cause: ${code}${msg})`);
  }
  return redactUrls(parts.join(': ').slice(0, 300)) as string;
}
