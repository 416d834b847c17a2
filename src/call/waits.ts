/**
 * The ways a call waits between attempts, and how each wait ends.
 *
 *   permit     queued for a pool-wide concurrency permit        ends: grantPermit()
 *   sleep      backoff, a rate limit, an open breaker            ends: its timer
 *   park       no in-flight or probe slot free                   ends: wake()
 *   queue      its turn for a rate-limit token (limits/waiters)  ends: turn()
 *   auth       the endpoint's credentials are being refreshed    ends: the refresh settles
 *   admission  the shared store is deciding                      ends: its answer, or its timeout
 *
 * A call is in at most one wait. Every wait is bounded by the call's deadline (one timer,
 * armed for whichever comes first), and `close()` ends every wait at once. `Call` extends
 * this class so that a call and its wait are one object: no allocation per wait.
 */
import type { TimerHandle } from '../base/clock.js';
import { METRICS } from '../base/metrics.js';
import type { PoolState, Waiter } from '../state.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { QueuedWaiter, WaitQueue } from '../limits/waiters.js';
import type { PermitWaiter } from './permit-queue.js';
import { CallCore, CallSlots } from './call-core.js';
import { requestBound } from '../base/request-bound.js';

const INF = Infinity;

// Bits of the call's flags (CallCore.flagWord) below 256: five booleans and the current wait
// (heap per call in flight); the bits from FREE_BIT up are the subclass's own (see hasFlag).
const SETTLED = 1;
const HOLDS_PERMIT = 2;
const IN_PERMIT_QUEUE = 4;
const WAIT_COUNTED = 8;
const HAD_TURN = 16;
// The current wait, in three bits: one of the WaitState values below.
const STATE_BITS = 7 * 32;
export { FREE_BIT } from './call-core.js';
import { ABORT_HELD, CLOSE_HELD, REPORTING } from './call-flags.js';

/** The wait a call is in (see above): a number, kept in the flags field. */
export type WaitState = number;
export const NONE = 0;
export const PERMIT = 32;
export const SLEEP = 64;
export const PARK = 96;
export const AUTH = 128;
export const ADMISSION = 160;
export const QUEUE = 192;

/**
 * Where timers and promises belong to a request (base/request-bound.ts): a call waiting for a
 * permit or for capacity, woken by another call, goes on through a promise it made when it
 * began to wait, so in its own request. Its resolver while the wait lasts, 0 once woken.
 */
const hops = new WeakMap<object, (() => void) | 0>();

/** Another call woke `w`: true when it goes on later, through its own promise (see `hops`). */
function hopped(w: object): boolean {
  const hop = hops.get(w);
  if (hop === undefined) return false;
  if (hop !== 0) hops.set(w, 0), hop();
  return true;
}

/** What only a call that waits in a queue or on a timer needs, made at first need; a call's history extends it (one lazySlots object, not two). */
export class WaitSlots extends CallSlots {
  permitPrev: PermitWaiter | undefined = undefined;
  permitNext: PermitWaiter | undefined = undefined;
  timer: TimerHandle | undefined = undefined;
  onTimer: (() => void) | undefined = undefined;
  queueTicket = 0;
  /** When its current rate-limit wait began (its first queueing since its last attempt). */
  queuedAt = 0;
  queuedOn: unknown = undefined;
  queue: WaitQueue | undefined = undefined;
}

/** A call, as far as its waits go (its plan, flags, begin reading and own first attempt: `CallCore`). */
export abstract class Waiting<C, S extends WaitSlots = WaitSlots> extends CallCore<C, S> implements Waiter, QueuedWaiter {
  /** The wait it is in (NONE: running or settled). */
  protected get waiting(): WaitState {
    return this.flagWord & STATE_BITS;
  }
  protected set waiting(state: WaitState) {
    this.flagWord = (this.flagWord & ~STATE_BITS) | state;
  }

  /** The call's promise has settled: nothing may resume it. */
  protected get settled(): boolean {
    return (this.flagWord & SETTLED) !== 0;
  }
  protected set settled(on: boolean) {
    this.setFlag(SETTLED, on);
  }

