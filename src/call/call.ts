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
 * Beside it: waits, plan, admission, hedging, auth, attempt and outcome (rules in ARCHITECTURE.md: permit
 * scope, attempt timeouts under the deadline, backoff only before a tried endpoint, state before events, nothing left behind).
 */
import { PoolError, invalidOption, unauthorizedMessage, type PoolErrorCode } from '../base/errors.js';
import type { CancelReason } from '../base/events.js';
import { METRICS } from '../base/metrics.js';
import type { ExecuteOptions } from '../options/options.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';
import type { AdmissionHost } from './admission.js';
import { claimSlot, isThenable, NotAPromiseError, OwnedAttempt, releaseSlot, startAttempt, watchAttempt, type Attempt, type AttemptOwner } from './attempt.js';
import type { ReauthHost } from './auth.js';
import { backoffDelay } from './backoff.js';
import type { Operation } from './context.js';
import type { HedgeHost } from './hedging.js';
import { attemptCount, newVerdict, permanentMessage, quoted, recordCallFailure, recordCancel, recordFailure, recordSuccess, recordTimeout, starved } from './outcome.js';
import { resolvePlan, settlementOf, type CallPlan } from './plan.js';
import { ADMISSION, AUTH, QUEUE, SLEEP, Waiting, type WaitState } from './waits.js';
import { ABORT_HELD, BACKED_OFF, PANIC, REPORTING, RETRY_PENDING } from './call-flags.js';
import type { CallOperation } from './call-core.js';
import { spent, CallHistory, failureList, keepError, lastPoolError, noEndpointMessage, noteFailure, nothingCanAdmit } from './limits-of-a-call.js';
import { unwatchAbort, watchAbort, type AbortWatcher } from './signals.js';

const INF = Infinity;
export class Call<C, T> extends Waiting<C, CallHistory<C>> implements AttemptOwner<C>, AdmissionHost<C>, ReauthHost<C>, HedgeHost<C>, AbortWatcher {
  // Assigned, not declared (see SignalContext). The operation is CallCore's (`operation`).
  /** Settles the call's promise; a failure resolves it with a rejected promise (no `reject` kept: 56 B). */
  private declare resolveCall: (value: T | PromiseLike<T>) => void;

  constructor(s: PoolState<C>, op: Operation<C, T>, options: ExecuteOptions | undefined, given?: CallPlan<C>) {
    if (typeof op !== 'function') throw invalidOption('operation', 'a function (conn, ctx) => Promise', op);
    const plan = given ?? (options === undefined ? s.defaultPlan : resolvePlan(s, options));
    super(plan, op as unknown as CallOperation<C>);
    this.resolveCall = undefined as never; // set by run(); assigned here so that every call has one shape
    if (plan.hedge !== undefined) this.slotsNow().hedges = new s.features.hedge!.Hedging(s, this, plan.hedge); // a plan hedges only with the feature
  }

  /** Attempts started so far (without a history, at most one: itself; see makeSlots). */
  get attempts(): number {
    return this.lazySlots?.attempts ?? (this.hasLaunched ? 1 : 0);
  }

  /** Runs the call; the promise settles exactly once. */
  run(): Promise<T> {
    return new Promise<T>((resolve) => {
      this.resolveCall = resolve;
      Call.#begin(this);
    });
  }

