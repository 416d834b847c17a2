/**
 * What a call is below its waits: its plan, its flags, the clock reading it began at, and
 * its own first attempt. A call extends `Attempt` because it is also its first attempt (one
 * object, not two, for a call that succeeds at once): the attempt's flags are bits of the
 * call's field, its endpoint and tickets one object the endpoint shares, and its start is
 * the call's unless it waited first. Later attempts are `OwnedAttempt` objects.
 */
import { ticketOf, type EndpointState, type EndpointTicket } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';
import { Attempt, type AttemptOwner } from './attempt.js';
import type { SignalSource } from './context.js';
import type { CallPlan } from './plan.js';
import { lateId } from './call-ids.js';

const INF = Infinity;

// Bits of the flags below 256 are the waits' (waits.ts).
// The call's own first attempt (see `Attempt`): its DONE and QUEUED.
const DONE = 256;
const QUEUED = 512;
const LAUNCHED = 1024;
export const FREE_BIT = 2048;

/** What only some calls need, made at first need (the waits' slots and the call's history extend it). */
export class CallSlots {
  /** When the call's own attempt started, if not at beganAt (after a wait). */
  startedAt: number | undefined = undefined;
  /** The call's operation, kept here once the slots are made (the call's field then holds the slots). */
  op: CallOperation<never> | undefined = undefined;
}

/** A call's operation, as the core holds it (the call's type parameters aside). */
export type CallOperation<C> = (conn: C, ctx: Attempt<C>) => unknown;

export abstract class CallCore<C, S extends CallSlots> extends Attempt<C> {
  // Fields assigned in the constructor, not declared with initializers (see SignalContext).
  declare readonly plan: CallPlan<C>;
  /** The clock when the call began (`undefined`: not yet): the deadline and most first attempts' start are read through it (one boxed double per call). */
  declare beganAt: number | undefined;
  /** The flags: the waits' bits, the own attempt's and the subclass's (from FREE_BIT up). */
  protected declare flagWord: number;
  /**
   * Its own attempt's endpoint and tickets (see `Attempt`): one object the endpoint shares
   * with every attempt that starts on it under the same generations (a probe's is its own),
   * where an attempt object keeps four fields.
   */
  private declare ticket: EndpointTicket<C> | undefined;
  /**
   * The call's operation until the lazily made slots exist, then the slots, which keep the
   * operation: one field for two (heap per call in flight). A function is the operation, an
   * object the slots. Read through lazySlots and callOp, written only by slotsNow().
   */
  private declare opOrSlots: S | CallOperation<C>;

  constructor(plan: CallPlan<C>, op: CallOperation<C>) {
    super();
    this.plan = plan;
    this.beganAt = undefined;
    this.flagWord = 0;
    this.ticket = undefined;
    this.opOrSlots = op;
  }

  /** The lazily made slots (`undefined`: none yet). */
  protected get lazySlots(): S | undefined {
    const x = this.opOrSlots;
    return typeof x === 'object' ? x : undefined;
  }

  /** The call's operation. */
  protected get callOp(): CallOperation<C> {
    const x = this.opOrSlots;
    return typeof x === 'function' ? x : (x.op as CallOperation<C>);
  }

  // As its own first attempt (see `Attempt`).
  get owner(): AttemptOwner<C> {
    return this as unknown as AttemptOwner<C>;
  }
  get attempt(): number {
    return 1;
  }
  get done(): boolean {
    return (this.flagWord & DONE) !== 0;
  }
  set done(on: boolean) {
    this.setFlag(DONE, on);
  }
  get queued(): boolean {
    return (this.flagWord & QUEUED) !== 0;
  }
  set queued(on: boolean) {
    this.setFlag(QUEUED, on);
  }
  get startedAt(): number {
    return this.lazySlots?.startedAt ?? this.beganAt!;
  }
  get attemptTimeoutMs(): number {
    return this.plan.attemptTimeoutMs;
  }
  /** As for any attempt (its dueAt getter), reading the begin reading once (its start and the deadline both come from it). */
  override get dueAt(): number {
    const plan = this.plan;
    const t0 = this.beganAt!;
    const t = (this.lazySlots?.startedAt ?? t0) + plan.attemptTimeoutMs;
    const d = t0 + plan.deadlineMs;
    return t < d ? t : d;
  }
  override set dueAt(_at: number) {
    // Derived, as for every attempt.
  }
  /** Its own attempt has started. */
  protected get hasLaunched(): boolean {
    return (this.flagWord & LAUNCHED) !== 0;
  }
  /** Starts its own attempt, on `ep`: takes the breaker and credential tickets (see `#ticket`). */
  protected takeOwn(ep: EndpointState<C>, probe: number, now: number): void {
    this.setFlag(LAUNCHED, true);
    this.ticket = ticketOf(ep, probe);
    if (now !== this.beganAt) this.slotsNow().startedAt = now;
  }
  get ep(): EndpointState<C> {
    return this.ticket!.ep;
  }
  get generation(): number {
    return this.ticket!.generation;
  }
  get probe(): number {
    return this.ticket?.probe ?? 0;
  }
  get authGeneration(): number {
    return this.ticket!.authGeneration;
  }

  /** The pool's reusable signals, for the call's attempts. */
  override get signalSource(): SignalSource | undefined {
    return this.s.features.signals;
  }

  /** Its number in events: see `NumberedCall` (no field here: heap per call in flight). */
  get id(): number {
    return lateId(this, this.s);
  }

  /** The pool, reached through the plan (one field fewer per call in flight). */
  protected get s(): PoolState<C> {
    return this.plan.state as PoolState<C>; // plan.ts may not import the state (no import cycle)
  }

  /** When the call's deadline passes, in clock time (`Infinity`: none, or the call has not begun). */
  get deadlineAt(): number {
    const t0 = this.beganAt;
    return t0 === undefined ? INF : t0 + this.plan.deadlineMs;
  }

  /** One bit of the flags field: the subclass's own start at FREE_BIT. */
  protected hasFlag(bit: number): boolean {
    return (this.flagWord & bit) !== 0;
  }

  protected setFlag(bit: number, on: boolean): void {
    this.flagWord = on ? this.flagWord | bit : this.flagWord & ~bit;
  }

  protected slotsNow(): S {
    const x = this.opOrSlots;
    if (typeof x === 'object') return x;
    const slots = this.makeSlots();
    slots.op = x as CallOperation<never>;
    this.opOrSlots = slots;
    return slots;
  }

  /** Makes the slots: a subclass extends them with its own rarely used fields. */
  protected abstract makeSlots(): S;
}