  // Its place in the pool's permit queue (see permit-queue.ts).
  get permitPrev(): PermitWaiter | undefined {
    return this.lazySlots?.permitPrev;
  }
  set permitPrev(w: PermitWaiter | undefined) {
    this.slotsNow().permitPrev = w;
  }
  get permitNext(): PermitWaiter | undefined {
    return this.lazySlots?.permitNext;
  }
  set permitNext(w: PermitWaiter | undefined) {
    this.slotsNow().permitNext = w;
  }
  get inPermitQueue(): boolean {
    return (this.flagWord & IN_PERMIT_QUEUE) !== 0;
  }
  set inPermitQueue(on: boolean) {
    this.setFlag(IN_PERMIT_QUEUE, on);
  }

  /** QueuedWaiter: the ticket of its place in a rate-limit queue (0: none). */
  get queueTicket(): number {
    return this.lazySlots?.queueTicket ?? 0;
  }
  set queueTicket(ticket: number) {
    this.slotsNow().queueTicket = ticket;
  }

  /** Its turn for a token on `ep` came (it is out of the queue): go there, or select again. */
  protected abstract tookTurn(ep: EndpointState<C>, now: number): void;
  /** Goes on (selects again) after a wait that ended normally. */
  protected abstract resume(): void;
  /** The wait's timer fired: `was` is the wait it ended (its deadline or its own time). */
  protected abstract waitTimedOut(was: WaitState): void;
  /** The pool closed while the call was waiting. */
  protected abstract closedWhileWaiting(why?: string): void;
  /** The caller's signal fired. */
  abstract aborted(): void;

  /**
   * An attempt's failure is being reported (`on`; its news, such as a breaker turn or a park,
   * come before its `attempt-failure`), or was: an abort meanwhile (from a listener of that
   * news) is held until then, so that `call-failed` comes after that `attempt-failure`.
   */
  protected reporting(on: boolean): void {
    const held = this.hasFlag(ABORT_HELD);
    const closeHeld = this.hasFlag(CLOSE_HELD);
    this.setFlag(on ? REPORTING : REPORTING | ABORT_HELD | CLOSE_HELD, on);
    if (held) this.aborted();
    else if (closeHeld) queueMicrotask(() => this.closedRunning()); // once this answer has had its say (a permanent one ends the call as PERMANENT)
  }

  /** Capacity this call was parked on (an in-flight or probe slot) may be free. */
  wake(): void {
    if (this.settled || this.waiting !== PARK || (requestBound() && hopped(this))) return;
    this.stopWaiting();
    this.resume();
  }

  /** QueuedWaiter: the queue gave this call its turn. */
  turn(now: number): void {
    const ep = this.lazySlots?.queuedOn as EndpointState<C> | undefined;
    if (this.settled || this.waiting !== QUEUE || ep === undefined) return;
    this.stopWaiting();
    this.setFlag(HAD_TURN, true);
    this.tookTurn(ep, now);
  }

  /** QueuedWaiter: its ceiling dropped; whether a turn `etaMs` away is now too late for it. */
  overdue(now: number, etaMs: number): boolean {
    return this.lateTurn(etaMs, now) !== undefined;
  }

  /** QueuedWaiter: taken out of the queue (its turn came too late): it selects again, from scratch. */
  readmit(): void {
    if (this.settled || this.waiting !== QUEUE) return;
    this.stopWaiting();
    this.resume();
  }