  static #begin<C, T>(c: Call<C, T>): void {
    const s = c.s;
    const { signal, pin } = c.plan;
    s.active++;
    if (s.closed) return Call.#fail(c, 'CLOSED', 'the pool is closed');
    if (signal !== undefined) {
      if (signal.aborted) return Call.#fail(c, 'ABORTED', 'the call was aborted before it started', undefined, 'aborted', signal.reason);
      const refused = watchAbort(signal, c); // what the signal's addEventListener threw, if it did
      if (refused !== undefined) return Call.#fail(c, 'INVALID_OPTIONS', "the call's signal threw when listened to (see cause)", undefined, 'aborted', refused.error);
    }
    if (pin !== undefined && Call.#excluded(c)?.includes(pin) === true) {
      return Call.#fail(c, 'PIN_UNAVAILABLE', `pinned endpoint ${quoted(pin)} is also excluded`);
    }
    // One clock read serves the deadline, the budget and the first selection.
    const now = s.clock.now();
    c.beganAt = now;
    s.opts.retryBudget?.deposit(now);
    if (s.opts.permitScope === 'attempt' || c.takePermit()) Call.#next(c, now);
  }

  /** The caller's signal fired (the call is its own watcher: no closure per call; see signals.ts). */
  aborted(): void {
    if (this.hasFlag(REPORTING)) return this.setFlag(ABORT_HELD, true);
    Call.#fail(this, 'ABORTED', 'the call was aborted', undefined, 'aborted', this.plan.signal?.reason);
  }

  protected resume(): void {
    Call.#next(this);
  }

  protected closedWhileWaiting(why = 'while the call was waiting'): void {
    Call.#fail(this, 'CLOSED', `the pool was closed ${why}`);
  }

  protected waitTimedOut(was: WaitState): void {
    if (was === SLEEP || was === QUEUE) Call.#next(this); // past the deadline, #next ends the call
    else if (was === ADMISSION && this.s.clock.now() < this.deadlineAt) this.s.features.store!.admissionTimedOut(this.s, this, this.lazySlots!.admitting!);
    else Call.#deadlineExceeded(this);
  }

  /** Selects and goes on; `at`: the current time when the caller just read it. */
  static #next<C, T>(c: Call<C, T>, at?: number): void {
    if (c.settled) return;
    const s = c.s;
    const now = at ?? s.clock.now();
    if (now >= c.deadlineAt) return Call.#deadlineExceeded(c);
    const pin = c.plan.pin;
    let late: string | undefined;
    // A pinned call's plan holds its endpoint only with the call-routing feature (plan.ts).
    const sel = pin !== undefined ? s.features.routing!.select(pin, now, c.tried, Call.#excluded(c)) : c.plan.avoid === undefined ? s.select(now, c.tried, Call.#excluded(c)) : s.features.routing!.avoiding(s, c.plan.avoid, now, c.tried, Call.#excluded(c), c.deadlineAt);
    // After selecting: a listener of the `panic` event it may emit can close the pool or end the call (#fail then does nothing).
    if (s.closed || c.settled) return Call.#fail(c, 'CLOSED', 'the pool was closed');
    if (typeof sel === 'string') return Call.#fail(c, 'PIN_UNAVAILABLE', sel);
    if (sel instanceof PoolError) return Call.#fail(c, 'INVALID_OPTIONS', sel.message, undefined, 'aborted', sel.cause); // `avoid` threw
    switch (sel.kind) {
      case 'endpoint':
        if (sel.tried && !c.hasFlag(BACKED_OFF)) {
          const h = c.slotsNow();
          const delay = backoffDelay(++h.retries, c.plan.backoff, s.random, h.lastDelay);
          h.lastDelay = delay;
          return Call.#sleep(c, delay, false);
        }
        c.setFlag(PANIC, sel.panic === true);
        return Call.#admit(c, sel.endpoint, now);
      case 'wait':
        if (sel.endpoint === undefined || sel.waitMs === INF) return Call.#sleep(c, sel.waitMs, true);
        late = c.lateTurn(sel.waitMs, now, sel.endpoint); // deadline-aware admission: a turn that comes too late fails at once (waits.ts)
        return late !== undefined ? Call.#fail(c, 'RATE_LIMITED', late, Math.ceil(sel.waitMs)) : Call.#sleep(c, sel.waitMs, true, sel.endpoint);
      case 'none':
        // 'wait' waits for a cooldown or a probe, never when nothing can admit (all excluded or disabled; a pinned one never gets here).
        if (c.plan.breakerMode === 'wait' && (sel.retryAfterMs !== INF || pin !== undefined || !nothingCanAdmit(s, Call.#excluded(c)))) return Call.#sleep(c, sel.retryAfterMs, true);
        if (pin !== undefined) return Call.#fail(c, 'PIN_UNAVAILABLE', s.features.routing!.out(pin, now), sel.retryAfterMs);
        return Call.#fail(c, 'NO_ENDPOINT', noEndpointMessage(s, now, Call.#excluded(c)) + failureList(c.lazySlots), sel.retryAfterMs);
    }
  }

  protected tookTurn(ep: EndpointState<C>, now: number): void {
    return now < this.deadlineAt && !this.s.closed && ep.readyNow(now, this.hasFlag(PANIC) || this.s.inPanic(ep, now)) ? Call.#admit(this, ep, now) : Call.#next(this, now);
  }

  /** With a shared store, asks it first (see admission.ts); otherwise launches at once. */
  static #admit<C, T>(c: Call<C, T>, ep: EndpointState<C>, now: number): void {
    if (!c.permitToSend()) return;
    const s = c.s;
    if (s.fleet === undefined || !s.fleet.needsAdmission(ep, now)) return Call.#launch(c, ep, now);
    c.slotsNow().admitting = ep;
    c.waitFor(ADMISSION, s.opts.sharedQuota!.timeoutMs);
    s.features.store!.askStore(s, c, ep);
  }

  awaitingAdmission(ep: EndpointState<C>): boolean {
    return this.waiting === ADMISSION && this.lazySlots!.admitting === ep; // #admit made the history
  }

  /** The store answered, failed or timed out: launch on `ep` if it can still take the attempt, else select again. */
  admissionDone(ep: EndpointState<C>, now: number, refused: boolean): void {
    this.stopWaiting();
    if (refused || this.s.closed) Call.#next(this); // a listener of store-degraded or -recovered may have closed the pool (or ended the call)
    else if (!this.settled && Call.#stillAdmissible(this, ep, now)) Call.#launch(this, ep, now);
  }

  static #stillAdmissible<C, T>(c: Call<C, T>, ep: EndpointState<C>, now: number): boolean {
    if (now >= c.deadlineAt) Call.#deadlineExceeded(c);
    else if (!ep.readyNow(now, c.hasFlag(PANIC))) Call.#next(c);
    else return true;
    return false;
  }

  static #launch<C, T>(c: Call<C, T>, ep: EndpointState<C>, now: number, asHedge = false): void {
    const probe = ep.breaker.enter(now);
    if (!asHedge) c.queueWaitEnds(RETRY_PENDING | BACKED_OFF);
    // The first attempt is the call itself (counted by hasLaunched until the call has a history).
    const own = !c.hasLaunched;
    if (own && c.lazySlots !== undefined) c.lazySlots.attempts++;
    const a = own ? c : new OwnedAttempt<C>(c, ep, ++c.slotsNow().attempts, probe, now === c.beganAt ? undefined : now);
    if (own) c.takeOwn(ep, probe, now);
    else if (!asHedge) c.lazySlots!.last = a;
    claimSlot(ep, now);
    if (asHedge) c.lazySlots!.hedges!.started(a);
    else c.lazySlots?.hedges?.schedule(ep);
    startAttempt(c.s, a);
    if (a.done) return; // a listener of `attempt-start` ended the call: the operation is not called
    let pending: unknown;
    try {
      pending = c.callOp.call(c, ep.conn, a); // called on the call, as it always was
    } catch (error) {
      return c.attemptFailed(a, error, true);
    }
    try {
      if (!isThenable(pending)) return c.attemptFailed(a, new NotAPromiseError(pending), true); // reading `then` runs user code
      watchAttempt(a, pending);
    } catch (error) {
      c.attemptFailed(a, error, true);
    }
  }

  /** Ends an attempt's bookkeeping (idempotence is the caller's job, via `a.done`). */
  static #endAttempt<C, T>(c: Call<C, T>, a: Attempt<C>): void {
    a.done = true;
    c.s.timeouts.remove(a); // a no-op unless it is queued
    c.lazySlots?.hedges?.remove(a); // a no-op for the primary
    releaseSlot(c.s, a);
    if (!Call.#othersRunning(c)) c.releaseAfterSend();
  }

  attemptSucceeded(a: Attempt<C>, value: unknown): void {
    if (a.done) return;
    Call.#endAttempt(this, a);
    // Settled before `attempt-success` is out: a listener that aborts the call or closes the pool then is too late.
    const late = this.settled;
    this.settled = true;
    recordSuccess(this.s, a);
    if (late) return;
    Call.#cleanup(this, 'superseded');
    this.resolveCall(value as T);
  }

  attemptFailed(a: Attempt<C>, error: unknown, sync: boolean): void {
    if (a.done) return;
    Call.#endAttempt(this, a);
    const h = this.slotsNow();
    h.lastError = error;
    const ep = a.ep;
    this.reporting(true);
    const { cls, retryAfterMs, movesOn } = recordFailure(this.s, a, error, sync, (h.verdict ??= newVerdict()), this.plan.backoff.maxMs);
    this.reporting(false);
    h.lastRetryAfterMs = retryAfterMs;
    noteFailure(h, ep, cls);
    if (cls === 'transient') keepError(ep, error, this.s.clock.now());
    if (this.settled) return;
    const final = (cls === 'permanent' && !movesOn) || cls === 'retry-narrower'; // an invalid key's permanent is about the endpoint
    // Parked or disabled, an endpoint is out of the running (selection skips it), and tried: should it leave the pool, the attempt cap counts it (swaps generator, seed 42611).
    if (movesOn) this.slotsNow().markTried(ep);
    if (!final && Call.#othersRunning(this)) { // a hedged call goes on while another of its attempts may still answer
      if (cls === 'unsupported' || movesOn) this.slotsNow().exclude(ep, this.plan.excluded);
      else if (cls !== 'unauthorized' || this.lazySlots?.hedges?.reauthBeside(a, h) !== true) this.slotsNow().markTried(ep); // unauthorized: refreshed, replayed there
      return;
    }
    if (movesOn) return Call.#retryOrFail(this);
    switch (cls) {
      case 'permanent':
        return Call.#fail(this, 'PERMANENT', permanentMessage(ep.name, error, sync, h.verdict));
      case 'retry-narrower':
        return Call.#fail(this, 'RETRY_NARROWER', `endpoint ${quoted(ep)} asked for a narrower request`);
      case 'unsupported':
        this.slotsNow().exclude(ep, this.plan.excluded);
        return Call.#retryOrFail(this);
      case 'unauthorized': {
        const auth = this.s.features.auth; // without it there is no `refreshAuth`: the answer is final
        const why = auth === undefined ? unauthorizedMessage(ep.name) : auth.reauthenticate(this.s, ep, (h.refreshed ??= []), this, a.authGeneration, this.attempts - h.replays);
        return why === undefined ? this.waitFor(AUTH, INF) : Call.#fail(this, 'UNAUTHORIZED', why);
      }
      default:
        this.slotsNow().markTried(ep);
        if (cls === 'rate-limited') this.lostTurn();
        this.setFlag(RETRY_PENDING, true);
        return Call.#retryOrFail(this);
    }
  }

  /** The waits' slots are the call's history (failures, retries, exclusions, hedges, the store): one object made at first need, read as lazySlots. */
  protected override makeSlots(): CallHistory<C> {
    return new CallHistory<C>(this.hasLaunched ? 1 : 0);
  }

  /** HedgeHost: endpoints this call already tried. */
  get tried(): EndpointState<C>[] | undefined {
    return this.lazySlots?.tried;
  }

  /** Endpoints this call must not use: its own exclusions, then those it added. */
  static #excluded<C, T>(c: Call<C, T>): EndpointState<C>[] | undefined {
    return c.lazySlots?.excluded ?? c.plan.excluded;
  }

  /** The latest primary (not hedged) attempt, the call itself until a retry, while it runs. */
  static #running<C, T>(c: Call<C, T>): Attempt<C> | undefined {
    const a = c.lazySlots?.last ?? (c.hasLaunched ? c : undefined);
    return a?.done === false ? a : undefined;
  }

  static #othersRunning<C, T>(c: Call<C, T>): boolean {
    return Call.#running(c) !== undefined || (c.lazySlots?.hedges?.running.length ?? 0) > 0;
  }

  /** HedgeHost: endpoints a hedge must avoid, or `undefined` when the call cannot hedge now (a settled call runs nothing; after close() nothing new starts). */
  hedgeAvoiding(now: number): EndpointState<C>[] | undefined {
    const running = Call.#running(this);
    if (running === undefined || this.plan.pin !== undefined || now >= this.deadlineAt || this.s.closed) return undefined;
    if (spent(this.s, this.attempts, this.lazySlots, this.plan.maxAttempts)) return undefined; // a hedge is an attempt
    const busy: EndpointState<C>[] = Call.#excluded(this)?.slice() ?? [];
    busy.push(running.ep);
    for (const h of this.lazySlots!.hedges!.running) busy.push(h.ep);
    return busy;
  }

  launchHedge(ep: EndpointState<C>, now: number): void {
    Call.#launch(this, ep, now, true);
  }

  /** @internal the timeout queue found this attempt past its due time. */
  attemptTimedOut(a: Attempt<C>): void {
    if (a.done) return;
    const s = this.s;
    Call.#endAttempt(this, a);
    const now = s.clock.now();
    const h = this.slotsNow();
    this.reporting(true);
    h.lastError = recordTimeout(s, a, now, starved(this.plan, this.deadlineAt, a, now));
    this.reporting(false);
    keepError(a.ep, h.lastError, now);
    noteFailure(h, a.ep, 'timeout');
    h.lastRetryAfterMs = undefined;
    if (this.settled) return;
    if (now >= this.deadlineAt) return Call.#deadlineExceeded(this);
    this.slotsNow().markTried(a.ep);
    if (Call.#othersRunning(this)) return;
    this.setFlag(RETRY_PENDING, true);
    Call.#retryOrFail(this);
  }

  /** ReauthHost: the refresh succeeded; replay on `ep` (an attempt that spends no retry). A settled call waits for nothing. */
  refreshed(ep: EndpointState<C>): void {
    if (this.waiting !== AUTH) return;
    this.stopWaiting();
    this.slotsNow().replays++;
    const now = this.s.clock.now();
    if (Call.#stillAdmissible(this, ep, now)) Call.#admit(this, ep, now);
  }

  refreshFailed(message: string, error: unknown): void {
    if (this.waiting !== AUTH) return;
    this.slotsNow().lastError = error;
    Call.#fail(this, 'AUTH', message);
  }

  static #retryOrFail<C, T>(c: Call<C, T>): void {
    if (spent(c.s, c.attempts, c.lazySlots, c.plan.maxAttempts)) {
      return Call.#fail(c, 'RETRIES_EXHAUSTED', `${c.attempts === 1 ? 'the only attempt allowed failed' : `all ${c.attempts} attempts failed`}${failureList(c.lazySlots, ': ', '')}`, c.lazySlots?.lastRetryAfterMs);
    }
    const budget = c.s.opts.retryBudget;
    if (budget !== undefined && !budget.tryWithdraw(c.s.clock.now())) {
      return Call.#fail(c, 'RETRY_BUDGET_EXHAUSTED', `the pool's retry budget is spent; no retry after ${attemptCount(c.attempts)}${failureList(c.lazySlots)}`, c.lazySlots?.lastRetryAfterMs);
    }
    Call.#next(c);
  }

  /** Waits `ms` (`Infinity`: until freed capacity wakes it) or its turn on `queueOn`'s quota, bounded by the deadline; `hinted`: not a backoff. */
  static #sleep<C, T>(c: Call<C, T>, ms: number, hinted: boolean, queueOn?: EndpointState<C>): void {
    if (c.hasFlag(RETRY_PENDING)) {
      c.setFlag(RETRY_PENDING, false);
      if (c.s.listener !== undefined) c.s.emit({ type: 'retry-scheduled', callId: c.id, attempt: c.attempts + 1, delayMs: ms, hinted });
      if (c.settled || c.s.closed) return c.closedWhileWaiting(); // a listener ended the call (a no-op then) or closed the pool: fail now, not after the backoff
    }
    c.setFlag(BACKED_OFF, true);
    // Without the limits feature there is no rate to hand out turns at: a cooling endpoint's wait is a sleep.
    if (queueOn !== undefined && c.s.features.limits !== undefined) c.queueFor(queueOn, ms);
    else c.sleep(ms);
  }

  static #deadlineExceeded<C, T>(c: Call<C, T>): void {
    Call.#fail(c, 'DEADLINE_EXCEEDED', `the call's deadline of ${c.plan.deadlineMs} ms passed after ${attemptCount(c.attempts)}${failureList(c.lazySlots)}`);
  }

  static #fail<C, T>(c: Call<C, T>, code: PoolErrorCode, message: string, retryAfterMs?: number, cancel: CancelReason = 'aborted', abortReason?: unknown): void {
    if (c.settled) return;
    c.settled = true;
    const lastError = c.lazySlots?.lastError;
    const cause = lastError !== undefined ? lastError : code === 'NO_ENDPOINT' ? lastPoolError(c.s) : abortReason;
    const latest = c.lazySlots?.last ?? (c.hasLaunched ? c : undefined);
    const lastEndpoint = c.lazySlots?.hedges?.latestEndpoint(latest) ?? latest?.ep;
    const error = new PoolError(code, message, { cause, attempts: c.attempts, endpoint: lastEndpoint?.name, retryAfterMs: retryAfterMs === INF ? undefined : retryAfterMs });
    Call.#cleanup(c, code === 'CLOSED' ? 'closed' : cancel, abortReason ?? error);
    recordCallFailure(c.s, c, error, lastEndpoint);
    c.resolveCall(settlementOf(c.plan, error, (c as { readonly tag?: unknown }).tag) as Promise<T>);
  }

  static #cancel<C, T>(c: Call<C, T>, a: Attempt<C>, cancel: CancelReason, abortReason: unknown): void {
    Call.#endAttempt(c, a);
    recordCancel(c.s, a, cancel, abortReason);
  }

  /** Releases everything the call holds; running attempts are cancelled (their signals abort, `attempt-cancelled`). */
  static #cleanup<C, T>(c: Call<C, T>, cancel: CancelReason = 'aborted', abortReason?: unknown): void {
    const s = c.s;
    const running = Call.#running(c);
    if (running !== undefined) Call.#cancel(c, running, cancel, abortReason);
    const hedging = c.lazySlots?.hedges;
    if (hedging !== undefined) {
      for (const a of hedging.running.slice()) Call.#cancel(c, a, cancel, abortReason);
      hedging.stop();
    }
    c.stopWaiting();
    c.releasePermit();
    if (c.plan.signal !== undefined) unwatchAbort(c.plan.signal, c);
    s.callEnded();
  }
}
