/**
 * One attempt of a call: the context its operation sees (endpoint, attempt number,
 * deadline, a lazily created signal) plus the pool's bookkeeping for it (the breaker
 * ticket, its start time and its place in the shared timeout queue). The attempt itself is
 * the queue entry, so timing one out allocates nothing more.
 */
import { METRICS } from '../base/metrics.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';
import { SignalContext, type SignalSource } from './context.js';
import type { TimeoutEntry } from './timeouts.js';

/** Whoever runs attempts: told when one of them answers, fails or passes its due time. */
export interface AttemptOwner<C> {
  /** The call's number in events (read only when there is a listener: see `Call.id`). */
  readonly id: number;
  /** When the call's deadline passes (the attempt's `deadlineAt`). */
  readonly deadlineAt: number;
  /** When the call began (see `Attempt.startedAt`). */
  readonly beganAt: number | undefined;
  /** The plan's attempt timeout (`Infinity`: none): an attempt's due time is derived from it. */
  readonly attemptTimeoutMs: number;
  /** What an adapter attached to the call (see `executeAs`); absent on most calls. */
  readonly tag?: unknown;
  /** The pool's reusable signals, if it has them (see context.ts). */
  readonly signalSource: SignalSource | undefined;
  attemptSucceeded(a: Attempt<C>, value: unknown): void;
  attemptFailed(a: Attempt<C>, error: unknown, sync: boolean): void;
  attemptTimedOut(a: Attempt<C>): void;
  /** `close({ abortAfterMs })`'s time passed with the attempt running: the call fails `CLOSED`. */
  closedRunning(): void;
}

/** When an attempt times out: `timeout` after it started, or at the call's deadline if that comes first. */
function dueTime(startedAt: number, timeoutMs: number, deadlineAt: number): number {
  const t = startedAt + timeoutMs;
  return t < deadlineAt ? t : deadlineAt;
}

/**
 * What every attempt has: its endpoint, the breaker and credential tickets it started
 * with, and its place in the pool's timeout queue. A call's first attempt is the call
 * itself (`Call` extends `Waiting`, which extends this class): one object, not two, for a
 * call that succeeds at once (heap per call in flight); every later attempt is an
 * `OwnedAttempt`.
 */
export abstract class Attempt<C> extends SignalContext implements TimeoutEntry {
  // Its place in the pool's timeout queue (fields assigned, not declared: see SignalContext).
  declare prevTimeout: TimeoutEntry | undefined;
  /** Its next entry in the timeout list, or its index in the timeout heap: it is in one or the other, so one field serves both. */
  private declare nextOrIndex: TimeoutEntry | number | undefined;

  constructor() {
    super();
    this.prevTimeout = undefined;
    this.nextOrIndex = undefined;
  }

  abstract readonly owner: AttemptOwner<C>;
  /** Its outcome is recorded (or it was cancelled): nothing it reports later counts. */
  abstract done: boolean;
  /** TimeoutEntry: it is in the pool's timeout queue. */
  abstract queued: boolean;
  /** When it started. */
  abstract readonly startedAt: number;
  abstract readonly ep: EndpointState<C>;
  /** The breaker ticket: generation at start and probe epoch (0 unless this is the half-open probe). */
  abstract readonly generation: number;
  abstract readonly probe: number;
  /** The endpoint's credential generation when the attempt started (see auth.ts). */
  abstract readonly authGeneration: number;

  // Read through, not copied: fields fewer per attempt in flight.
  get endpoint(): string {
    return this.ep.name;
  }

  get signalSource(): SignalSource | undefined {
    return this.owner.signalSource;
  }

  /** TimeoutEntry: the next entry in the queue's list. */
  get nextTimeout(): TimeoutEntry | undefined {
    const n = this.nextOrIndex;
    return typeof n === 'number' ? undefined : n;
  }
  set nextTimeout(e: TimeoutEntry | undefined) {
    this.nextOrIndex = e;
  }

  /** TimeoutEntry: its index in the queue's heap, or -1. */
  get heapIndex(): number {
    const n = this.nextOrIndex;
    return typeof n === 'number' ? n : -1;
  }
  set heapIndex(i: number) {
    if (i >= 0) this.nextOrIndex = i;
    else if (typeof this.nextOrIndex === 'number') this.nextOrIndex = undefined;
  }

  /**
   * TimeoutEntry: when the attempt times out, derived rather than stored (a stored double
   * is one more field and one more boxed number per attempt in flight): the plan's attempt
   * timeout after its start, or the call's deadline if that comes first, as `startAttempt`
   * armed it. None of the three changes while it is queued.
   */
  get dueAt(): number {
    return dueTime(this.startedAt, this.owner.attemptTimeoutMs, this.deadlineAt);
  }
  // Stryker disable next-line BlockStatement: the queue writes back the value it read
  set dueAt(_at: number) {
    // Derived (see the getter): the queue only ever writes the value startAttempt read.
  }