  /**
   * Deadline-aware admission: why a turn `etaMs` away is too late (later than the deadline
   * less twice the endpoint's smoothed success duration, or
   * more than `maxQueueWaitMs` after this wait began: time already queued counts), or
   * `undefined`. The call then fails at once.
   */
  protected lateTurn(etaMs: number, now: number, ep?: EndpointState<C>): string | undefined {
    // A call that goes back to the front (see `queueFor`) waits only for the limits themselves
    // and the calls already back at the front.
    if (ep !== undefined && (this.flagWord & HAD_TURN) !== 0) {
      const f = ep.quota.waiters?.front ?? 0;
      etaMs = ep.limitWaitMs(now);
      if (f > 0) etaMs = Math.max(etaMs, ep.turnEtaMs(now, f, f));
    }
    const waited = (this.flagWord & WAIT_COUNTED) !== 0 ? now - this.lazySlots!.queuedAt : 0;
    // The turn must leave the attempt its usual time (twice the endpoint's smoothed success
    // duration): a turn at the last millisecond would spend a token on a call that then fails,
    // and one at the deadline itself leaves no time at all.
    const on = ep ?? (this.lazySlots?.queuedOn as EndpointState<C> | undefined);
    const reserveMs = on === undefined ? 0 : 2 * on.okMs;
    const turnAt = now + etaMs;
    const late = turnAt >= this.deadlineAt || turnAt + reserveMs > this.deadlineAt ? 'deadline' : waited + etaMs > this.s.opts.maxQueueWaitMs ? 'maxQueueWaitMs' : undefined;
    if (late === undefined) return undefined;
    // Learned ceilings recover sooner while callers are turned away (see limits/ceiling.ts).
    this.s.turnedAwayAt = now;
    return `rate limits leave no turn for the call within its ${late} (next turn in ${Math.ceil(etaMs)} ms)`;
  }

  /**
   * Queues for a token of `ep`'s quota, bounded by the deadline. A call that already had
   * its turn and must wait again (or lost it to a rate-limited answer) goes back to the front. One wait is counted once
   * (`rate_limit_waits_total`, `rate-limit-wait`), however often it re-queues before its attempt.
   * Where timers belong to a request it sleeps until the turn is due and selects again
   * (base/request-bound.ts): the queue's turns would come on another call's timer.
   */
  protected queueFor(ep: EndpointState<C>, etaMs: number): void {
    const s = this.s;
    if ((this.flagWord & WAIT_COUNTED) === 0) {
      this.setFlag(WAIT_COUNTED, true);
      this.slotsNow().queuedAt = s.clock.now();
      if (s.listener !== undefined) s.emit({ type: 'rate-limit-wait', callId: this.owner.id, endpoint: ep.name, delayMs: etaMs });
      s.count(METRICS.rateLimitWaits, ep.labels);
      if (this.settled) return;
      if (s.closed) return this.closedWhileWaiting(); // a listener closed the pool (see call.ts `#sleep`)
    }
    if (requestBound()) return this.sleep(etaMs);
    // Only a pool with the limits feature queues (call.ts `#sleep`).
    const q = (ep.quota.waiters ??= s.features.limits!.waitQueue(s.clock));
    const slots = this.slotsNow();
    slots.queuedOn = ep;
    ep.queued++;
    slots.queue = q;
    // The turn was estimated (hidden limits, a group's members, calls coming back to the
    // front can make it later): `maxQueueWaitMs` is a bound, so the wait's timer fires when it
    // is spent, and the call selects again (waitTimedOut); it fails then unless a turn is free.
    this.waitFor(QUEUE, slots.queuedAt + s.opts.maxQueueWaitMs - s.clock.now());
    q.join(this, ep, (this.flagWord & HAD_TURN) !== 0);
  }

  /**
   * Its attempt was rejected by a rate limit: the turn it queued for was spent on an answer
   * the server refused, so if it must queue again it goes to the front, not behind the
   * calls that arrived while it waited (its latency would otherwise be two queues long).
   */
  protected lostTurn(): void {
    this.setFlag(HAD_TURN, true);
  }

  /** An attempt starts: the next rate-limit wait is a new one (`bits`: the subclass's flags to clear too). */
  protected queueWaitEnds(bits: number): void {
    this.flagWord &= ~(WAIT_COUNTED | HAD_TURN | bits);
  }

  /** A permit was handed over from a finished call. */
  grantPermit(): void {
    if (this.settled) return this.s.releasePermit();
    if (requestBound() && hopped(this)) return;
    this.setFlag(HOLDS_PERMIT, true);
    this.stopWaiting();
    this.resume();
  }

