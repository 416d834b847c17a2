/**
 * One `execute()` call, attempt by attempt: a small state machine in which every wait and
 * every attempt can be cut short at any moment by the deadline, the caller's signal or
 * `close()`, with nothing left behind.
 *
 *   start ─▶ permit ─▶ select ─┬─▶ [admission] ─▶ attempt ─▶ success ─▶ resolve
 *                       ▲      │                         └▶ failure ─▶ classify ─┬─▶ fail (final class, exhausted)
 *                       │      ├─▶ sleep (backoff, rate limit, breaker wait)       ├─▶ auth (refresh, replay)
 *                       │      ├─▶ park (no free slot) · fail (NO_ENDPOINT, PIN_UNAVAILABLE) │
 *                       └───────────────────────────────────────────────────────────┘ retry
 *
 * Beside it: waits, plan, admission, hedging, auth, attempt and outcome (see ARCHITECTURE.md
 * for the rules: permit scope, attempt timeouts under the deadline, backoff only before a
 * tried endpoint, state before events, nothing left behind on any exit).
 */
import { PoolError, invalidOption, type PoolErrorCode } from '../base/errors.js';
import type { CancelReason } from '../base/events.js';
import { METRICS } from '../base/metrics.js';
import type { ExecuteOptions } from '../options/options.js';
import type { EndpointState } from '../selection/endpoint.js';
import { selectPinned } from '../selection/selector.js';
import type { PoolState } from '../state.js';
import { admissionTimedOut, askStore, needsAdmission, type AdmissionHost } from './admission.js';
import { Attempt, claimSlot, isThenable, NotAPromiseError, releaseSlot, startAttempt, watchAttempt, type AttemptOwner } from './attempt.js';
import { reauthenticate, type ReauthHost } from './auth.js';
import { backoffDelay } from './backoff.js';
import type { Operation } from './context.js';
import { Hedging, type HedgeHost } from './hedging.js';
import { attemptCount, newVerdict, permanentMessage, recordCallFailure, recordCancel, recordFailure, recordSuccess, recordTimeout, starved } from './outcome.js';
import { rejectionOf, resolvePlan, type CallPlan } from './plan.js';
import { ADMISSION, AUTH, FREE_BIT, SLEEP, Waiting, type WaitState } from './waits.js';
import { attemptLimit, CallHistory, keepError, lastPoolError, nothingCanAdmit } from './limits-of-a-call.js';
import { unwatchAbort, watchAbort, type AbortWatcher } from './signals.js';

const INF = Number.POSITIVE_INFINITY;
// The call's own bits in the waits' flags field (one field for both: heap per call in flight).
const RETRY_PENDING = FREE_BIT; // a retryable failure; cleared by the next attempt or the `retry-scheduled` event
const BACKED_OFF = FREE_BIT * 2; // a sleep since the last failure: a tried endpoint may be used at once
const PANIC = FREE_BIT * 4; // the current selection came from a tier in panic mode (its breakers are ignored)

export class Call<C, T> extends Waiting<C, CallHistory<C>> implements AttemptOwner<C>, AdmissionHost<C>, ReauthHost<C>, HedgeHost<C>, AbortWatcher {
  readonly id: number;
  readonly #op: Operation<C, T>;
  readonly #plan: CallPlan<C>;
  /** Settles the call's promise; a failure resolves it with a rejected promise (no `reject` kept: 56 B). */
  #resolve!: (value: T | PromiseLike<T>) => void;
  /** The latest primary (not hedged) attempt, kept after it ends: it runs while not `done`. */
  #last: Attempt<C> | undefined;
  /**
   * The clock when the call began (`undefined`: not yet). The deadline is derived from it,
   * and an attempt that starts at the same reading (the first, most often) reads it here:
   * one boxed double per call in flight instead of three.
   */
  beganAt: number | undefined = undefined;

  constructor(s: PoolState<C>, op: Operation<C, T>, options: ExecuteOptions | undefined, given?: CallPlan<C>) {
    super();
    this.#op = op;
    this.id = ++s.callSeq;
    if (typeof op !== 'function') throw invalidOption('operation', 'a function (conn, ctx) => Promise', op);
    const plan = given ?? (options === undefined ? s.defaultPlan : resolvePlan(s, options));
    this.#plan = plan;
    if (plan.hedge !== undefined) this.#history().hedging = new Hedging(s, this, plan.hedge);
  }