  expire(): void {
    this.owner.attemptTimedOut(this);
  }
}

const DONE = 1;
const QUEUED = 2;

/** An attempt after the call's first (a retry, a hedge, a replay): an object of its own. */
export class OwnedAttempt<C> extends Attempt<C> {
  // Assigned, not declared (see SignalContext).
  declare readonly owner: AttemptOwner<C>;
  declare readonly ep: EndpointState<C>;
  declare readonly generation: number;
  declare readonly probe: number;
  declare readonly authGeneration: number;
  /** Its start, `undefined` when it is the call's (see `startedAt`). */
  private declare readonly ownStart: number | undefined;
  /** The attempt number above two flag bits, DONE and QUEUED: one field for three (heap per attempt in flight). */
  private declare attemptBits: number;

  constructor(owner: AttemptOwner<C>, ep: EndpointState<C>, attempt: number, probe: number, startedAt: number | undefined) {
    super();
    this.owner = owner;
    this.attemptBits = attempt * 4;
    this.ep = ep;
    this.generation = ep.breaker.generation;
    this.probe = probe;
    this.authGeneration = ep.authGeneration;
    this.ownStart = startedAt;
  }

  /** 1 for the first attempt of a call. */
  get attempt(): number {
    return this.attemptBits >>> 2;
  }

  get done(): boolean {
    return (this.attemptBits & DONE) !== 0;
  }
  set done(on: boolean) {
    this.attemptBits = on ? this.attemptBits | DONE : this.attemptBits & ~DONE;
  }

  get queued(): boolean {
    return (this.attemptBits & QUEUED) !== 0;
  }
  set queued(on: boolean) {
    this.attemptBits = on ? this.attemptBits | QUEUED : this.attemptBits & ~QUEUED;
  }

  /** When it started. An attempt that starts at the call's own clock reading reads it through, not stored (a stored double is boxed, 16 B). */
  get startedAt(): number {
    return this.ownStart ?? this.owner.beganAt!;
  }

  get deadlineAt(): number {
    return this.owner.deadlineAt;
  }

  /** @internal The call's tag (see `executeAs`): an adapter's request, read by its operation and classifier. */
  get tag(): unknown {
    return this.owner.tag;
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
  if (pending instanceof Promise) pending.then(answered.bind(a), threw.bind(a));
  else watchThenable(a, pending);
}

/**
 * A thenable of the user's own may call back inside `then`: a retry made there recursed, endpoint
 * after endpoint, until the stack ran out (about 760 endpoints). Such a call back is handled a turn
 * later; what `then` throws is still the operation's synchronous failure.
 */
function watchThenable<C>(a: Attempt<C>, pending: PromiseLike<unknown>): void {
  let inside = true;
  const later = (fn: (this: Attempt<C>, v: unknown) => void) => (v: unknown) => (inside ? queueMicrotask(() => fn.call(a, v)) : fn.call(a, v));
  try {
    pending.then(later(answered), later(threw));
  } finally {
    inside = false;
  }
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

/** Queues the attempt's timeout (the earlier of its own and the deadline: see dueAt; `Infinity` arms nothing); counts and announces it. */
export function startAttempt<C>(s: PoolState<C>, a: Attempt<C>): void {
  s.timeouts.add(a, a.dueAt);
  const ep = a.ep;
  // The event first, then the metric: a sink that acts on the pool finds the news out (as every hook after an event does).
  if (s.listener !== undefined) {
    s.emit({ type: 'attempt-start', callId: a.owner.id, endpoint: ep.name, attempt: a.attempt, probe: a.probe !== 0 });
    // This probe took the slot of one out too long, whose call set no bound (or a longer one) and whose operation never settled.
    if (a.probe !== 0 && ep.breaker.lostProbeMs >= 0) s.emit({ type: 'probe-lost', endpoint: ep.name, outMs: ep.breaker.lostProbeMs });
  }
  s.count(METRICS.attempts, ep.labels);
}

/** The attempt no longer occupies its endpoint: an in-flight slot (and a probe slot) may be free. */
export function releaseSlot<C>(s: PoolState<C>, a: Attempt<C>): void {
  const ep = a.ep;
  const wasFull = ep.inFlight >= ep.maxInFlight;
  ep.inFlight--;
  if (wasFull || a.probe !== 0) s.wakeParked();
}