  /** `close()` reached this call while it was waiting. */
  closeWaiting(): void {
    if (this.waiting !== NONE) this.closedWhileWaiting();
  }

  /** AttemptOwner: `close({ abortAfterMs })`'s time passed with an attempt of this call running. */
  closedRunning(): void {
    if (this.hasFlag(REPORTING)) return this.setFlag(CLOSE_HELD, true); // held as an abort is (see reporting)
    this.closedWhileWaiting('and its abortAfterMs passed with an attempt running');
  }

  /** Takes a pool-wide permit if one is free (or calls are not limited); otherwise queues for one. */
  protected takePermit(): boolean {
    const s = this.s;
    if (s.permits === INF) return true;
    if (s.permits > 0) {
      s.permits--;
      this.setFlag(HOLDS_PERMIT, true);
      return true;
    }
    s.permitQueue!.push(this); // permits are limited only with the concurrency feature
    this.waitFor(PERMIT, INF);
    return false;
  }

  /** Before an attempt: true when the call holds a permit (or calls are not limited); otherwise it queues for one. */
  protected permitToSend(): boolean {
    return (this.flagWord & HOLDS_PERMIT) !== 0 || this.takePermit();
  }

  /** After an attempt or before a wait: under `permitScope: 'attempt'` the permit goes back. */
  protected releaseAfterSend(): void {
    if (this.s.opts.permitScope === 'attempt') this.releasePermit();
  }

  /** Returns the permit, if the call holds one. */
  protected releasePermit(): void {
    if ((this.flagWord & HOLDS_PERMIT) === 0) return;
    this.setFlag(HOLDS_PERMIT, false);
    this.s.releasePermit();
  }

  /** Parks until capacity frees up (`Infinity`) or sleeps `ms`, bounded by the deadline. */
  protected sleep(ms: number): void {
    this.releaseAfterSend();
    if (ms === INF) {
      this.s.parked.add(this);
      return this.waitFor(PARK, INF);
    }
    this.waitFor(SLEEP, ms);
  }

  /** Enters `state` for at most `ms` (`Infinity`: until ended otherwise), bounded by the deadline. */
  protected waitFor(state: WaitState, ms: number): void {
    const s = this.s;
    this.waiting = state;
    s.waiting.add(this);
    if ((state === PERMIT || state === PARK) && requestBound()) {
      void new Promise<void>((resolve) => hops.set(this, resolve)).then(() => {
        if (hops.get(this) !== 0) return;
        hops.delete(this);
        if (state === PERMIT) this.grantPermit();
        else this.wake();
      });
    }
    const left = this.deadlineAt - s.clock.now();
    // Past the deadline already (`left` < 0 by a fraction of a ms): at once, not a negative delay.
    const until = ms < left ? ms : left;
    const delay = until > 0 ? until : 0;
    if (delay === INF) return;
    const slots = this.slotsNow();
    slots.onTimer ??= () => {
      slots.timer = undefined;
      const was = this.waiting;
      this.stopWaiting();
      this.waitTimedOut(was);
    };
    slots.timer = s.clock.setTimeout(slots.onTimer, delay);
  }

  /** Leaves the current wait (if any): its timer is cleared and it leaves the pool's queues. */
  protected stopWaiting(): void {
    const s = this.s;
    const slots = this.lazySlots;
    if (slots?.timer !== undefined) {
      s.clock.clearTimeout(slots.timer);
      slots.timer = undefined;
    }
    const state = this.waiting;
    if (state === NONE) return;
    // A wake already on its way keeps its mark: a permit it carries must still be taken or given back.
    if ((state === PERMIT || state === PARK) && requestBound() && hops.get(this) !== 0) hops.delete(this);
    if (state === PERMIT) {
      s.permitQueue!.remove(this);
    } else if (state === PARK) {
      s.parked.delete(this);
    } else if (state === QUEUE) {
      (slots!.queuedOn as EndpointState<C>).queued--;
      slots!.queue!.leave(this);
      slots!.queue = undefined;
      slots!.queuedOn = undefined;
    }
    s.waiting.delete(this);
    this.waiting = NONE;
  }
}
