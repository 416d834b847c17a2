/**
 * One attempt of a call: the context its operation sees (endpoint, attempt number,
 * deadline, a lazily created signal) plus the pool's bookkeeping for it (the breaker
 * ticket, its start time and its place in the shared timeout queue). The attempt itself is
 * the queue entry, so timing one out allocates nothing more.
 */
import { METRICS } from '../base/metrics.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';
import { SignalContext } from './context.js';
import type { TimeoutEntry } from './timeouts.js';

/** Whoever runs attempts: told when one of them answers, fails or passes its due time. */
export interface AttemptOwner<C> {
  /** When the call's deadline passes (the attempt's `deadlineAt`). */
  readonly deadlineAt: number;
  /** When the call began (see `Attempt.startedAt`). */
  readonly beganAt: number | undefined;
  /** What an adapter attached to the call (see `executeAs`); absent on most calls. */
  readonly tag?: unknown;
  attemptSucceeded(a: Attempt<C>, value: unknown): void;
  attemptFailed(a: Attempt<C>, error: unknown, sync: boolean): void;
  attemptTimedOut(a: Attempt<C>): void;
}

const DONE = 1;
const QUEUED = 2;

export class Attempt<C> extends SignalContext implements TimeoutEntry {
  readonly owner: AttemptOwner<C>;
  readonly ep: EndpointState<C>;
  /** The breaker ticket: generation at start and probe epoch (0 unless this is the half-open probe). */
  readonly generation: number;
  readonly probe: number;
  /** Its start, `undefined` when it is the call's (see `startedAt`). */
  readonly #startedAt: number | undefined = undefined;
  /** The endpoint's credential generation when the attempt started (see auth.ts). */
  readonly authGeneration: number;
  /** The attempt number above two flag bits, DONE and QUEUED: one field for three (heap per attempt in flight). */
  #bits: number;
  /**
   * Its timeout (`undefined`: none). The due time is derived from it rather than stored:
   * a whole number of ms is stored unboxed, where a `dueAt` would be one more boxed double
   * per attempt in flight. (It starts as `undefined`, not `Infinity`, so that V8 keeps the
   * field tagged, not as a double that every attempt would box.)
   */
  timeoutMs: number | undefined = undefined;
  // Its place in the pool's timeout queue.
  prevTimeout: TimeoutEntry | undefined = undefined;
  /** Its next entry in the timeout list, or its index in the timeout heap: it is in one or the other, so one field serves both. */
  #nextOrIndex: TimeoutEntry | number | undefined = undefined;

  constructor(owner: AttemptOwner<C>, ep: EndpointState<C>, attempt: number, probe: number, startedAt: number | undefined) {
    super();
    this.owner = owner;
    this.ep = ep;
    this.#bits = attempt * 4;
    this.generation = ep.breaker.generation;
    this.probe = probe;
    if (startedAt !== undefined) this.#startedAt = startedAt;
    this.authGeneration = ep.authGeneration;
  }

  /** 1 for the first attempt of a call. */
  get attempt(): number {
    return this.#bits >>> 2;
  }