  /** The pool, reached through the plan (one field fewer per call in flight). */
  protected get s(): PoolState<C> {
    return this.#plan.state;
  }

  /** When the call's deadline passes, in clock time (`Infinity`: none, or the call has not begun). */
  get deadlineAt(): number {
    const t0 = this.beganAt;
    return t0 === undefined ? INF : t0 + this.#plan.deadlineMs;
  }

  /** Attempts started so far. */
  get attempts(): number {
    // Without a history the call made at most one attempt, its latest (see `newSlots`).
    return this.lazy?.attempts ?? (this.#last === undefined ? 0 : 1);
  }

  /** Runs the call; the promise settles exactly once. */
  run(): Promise<T> {
    return new Promise<T>((resolve) => {
      this.#resolve = resolve;
      this.#begin();
    });
  }

  #begin(): void {
    const s = this.s;
    const { signal, pin } = this.#plan;
    s.active++;
    if (s.closed) return this.#fail('CLOSED', 'the pool is closed');
    if (signal !== undefined) {
      if (signal.aborted) return this.#fail('ABORTED', 'the call was aborted before it started', undefined, 'aborted', signal.reason);
      watchAbort(signal, this);
    }
    if (pin !== undefined && this.#excluded()?.includes(pin) === true) {
      return this.#fail('PIN_UNAVAILABLE', `pinned endpoint ${JSON.stringify(pin.name)} is also excluded`);
    }
    // One clock read serves the deadline, the budget and the first selection.
    const now = s.clock.now();
    this.beganAt = now;
    s.opts.retryBudget?.deposit(now);
    if (s.opts.permitScope === 'attempt' || this.takePermit()) this.#next(now);
  }

  /** The caller's signal fired (the call is its own watcher: no closure per call; see signals.ts). */
  aborted(): void {
    this.#fail('ABORTED', 'the call was aborted', undefined, 'aborted', this.#plan.signal?.reason);
  }

  protected resume(): void {
    this.#next();
  }

  protected closedWhileWaiting(): void {
    this.#fail('CLOSED', 'the pool was closed while the call was waiting');
  }

  protected waitTimedOut(was: WaitState): void {
    if (was === SLEEP) this.#next();
    else if (was === ADMISSION && this.s.clock.now() < this.deadlineAt) admissionTimedOut(this.s, this, this.lazy!.admitting!);
    else this.#deadlineExceeded();
  }

  /** Selects and goes on; `at`: the current time when the caller just read it. */
  #next(at?: number): void {
    if (this.settled) return;
    const s = this.s;
    const now = at ?? s.clock.now();
    if (now >= this.deadlineAt) return this.#deadlineExceeded();
    if (s.closed) return this.#fail('CLOSED', 'the pool was closed');
    const pin = this.#plan.pin;
    const sel = pin !== undefined ? selectPinned(pin, now, this.tried, this.#excluded()) : s.select(now, this.tried, this.#excluded());
    if (typeof sel === 'string') return this.#pinUnavailable(sel, undefined);
    switch (sel.kind) {
      case 'endpoint':
        if (sel.tried && !this.flag(BACKED_OFF)) {
          const h = this.#history();
          const delay = backoffDelay(++h.retries, this.#plan.backoff, s.random, h.lastDelay);
          h.lastDelay = delay;
          return this.#sleep(delay, false);
        }
        this.setFlag(PANIC, sel.panic === true);
        return this.#admit(sel.endpoint, now);
      case 'wait':
        if (sel.endpoint === undefined || sel.waitMs === INF) return this.#sleep(sel.waitMs, true);
        // Deadline-aware admission: a turn that comes too late fails at once (waits.ts).
        if (this.lateTurn(sel.waitMs, now, sel.endpoint)) return this.#fail('RATE_LIMITED', this.lateTurn(sel.waitMs, now, sel.endpoint)!, Math.ceil(sel.waitMs));
        return this.#sleep(sel.waitMs, true, sel.endpoint);
      case 'none':
        // 'wait' waits for a cooldown or a probe, never when nothing can admit (all excluded or disabled).
        if (this.#plan.breakerMode === 'wait' && (sel.retryAfterMs !== INF || !nothingCanAdmit(s, pin, this.#excluded()))) return this.#sleep(sel.retryAfterMs, true);
        if (pin !== undefined) return this.#pinUnavailable('its breaker is open', sel.retryAfterMs);
        return this.#fail('NO_ENDPOINT', 'no endpoint admits calls: every candidate is excluded or its breaker is open', sel.retryAfterMs);
    }
  }

  protected tookTurn(ep: EndpointState<C>, now: number): void {
    return now < this.deadlineAt && !this.s.closed && ep.readyNow(now, this.flag(PANIC)) ? this.#admit(ep, now) : this.#next(now);
  }

  /** With a shared store, asks it first (see admission.ts); otherwise launches at once. */
  #admit(ep: EndpointState<C>, now: number): void {
    if (!this.permitToSend()) return;
    if (!needsAdmission(this.s, ep, now)) return this.#launch(ep, now);
    this.#history().admitting = ep;
    this.waitFor(ADMISSION, this.s.opts.sharedQuota!.timeoutMs);
    askStore(this.s, this, ep);
  }

  awaitingAdmission(ep: EndpointState<C>): boolean {
    return this.waiting === ADMISSION && this.lazy!.admitting === ep; // #admit made the history
  }

  /** The store answered, failed or timed out: launch on `ep` if it can still take the attempt, else select again. */
  admissionDone(ep: EndpointState<C>, now: number, refused: boolean): void {
    this.stopWaiting();
    if (refused) this.#next();
    else if (this.#stillAdmissible(ep, now)) this.#launch(ep, now);
  }

  #stillAdmissible(ep: EndpointState<C>, now: number): boolean {
    if (now >= this.deadlineAt) this.#deadlineExceeded();
    else if (!ep.readyNow(now, this.flag(PANIC))) this.#next();
    else return true;
    return false;
  }

  #launch(ep: EndpointState<C>, now: number, asHedge = false): void {
    const s = this.s;
    // The first attempt of a call with no history is counted by becoming its latest, below.
    const h = this.lazy;
    const n = h !== undefined ? ++h.attempts : this.#last === undefined ? 1 : ++this.#history().attempts;
    if (!asHedge) {
      this.setFlag(RETRY_PENDING | BACKED_OFF, false);
      this.queueWaitEnds();
    }
    const a = new Attempt<C>(this, ep, n, ep.breaker.enter(now), now === this.beganAt ? undefined : now);
    claimSlot(ep, now);
    if (asHedge) this.lazy!.hedging!.started(a);
    else {
      this.#last = a;
      this.lazy?.hedging?.schedule(ep);
    }
    startAttempt(s, a, this.#plan.attemptTimeoutMs, now, this.id);
    let pending: unknown;
    try {
      pending = this.#op(ep.conn, a);
    } catch (error) {
      return this.attemptFailed(a, error, true);
    }
    if (!isThenable(pending)) return this.attemptFailed(a, new NotAPromiseError(pending), true);
    try {
      watchAttempt(a, pending);
    } catch (error) {
      this.attemptFailed(a, error, true);
    }
  }

  /** Ends an attempt's bookkeeping (idempotence is the caller's job, via `a.done`). */
  #endAttempt(a: Attempt<C>): void {
    a.done = true;
    this.s.timeouts.remove(a); // a no-op unless it is queued
    this.lazy?.hedging?.remove(a); // a no-op for the primary
    releaseSlot(this.s, a);
    if (!this.#othersRunning()) this.releaseAfterSend();
  }

  attemptSucceeded(a: Attempt<C>, value: unknown): void {
    if (a.done) return;
    this.#endAttempt(a);
    recordSuccess(this.s, a, this.id);
    if (this.settled) return;
    this.settled = true;
    this.#cleanup('superseded');
    this.#resolve(value as T);
  }

  attemptFailed(a: Attempt<C>, error: unknown, sync: boolean): void {
    if (a.done) return;
    this.#endAttempt(a);
    const h = this.#history();
    h.lastError = error;
    const ep = a.ep;
    const { cls, retryAfterMs, movesOn } = recordFailure(this.s, a, error, sync, (h.verdict ??= newVerdict()), this.#plan.backoff.maxMs, this.id);
    h.lastRetryAfterMs = retryAfterMs;
    if (cls === 'transient') keepError(ep, error, this.s.clock.now());
    if (this.settled) return;
    const final = cls === 'permanent' || cls === 'retry-narrower';
    if (!final && this.#othersRunning()) {
      // A hedged call goes on while another of its attempts may still answer.
      if (cls === 'unsupported' || movesOn) this.#history().exclude(ep, this.#plan.excluded);
      else this.#history().markTried(ep);
      return;
    }
    // A parked or disabled endpoint is out of the running: selection skips it by itself.
    if (movesOn) return this.#retryOrFail();
    switch (cls) {
      case 'permanent':
        return this.#fail('PERMANENT', permanentMessage(ep.name, error, sync, h.verdict));
      case 'retry-narrower':
        return this.#fail('RETRY_NARROWER', `endpoint ${JSON.stringify(ep.name)} asked for a narrower request`);
      case 'unsupported':
        this.#history().exclude(ep, this.#plan.excluded);
        return this.#retryOrFail();
      case 'unauthorized': {
        const why = reauthenticate(this.s, ep, (h.refreshed ??= []), this, a.authGeneration);
        return why === undefined ? this.waitFor(AUTH, INF) : this.#fail('UNAUTHORIZED', why);
      }
      default:
        this.#history().markTried(ep);
        if (cls === 'rate-limited') this.lostTurn();
        this.setFlag(RETRY_PENDING, true);
        return this.#retryOrFail();
    }
  }

  /** Failures, retries, exclusions, hedges, the store: made at first need (most calls never fail nor hedge), with the wait slots. */
  #history(): CallHistory<C> {
    return this.slots();
  }

  /** The waits' slots are the call's history: one lazily made object. It starts with the attempts made so far (at most one without it). */
  protected override newSlots(): CallHistory<C> {
    return new CallHistory<C>(this.#last === undefined ? 0 : 1);
  }

  /** HedgeHost: endpoints this call already tried. */
  get tried(): EndpointState<C>[] | undefined {
    return this.lazy?.tried;
  }

  /** Endpoints this call must not use: its own exclusions, then those it added. */
  #excluded(): EndpointState<C>[] | undefined {
    return this.lazy?.excluded ?? this.#plan.excluded;
  }

  /** The primary attempt, while it runs. */
  #running(): Attempt<C> | undefined {
    return this.#last?.done === false ? this.#last : undefined;
  }