  /** Its outcome is recorded (or it was cancelled): nothing it reports later counts. */
  get done(): boolean {
    return (this.#bits & DONE) !== 0;
  }
  set done(on: boolean) {
    this.#bits = on ? this.#bits | DONE : this.#bits & ~DONE;
  }

  /** TimeoutEntry: it is in the pool's timeout queue. */
  get queued(): boolean {
    return (this.#bits & QUEUED) !== 0;
  }
  set queued(on: boolean) {
    this.#bits = on ? this.#bits | QUEUED : this.#bits & ~QUEUED;
  }

  /** When it started. Most first attempts start at the call's own clock reading: read through, not stored (a stored double is boxed, 16 B). */
  get startedAt(): number {
    return this.#startedAt ?? this.owner.beganAt!;
  }

  // Read through, not copied: two fields fewer per attempt in flight.
  get endpoint(): string {
    return this.ep.name;
  }

  get deadlineAt(): number {
    return this.owner.deadlineAt;
  }

  /** @internal The call's tag (see `executeAs`): an adapter's request, read by its operation and classifier. */
  get tag(): unknown {
    return this.owner.tag;
  }

  /** TimeoutEntry: the next entry in the queue's list. */
  get nextTimeout(): TimeoutEntry | undefined {
    const n = this.#nextOrIndex;
    return typeof n === 'number' ? undefined : n;
  }
  set nextTimeout(e: TimeoutEntry | undefined) {
    this.#nextOrIndex = e;
  }

  /** TimeoutEntry: its index in the queue's heap, or -1. */
  get heapIndex(): number {
    const n = this.#nextOrIndex;
    return typeof n === 'number' ? n : -1;
  }
  set heapIndex(i: number) {
    if (i >= 0) this.#nextOrIndex = i;
    else if (typeof this.#nextOrIndex === 'number') this.#nextOrIndex = undefined;
  }

  /** TimeoutEntry: when the attempt times out. */
  get dueAt(): number {
    return this.startedAt + (this.timeoutMs ?? Number.POSITIVE_INFINITY);
  }
  // Stryker disable next-line BlockStatement: only the queue's add() writes it, with the value startAttempt just set
  set dueAt(at: number) {
    // startAttempt sets timeoutMs first, so the queue writes back the same value.
    // Stryker disable next-line ConditionalExpression,EqualityOperator,ArithmeticOperator: the value written back always equals the one derived
    if (at !== this.dueAt) this.timeoutMs = at - this.startedAt;
  }

  expire(): void {
    this.owner.attemptTimedOut(this);
  }
}

function answered<C>(this: Attempt<C>, value: unknown): void {
  this.owner.attemptSucceeded(this, value);
}

function threw<C>(this: Attempt<C>, error: unknown): void {
  this.owner.attemptFailed(this, error, false);
}

/**
 * Hands the operation's outcome to the attempt's owner. The handlers are bound to the
 * attempt (two small bound functions, no closure context): heap per attempt in flight.
 */
export function watchAttempt<C>(a: Attempt<C>, pending: PromiseLike<unknown>): void {
  pending.then(answered.bind(a), threw.bind(a));
}

/** The error an attempt fails with when the operation returns something that is not a promise. */
export class NotAPromiseError extends TypeError {
  constructor(value: unknown) {
    const what = value === null || value === undefined ? String(value) : typeof value === 'object' ? 'an object with no then()' : `a ${typeof value}`;
    super(`the operation returned ${what}, not a promise`);
    this.name = 'NotAPromiseError';
  }
}

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as PromiseLike<unknown>).then === 'function';
}

/** The endpoint takes one more attempt: its limit, in-flight count and usage. */
export function claimSlot<C>(ep: EndpointState<C>, now: number): void {
  ep.quota.take(now);
  ep.own?.take(now);
  // Stryker disable next-line EqualityOperator: at equality the peak is rewritten with the same value
  if (++ep.inFlight > ep.peakInFlight) ep.peakInFlight = ep.inFlight;
  ep.attempts++;
  ep.usage.add(now);
}

/** Arms the attempt's timeout (min of its own and the time left before the deadline); counts and announces it. */
export function startAttempt<C>(s: PoolState<C>, a: Attempt<C>, attemptTimeoutMs: number, now: number, callId: number): void {
  const left = a.deadlineAt - now;
  // Stryker disable next-line EqualityOperator: the smaller of two equal values
  const timeout = attemptTimeoutMs < left ? attemptTimeoutMs : left;
  if (timeout !== Number.POSITIVE_INFINITY) {
    a.timeoutMs = timeout;
    s.timeouts.add(a, a.dueAt);
  }
  const ep = a.ep;
  s.count(METRICS.attempts, ep.labels);
  if (s.listener !== undefined) s.emit({ type: 'attempt-start', callId, endpoint: ep.name, attempt: a.attempt, probe: a.probe !== 0 });
}

/** The attempt no longer occupies its endpoint: an in-flight slot (and a probe slot) may be free. */
export function releaseSlot<C>(s: PoolState<C>, a: Attempt<C>): void {
  const ep = a.ep;
  const wasFull = ep.inFlight >= ep.maxInFlight;
  ep.inFlight--;
  if (wasFull || a.probe !== 0) s.wakeParked();
}