  #othersRunning(): boolean {
    return this.#running() !== undefined || (this.lazy?.hedging?.running.length ?? 0) > 0;
  }

  /** HedgeHost: endpoints a hedge must avoid, or `undefined` when the call cannot hedge now (a settled call runs nothing). */
  hedgeAvoiding(now: number): EndpointState<C>[] | undefined {
    const running = this.#running();
    if (running === undefined || this.#plan.pin !== undefined || now >= this.deadlineAt) return undefined;
    const busy: EndpointState<C>[] = this.#excluded()?.slice() ?? [];
    busy.push(running.ep);
    for (const h of this.lazy!.hedging!.running) busy.push(h.ep);
    return busy;
  }

  launchHedge(ep: EndpointState<C>, now: number): void {
    this.#launch(ep, now, true);
  }

  /** @internal the timeout queue found this attempt past its due time. */
  attemptTimedOut(a: Attempt<C>): void {
    if (a.done) return;
    const s = this.s;
    this.#endAttempt(a);
    const now = s.clock.now();
    const h = this.#history();
    h.lastError = recordTimeout(s, a, now, this.id, starved(this.#plan, this.deadlineAt, a, now));
    keepError(a.ep, h.lastError, now);
    h.lastRetryAfterMs = undefined;
    if (this.settled) return;
    if (now >= this.deadlineAt) return this.#deadlineExceeded();
    this.#history().markTried(a.ep);
    if (this.#othersRunning()) return;
    this.setFlag(RETRY_PENDING, true);
    this.#retryOrFail();
  }

  /** ReauthHost: the refresh succeeded; replay on `ep` (an attempt that spends no retry). A settled call waits for nothing. */
  refreshed(ep: EndpointState<C>): void {
    if (this.waiting !== AUTH) return;
    this.stopWaiting();
    this.#history().replays++;
    const now = this.s.clock.now();
    if (this.#stillAdmissible(ep, now)) this.#admit(ep, now);
  }

  refreshFailed(ep: EndpointState<C>, error: unknown): void {
    if (this.waiting !== AUTH) return;
    this.#history().lastError = error;
    this.#fail('AUTH', `refreshing the credentials of endpoint ${JSON.stringify(ep.name)} failed`);
  }

  #retryOrFail(): void {
    if (this.attempts - (this.lazy?.replays ?? 0) >= attemptLimit(this.s, this.#plan.maxAttempts)) {
      return this.#fail('RETRIES_EXHAUSTED', this.attempts === 1 ? 'the only attempt allowed failed' : `all ${this.attempts} attempts failed`, this.lazy?.lastRetryAfterMs);
    }
    const budget = this.s.opts.retryBudget;
    if (budget !== undefined && !budget.tryWithdraw(this.s.clock.now())) {
      return this.#fail('RETRY_BUDGET_EXHAUSTED', `the pool's retry budget is spent; no retry after ${attemptCount(this.attempts)}`, this.lazy?.lastRetryAfterMs);
    }
    this.#next();
  }

  /** Waits `ms` (`Infinity`: until freed capacity wakes it) or its turn on `queueOn`'s quota, bounded by the deadline; `hinted`: not a backoff. */
  #sleep(ms: number, hinted: boolean, queueOn?: EndpointState<C>): void {
    if (this.flag(RETRY_PENDING)) {
      this.setFlag(RETRY_PENDING, false);
      if (this.s.listener !== undefined) this.s.emit({ type: 'retry-scheduled', callId: this.id, attempt: this.attempts + 1, delayMs: ms, hinted });
    }
    this.setFlag(BACKED_OFF, true);
    if (queueOn !== undefined) this.queueFor(queueOn, ms, this.id);
    else this.sleep(ms);
  }

  #deadlineExceeded(): void {
    this.#fail('DEADLINE_EXCEEDED', `the call's deadline of ${this.#plan.deadlineMs} ms passed after ${attemptCount(this.attempts)}`);
  }

  #pinUnavailable(why: string, retryAfterMs: number | undefined): void {
    this.#fail('PIN_UNAVAILABLE', `pinned endpoint ${JSON.stringify(this.#plan.pin!.name)} cannot serve: ${why}`, retryAfterMs);
  }

  #fail(code: PoolErrorCode, message: string, retryAfterMs?: number, cancel: CancelReason = 'aborted', abortReason?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    const lastError = this.lazy?.lastError;
    const cause = lastError !== undefined ? lastError : code === 'NO_ENDPOINT' ? lastPoolError(this.s) : abortReason;
    const lastEndpoint = this.lazy?.hedging?.latestEndpoint(this.#last) ?? this.#last?.ep;
    const error = new PoolError(code, message, { cause, attempts: this.attempts, endpoint: lastEndpoint?.name, retryAfterMs: retryAfterMs === INF ? undefined : retryAfterMs });
    this.#cleanup(code === 'CLOSED' ? 'closed' : cancel, abortReason ?? error);
    recordCallFailure(this.s, this.id, error, lastEndpoint);
    this.#resolve(Promise.reject(rejectionOf(this.#plan, error)));
  }

  #cancel(a: Attempt<C>, cancel: CancelReason, abortReason: unknown): void {
    this.#endAttempt(a);
    recordCancel(this.s, a, cancel, abortReason, this.id);
  }

  /** Releases everything the call holds; running attempts are cancelled (their signals abort, `attempt-cancelled`). */
  #cleanup(cancel: CancelReason = 'aborted', abortReason?: unknown): void {
    const s = this.s;
    const running = this.#running();
    if (running !== undefined) this.#cancel(running, cancel, abortReason);
    const hedging = this.lazy?.hedging;
    if (hedging !== undefined) {
      for (const a of hedging.running.slice()) this.#cancel(a, cancel, abortReason);
      hedging.stop();
    }
    this.stopWaiting();
    this.releasePermit();
    if (this.#plan.signal !== undefined) unwatchAbort(this.#plan.signal, this);
    s.callEnded();
  }
}
