/**
 * One `execute()` call: the retry loop, written as a small state machine so that every
 * wait (permit, rate limit, backoff, a busy endpoint) and every attempt can be cut short
 * at any moment by the deadline, the caller's signal or `close()`, with nothing left
 * behind.
 *
 *   start ─▶ permit ─▶ select ─┬─▶ attempt ─▶ success ─▶ resolve
 *                       ▲      │            └▶ failure ─▶ classify ─┬─▶ fail (permanent, retry-narrower, exhausted)
 *                       │      ├─▶ sleep (backoff, rate limit, breaker wait)   │
 *                       │      ├─▶ park (no free in-flight / probe slot)       │
 *                       │      └─▶ fail (NO_ENDPOINT, PIN_UNAVAILABLE)         │
 *                       └───────────────────────────────────────────────────────┘ retry
 *
 * Rules kept here (ARCHITECTURE.md explains why):
 * - the permit is taken first and held across retries; the deadline bounds the wait for it;
 * - each attempt runs under min(attempt timeout, time left before the deadline);
 * - a retry to an endpoint the call has not tried goes at once; a retry to one it has
 *   tried waits the backoff first;
 * - state changes (breaker, counters, cooldowns) happen before events are emitted;
 * - on every exit, the running attempt is cancelled, its in-flight and probe slots are
 *   released, the permit is returned, timers are cleared and the abort listener removed.
 */
import { refreshOnce, type RefreshAuth } from './auth.js';
import { backoffDelay, type BackoffOptions } from './backoff.js';
import { runClassifier, type Verdict } from '../base/classify.js';
import type { TimerHandle } from '../base/clock.js';
import { LazyContext, type Operation } from './context.js';
import type { TimeoutEntry } from './timeouts.js';
import type { EndpointState } from '../selection/endpoint.js';
import { PoolError, describe, invalidOption, type PoolErrorCode } from '../base/errors.js';
import type { CancelReason, FailureClass } from '../base/events.js';
import { METRICS, safeObserve } from '../base/metrics.js';
import { resolveHedge, type HedgeConfig } from '../selection/hedge.js';
import {
  BREAKER_MODES,
  durationOrInfinity,
  oneOf,
  resolveBackoff,
  resolveRetry,
  type BreakerMode,
  type ExecuteOptions,
} from '../options/options.js';
import type { Selection } from '../selection/selector.js';
import type { PoolState, Waiter } from '../state.js';

/** One attempt: the context the operation sees, plus the pool's bookkeeping for it. */
class Attempt<C> extends LazyContext implements TimeoutEntry {
  readonly call: Call<C, unknown>;
  readonly ep: EndpointState<C>;
  /** The breaker ticket: generation at start and probe epoch (0 unless this is the half-open probe). */
  readonly generation: number;
  readonly probe: number;
  readonly startedAt: number;
  done = false;
  // Its place in the pool's timeout queue.
  dueAt = INF;
  prevTimeout: TimeoutEntry | undefined = undefined;
  nextTimeout: TimeoutEntry | undefined = undefined;
  queued = false;

  constructor(call: Call<C, unknown>, ep: EndpointState<C>, attempt: number, deadlineAt: number, probe: number, now: number) {
    super(ep.name, attempt, deadlineAt);
    this.call = call;
    this.ep = ep;
    this.generation = ep.breaker.generation;
    this.probe = probe;
    this.startedAt = now;
  }

  expire(): void {
    this.call.attemptTimedOut(this);
  }
}

type WaitState = 'none' | 'permit' | 'sleep' | 'park' | 'auth' | 'admission';

const INF = Number.POSITIVE_INFINITY;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as PromiseLike<unknown>).then === 'function';
}

export class Call<C, T> implements Waiter {
  readonly id: number;
  readonly #s: PoolState<C>;
  readonly #op: Operation<C, T>;
  #resolve!: (value: T) => void;
  #reject!: (error: unknown) => void;

  readonly #deadlineMs: number;
  #deadlineAt = INF;
  readonly #attemptTimeoutMs: number;
  readonly #maxAttempts: number;
  readonly #breakerMode: BreakerMode;
  readonly #backoff: BackoffOptions;
  readonly #pin: EndpointState<C> | undefined;
  #excluded: EndpointState<C>[] | undefined;
  #tried: EndpointState<C>[] | undefined;
  readonly #signal: AbortSignal | undefined;

  #attempts = 0;
  /** Replays after a credential refresh: attempts that spend no retry budget. */
  #replays = 0;
  /** Endpoints whose credentials this call already refreshed. */
  #refreshed: EndpointState<C>[] | undefined;
  #retries = 0;
  #lastDelay = 0;
  #lastError: unknown = undefined;
  #lastEndpoint: EndpointState<C> | undefined;
  /** The cooldown set by the last failure when it was rate-limited. */
  #lastRetryAfterMs: number | undefined;
  /** Set by a retryable failure; cleared by the next attempt or the `retry-scheduled` event. */
  #retryPending = false;
  /** A sleep happened since the last failure, so a tried endpoint may be used at once. */
  #backedOff = false;
  #running: Attempt<C> | undefined;
  /** Hedged attempts running beside `#running` (idempotent calls only). */
  #hedges: Attempt<C>[] | undefined;
  #hedge: HedgeConfig | undefined;
  #hedgesLeft = 0;
  #hedgeTimer: TimerHandle | undefined;
  /** The current selection came from a tier in panic mode (its breakers are ignored). */
  #panic = false;
  /** The endpoint the shared store is being asked about. */
  #admitting: EndpointState<C> | undefined;
  #settled = false;
  #holdsPermit = false;
  #waiting: WaitState = 'none';
  #waitTimer: TimerHandle | undefined;
  #onWaitTimer: (() => void) | undefined;
  readonly #verdict: Verdict = { class: 'transient', retryAfterMs: undefined, ceilingPerSecond: undefined, dailyQuotaExhausted: false, disableEndpoint: false, valid: true };

  constructor(s: PoolState<C>, op: Operation<C, T>, options: ExecuteOptions | undefined) {
    this.#s = s;
    this.#op = op;
    this.id = ++s.callSeq;
    const o = s.opts;
    if (typeof op !== 'function') throw invalidOption('operation', 'a function (conn, ctx) => Promise', op);
    if (options === undefined) {
      this.#deadlineMs = o.deadlineMs;
      this.#attemptTimeoutMs = o.attemptTimeoutMs;
      this.#maxAttempts = o.maxAttempts;
      this.#breakerMode = o.breakerMode;
      this.#backoff = o.backoff;
      return;
    }
    if (typeof options !== 'object' || options === null) throw invalidOption('options', 'an object', options);
    this.#deadlineMs = durationOrInfinity('deadlineMs', options.deadlineMs, o.deadlineMs);
    this.#attemptTimeoutMs = durationOrInfinity('attemptTimeoutMs', options.attemptTimeoutMs, o.attemptTimeoutMs);
    this.#maxAttempts = resolveRetry('retry', options.retry, o.maxAttempts);
    this.#breakerMode = oneOf('breakerMode', options.breakerMode, BREAKER_MODES, o.breakerMode);
    this.#backoff = options.backoff === undefined ? o.backoff : resolveBackoff('backoff', options.backoff, o.backoff);
    const signal = options.signal;
    if (signal !== undefined) {
      if (typeof signal !== 'object' || signal === null || typeof signal.addEventListener !== 'function' || typeof signal.removeEventListener !== 'function' || typeof signal.aborted !== 'boolean') {
        throw invalidOption('signal', 'an AbortSignal', signal);
      }
      this.#signal = signal;
    }
    if (options.exclude !== undefined) {
      if (!Array.isArray(options.exclude)) throw invalidOption('exclude', 'an array of endpoint names', options.exclude);
      const excluded: EndpointState<C>[] = [];
      options.exclude.forEach((name, i) => {
        const ep = typeof name === 'string' ? s.byName.get(name) : undefined;
        if (ep === undefined) throw invalidOption(`exclude[${i}]`, 'the name of an endpoint of this pool', name);
        excluded.push(ep);
      });
      this.#excluded = excluded;
    }
    if (options.hedge !== undefined && options.hedge !== false) {
      // A call that is not idempotent is never hedged: running it twice at once could do harm.
      if (options.idempotent !== true) throw invalidOption('hedge', 'a call marked idempotent: true', options.hedge);
      this.#hedge = options.hedge === true ? s.opts.hedge : resolveHedge('hedge', options.hedge, s.opts.hedge);
    } else if (options.hedge === undefined && options.idempotent === true && s.opts.hedgeConfigured) {
      this.#hedge = s.opts.hedge;
    }
    if (this.#hedge !== undefined) this.#hedgesLeft = this.#hedge.maxHedges;
    if (options.pin !== undefined) {
      if (typeof options.pin !== 'string') throw invalidOption('pin', 'an endpoint name', options.pin);
      const ep = s.byName.get(options.pin);
      if (ep === undefined) throw new PoolError('PIN_UNAVAILABLE', `pinned endpoint ${describe(options.pin)} is not in the pool`);
      this.#pin = ep;
    }
  }

  /** Runs the call; the promise settles exactly once. */
  run(): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
      this.#begin();
    });
  }

  #begin(): void {
    const s = this.#s;
    s.active++;
    if (s.closed) return this.#fail('CLOSED', 'the pool is closed');
    if (this.#signal !== undefined) {
      if (this.#signal.aborted) return this.#fail('ABORTED', 'the call was aborted before it started', undefined, 'aborted', this.#signal.reason);
      this.#signal.addEventListener('abort', this);
    }
    if (this.#pin !== undefined && this.#excluded?.includes(this.#pin) === true) {
      return this.#fail('PIN_UNAVAILABLE', `pinned endpoint ${JSON.stringify(this.#pin.name)} is also excluded`);
    }
    // One clock read serves the deadline, the budget and the first selection.
    const now = s.clock.now();
    const deadlineMs = this.#deadlineMs;
    if (deadlineMs !== INF) this.#deadlineAt = now + deadlineMs;
    s.opts.retryBudget?.deposit(now);
    if (s.permits !== INF) {
      if (s.permits > 0) {
        s.permits--;
        this.#holdsPermit = true;
      } else {
        s.permitQueue.push(this);
        return this.#waitFor('permit', INF);
      }
    }
    this.#next(now);
  }

  /** The caller's signal fired (the call is its own abort listener: no closure per call). */
  handleEvent(): void {
    const reason = this.#signal?.reason;
    this.#fail('ABORTED', 'the call was aborted', undefined, 'aborted', reason);
  }

  /** Capacity this call was parked on (an in-flight or probe slot) may be free: select again. */
  wake(): void {
    if (this.#settled || this.#waiting !== 'park') return;
    this.#stopWaiting();
    this.#next();
  }

  /** A permit was handed over from a finished call. */
  grantPermit(): void {
    if (this.#settled) return this.#s.releasePermit();
    this.#holdsPermit = true;
    this.#stopWaiting();
    this.#next();
  }

  /** `close()` reached this call while it was waiting. */
  closeWaiting(): void {
    if (this.#waiting !== 'none') this.#fail('CLOSED', 'the pool was closed while the call was waiting');
  }

  /** Selects and goes on; `at`: the current time when the caller just read it. */
  #next(at?: number): void {
    if (this.#settled) return;
    const s = this.#s;
    const now = at ?? s.clock.now();
    if (now >= this.#deadlineAt) return this.#deadlineExceeded();
    if (s.closed) return this.#fail('CLOSED', 'the pool was closed');
    const sel = this.#pin !== undefined ? this.#selectPinned(now) : s.select(now, this.#tried, this.#excluded);
    if (sel === undefined) return;
    switch (sel.kind) {
      case 'endpoint':
        if (sel.tried && !this.#backedOff) {
          const delay = backoffDelay(++this.#retries, this.#backoff, s.random, this.#lastDelay);
          this.#lastDelay = delay;
          return this.#sleep(delay, false);
        }
        this.#panic = sel.panic === true;
        return this.#admit(sel.endpoint, now);
      case 'wait':
        if (sel.endpoint !== undefined && sel.waitMs !== INF) {
          s.count(METRICS.rateLimitWaits, sel.endpoint.labels);
          if (s.listener !== undefined) s.emit({ type: 'rate-limit-wait', callId: this.id, endpoint: sel.endpoint.name, delayMs: sel.waitMs });
        }
        return this.#sleep(sel.waitMs, true);
      case 'none':
        if (this.#breakerMode === 'wait') return this.#sleep(sel.retryAfterMs, true);
        if (this.#pin !== undefined) return this.#pinUnavailable('its breaker is open', sel.retryAfterMs);
        return this.#fail('NO_ENDPOINT', 'no endpoint admits calls: every candidate is excluded or its breaker is open', sel.retryAfterMs);
    }
  }

  #selectPinned(now: number): Selection<C> | undefined {
    const ep = this.#pin!;
    if (!ep.live) {
      this.#pinUnavailable('it was removed from the pool', undefined);
      return undefined;
    }
    if (this.#excluded?.includes(ep) === true) {
      this.#pinUnavailable('it answered that it does not support this operation', undefined);
      return undefined;
    }
    if (ep.disabled) {
      this.#pinUnavailable('it is disabled', undefined);
      return undefined;
    }
    const out = ep.unavailableMs(now);
    if (out > 0) return { kind: 'none', retryAfterMs: out };
    const wait = ep.readyInMs(now);
    if (wait > 0) return { kind: 'wait', waitMs: wait, endpoint: ep };
    return { kind: 'endpoint', endpoint: ep, tried: this.#tried?.includes(ep) === true };
  }

  /**
   * With a shared store, asks it to admit the attempt first (bounded by the store's
   * timeout); without one, or while it is degraded, launches at once on local limits.
   */
  #admit(ep: EndpointState<C>, now: number): void {
    const s = this.#s;
    const shared = s.opts.sharedQuota;
    const limit = ep.quota.shared;
    if (shared === undefined || limit === undefined || (s.storeDegraded && now < s.storeRetryAt)) return this.#launch(ep, now);
    this.#admitting = ep;
    this.#waitFor('admission', shared.timeoutMs);
    let answer: Promise<number>;
    try {
      answer = Promise.resolve(shared.store.acquire(limit));
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(
      (waitMs) => {
        if (this.#settled || this.#waiting !== 'admission' || this.#admitting !== ep) return;
        this.#stopWaiting();
        const t = s.clock.now();
        s.storeAnswered(t);
        if (typeof waitMs === 'number' && waitMs > 0) {
          // The fleet-wide quota is spent for now: skip this endpoint until it refills.
          ep.quota.coolDown(t, waitMs);
          return this.#next();
        }
        this.#launchIfStillAdmissible(ep, t);
      },
      (error: unknown) => {
        if (this.#settled || this.#waiting !== 'admission' || this.#admitting !== ep) return;
        this.#stopWaiting();
        const t = s.clock.now();
        s.storeFailed(t, error);
        this.#launchIfStillAdmissible(ep, t);
      },
    );
  }

  /** The store timed out: go ahead on local limits. */
  #admissionTimedOut(): void {
    const ep = this.#admitting!;
    const now = this.#s.clock.now();
    this.#s.storeFailed(now, new PoolError('ATTEMPT_TIMEOUT', 'the shared limiter store did not answer in time'));
    this.#launchIfStillAdmissible(ep, now);
  }

  /**
   * After an asynchronous pause, goes on with `ep` if it can still take the attempt, else
   * selects again. `admitted`: the shared store already counted this attempt.
   */
  #launchIfStillAdmissible(ep: EndpointState<C>, now: number, admitted = true): void {
    if (now >= this.#deadlineAt) return this.#deadlineExceeded();
    if (!ep.live || ep.unavailableMs(now, this.#panic) !== 0 || ep.readyInMs(now) !== 0) return this.#next();
    if (admitted) this.#launch(ep, now);
    else this.#admit(ep, now);
  }

  #launch(ep: EndpointState<C>, now: number, asHedge = false): void {
    const s = this.#s;
    const n = ++this.#attempts;
    if (!asHedge) {
      this.#retryPending = false;
      this.#backedOff = false;
    }
    ep.quota.take(now);
    const probe = ep.breaker.enter(now);
    if (++ep.inFlight > ep.peakInFlight) ep.peakInFlight = ep.inFlight;
    ep.attempts++;
    ep.usage.add(now);
    const a = new Attempt(this as Call<C, unknown>, ep, n, this.#deadlineAt, probe, now);
    if (asHedge) (this.#hedges ??= []).push(a);
    else this.#running = a;
    this.#lastEndpoint = ep;
    if (this.#hedgesLeft > 0 && this.#hedgeTimer === undefined && !asHedge) this.#scheduleHedge(ep);
    const left = this.#deadlineAt - now;
    const timeout = this.#attemptTimeoutMs < left ? this.#attemptTimeoutMs : left;
    if (timeout !== INF) s.timeouts.add(a, now + timeout);
    s.count(METRICS.attempts, ep.labels);
    if (s.listener !== undefined) s.emit({ type: 'attempt-start', callId: this.id, endpoint: ep.name, attempt: n, probe: probe !== 0 });
    let pending: unknown;
    try {
      pending = this.#op(ep.conn, a);
    } catch (error) {
      return this.#failed(a, error, true);
    }
    if (!isThenable(pending)) {
      return this.#failed(a, new TypeError('the operation must return a promise'), true);
    }
    try {
      pending.then(
        (value) => this.#succeeded(a, value as T),
        (error: unknown) => this.#failed(a, error, false),
      );
    } catch (error) {
      this.#failed(a, error, true);
    }
  }

  /** Ends an attempt's bookkeeping (idempotence is the caller's job, via `a.done`). */
  #endAttempt(a: Attempt<C>): void {
    a.done = true;
    if (a.queued) this.#s.timeouts.remove(a);
    if (this.#running === a) this.#running = undefined;
    else if (this.#hedges !== undefined) {
      const i = this.#hedges.indexOf(a);
      if (i >= 0) this.#hedges.splice(i, 1);
    }
    const ep = a.ep;
    const wasFull = ep.inFlight >= ep.maxInFlight;
    ep.inFlight--;
    if (wasFull || a.probe !== 0) this.#s.wakeParked();
  }

  #succeeded(a: Attempt<C>, value: T): void {
    if (a.done) return;
    const s = this.#s;
    this.#endAttempt(a);
    const ep = a.ep;
    ep.successes++;
    // Reading the clock costs as much as the rest of this method: only when something uses it.
    const now = s.timesSuccesses ? s.clock.now() : a.startedAt;
    const durationMs = now - a.startedAt;
    if (s.tracksLatency) ep.latency.observe(now, durationMs, false, s.opts.latency.decayMs, s.opts.latency.failurePenaltyMs);
    let closed = false;
    let opened = false;
    // A slow success still answers the caller, but counts against the endpoint (not for a probe).
    if (durationMs > s.opts.breaker.slowCallMs && a.probe === 0) opened = ep.breaker.recordFailure(a.generation, a.probe, now);
    else closed = ep.breaker.recordSuccess(now);
    if (s.metrics !== undefined) {
      safeObserve(s.metrics, METRICS.attemptDuration, ep.labels, durationMs);
      if (opened) s.count(METRICS.breakerOpened, ep.labels);
    }
    if (s.listener !== undefined) {
      if (closed) s.emit({ type: 'breaker-closed', endpoint: ep.name });
      if (opened) s.emit({ type: 'breaker-opened', endpoint: ep.name, cooldownMs: ep.breaker.openPeriodMs });
      s.emit({ type: 'attempt-success', callId: this.id, endpoint: ep.name, attempt: a.attempt, durationMs });
    }
    if (closed) s.wakeParked();
    if (this.#settled) return;
    this.#settled = true;
    this.#cleanup('superseded');
    this.#resolve(value);
  }

  /** `sync`: the operation threw synchronously or returned a non-promise, which is treated as permanent. */
  #failed(a: Attempt<C>, error: unknown, sync: boolean): void {
    if (a.done) return;
    const s = this.#s;
    this.#endAttempt(a);
    const now = s.clock.now();
    const ep = a.ep;
    const verdict = this.#verdict;
    if (sync) {
      verdict.class = 'permanent';
      verdict.retryAfterMs = undefined;
      verdict.valid = false;
    } else {
      runClassifier(s.opts.classify, error, verdict);
    }
    const cls = verdict.class;
    this.#lastError = error;
    ep.failures++;
    let opened = false;
    let closed = false;
    let cooldownMs = 0;
    switch (cls) {
      case 'transient':
        opened = ep.breaker.recordFailure(a.generation, a.probe, now);
        break;
      case 'rate-limited': {
        ep.breaker.release(a.probe);
        ep.rateLimited++;
        cooldownMs = Math.min(verdict.retryAfterMs ?? s.opts.rateLimitCooldownMs, this.#backoff.maxMs);
        ep.quota.coolDown(now, cooldownMs);
        if (a.probe !== 0) s.wakeParked();
        break;
      }
      default:
        // A throwing operation or classifier says nothing about the endpoint's health.
        if (verdict.valid) closed = ep.breaker.recordReachable(now);
        else ep.breaker.release(a.probe);
        break;
    }
    // Only failures that say something about the endpoint's health feed the ranking.
    const unhealthy = cls === 'transient' || cls === 'rate-limited';
    if (unhealthy) ep.recentFailures.add(now);
    if (s.tracksLatency) ep.latency.observe(now, now - a.startedAt, unhealthy, s.opts.latency.decayMs, s.opts.latency.failurePenaltyMs);
    this.#lastRetryAfterMs = cls === 'rate-limited' ? cooldownMs : undefined;
    const movesOn = this.#applyHints(ep, verdict, now);
    this.#report(a, cls, error, now, opened, closed);
    if (cls === 'rate-limited' && s.listener !== undefined) s.emit({ type: 'endpoint-cooling', endpoint: ep.name, cooldownMs });
    if (this.#settled) return;
    const final = cls === 'permanent' || cls === 'retry-narrower';
    if (!final && this.#othersRunning()) {
      // A hedged call goes on while another of its attempts may still answer.
      if (cls === 'unsupported' || movesOn) (this.#excluded ??= []).push(ep);
      else this.#markTried(ep);
      return;
    }
    // A parked or disabled endpoint is out of the running: selection skips it by itself.
    if (movesOn) return this.#retryOrFail();
    switch (cls) {
      case 'permanent':
        return this.#fail('PERMANENT', `endpoint ${JSON.stringify(ep.name)} answered with a permanent error`);
      case 'retry-narrower':
        return this.#fail('RETRY_NARROWER', `endpoint ${JSON.stringify(ep.name)} asked for a narrower request`);
      case 'unsupported':
        (this.#excluded ??= []).push(ep);
        return this.#retryOrFail();
      case 'unauthorized':
        return this.#reauthenticate(ep);
      default:
        this.#markTried(ep);
        this.#retryPending = true;
        return this.#retryOrFail();
    }
  }

  #markTried(ep: EndpointState<C>): void {
    if (this.#tried === undefined) this.#tried = [ep];
    else if (!this.#tried.includes(ep)) this.#tried.push(ep);
  }

  #othersRunning(): boolean {
    return this.#running !== undefined || (this.#hedges !== undefined && this.#hedges.length > 0);
  }

  /** Starts a hedge when the first attempt has not answered within the hedge delay. */
  #scheduleHedge(ep: EndpointState<C>): void {
    const hedge = this.#hedge!;
    const fromLatency = hedge.percentile === undefined ? undefined : ep.latency.percentile(hedge.percentile, 20);
    const delay = Math.max(1, fromLatency ?? hedge.afterMs);
    this.#hedgeTimer = this.#s.clock.setTimeout(() => {
      this.#hedgeTimer = undefined;
      this.#launchHedge();
    }, delay);
  }

  #launchHedge(): void {
    const s = this.#s;
    if (this.#settled || this.#running === undefined || this.#hedgesLeft <= 0) return;
    const now = s.clock.now();
    if (now >= this.#deadlineAt) return;
    // A different endpoint: not one with an attempt of this call running, not an excluded one.
    const busy: EndpointState<C>[] = this.#excluded === undefined ? [] : this.#excluded.slice();
    busy.push(this.#running.ep);
    if (this.#hedges !== undefined) for (const h of this.#hedges) busy.push(h.ep);
    const sel = this.#pin !== undefined ? undefined : s.select(now, this.#tried, busy);
    if (sel === undefined || sel.kind !== 'endpoint' || sel.tried) return;
    const budget = s.opts.retryBudget;
    if (budget !== undefined && !budget.tryWithdraw(now)) return;
    this.#hedgesLeft--;
    s.emit({ type: 'hedge', callId: this.id, endpoint: sel.endpoint.name, attempt: this.#attempts + 1 });
    this.#launch(sel.endpoint, now, true);
  }

  /** @internal the timeout queue found this attempt past its due time. */
  attemptTimedOut(a: Attempt<C>): void {
    if (a.done) return;
    const s = this.#s;
    this.#endAttempt(a);
    const now = s.clock.now();
    const ep = a.ep;
    const error = new PoolError('ATTEMPT_TIMEOUT', `attempt ${a.attempt} on endpoint ${JSON.stringify(ep.name)} timed out after ${now - a.startedAt} ms`, {
      attempts: a.attempt,
      endpoint: ep.name,
    });
    a.abort(error);
    this.#lastError = error;
    this.#lastRetryAfterMs = undefined;
    ep.failures++;
    ep.recentFailures.add(now);
    if (s.tracksLatency) ep.latency.observe(now, now - a.startedAt, true, s.opts.latency.decayMs, s.opts.latency.failurePenaltyMs);
    const opened = ep.breaker.recordFailure(a.generation, a.probe, now);
    this.#report(a, 'timeout', error, now, opened, false);
    if (this.#settled) return;
    if (now >= this.#deadlineAt) return this.#deadlineExceeded();
    this.#markTried(ep);
    if (this.#othersRunning()) return;
    this.#retryPending = true;
    this.#retryOrFail();
  }

  /**
   * Acts on what the classification said about the endpoint itself. Returns true when
   * the endpoint is now out of the running (disabled or parked), so the call moves on at
   * once to another endpoint.
   */
  #applyHints(ep: EndpointState<C>, verdict: Verdict, now: number): boolean {
    const s = this.#s;
    if (verdict.ceilingPerSecond !== undefined) {
      ep.quota.recalibrate(verdict.ceilingPerSecond, now);
      ep.quota.coolDown(now, s.opts.rateLimitCooldownMs);
      s.emit({ type: 'endpoint-recalibrated', endpoint: ep.name, perSecond: verdict.ceilingPerSecond });
    }
    let out = false;
    if (verdict.dailyQuotaExhausted) {
      const untilMs = ep.quota.park(now);
      s.emit({ type: 'endpoint-parked', endpoint: ep.name, untilMs });
      out = true;
    }
    if (verdict.disableEndpoint && !ep.disabled) {
      ep.disabled = true;
      s.emit({ type: 'endpoint-disabled', endpoint: ep.name });
    }
    return out || verdict.disableEndpoint;
  }

  /** Metrics and events for a failed attempt, after every state change. */
  #report(a: Attempt<C>, cls: FailureClass, error: unknown, now: number, opened: boolean, closed: boolean): void {
    const s = this.#s;
    const ep = a.ep;
    const durationMs = now - a.startedAt;
    if (s.metrics !== undefined) {
      s.count(METRICS.failures, ep.classLabels(cls));
      safeObserve(s.metrics, METRICS.attemptDuration, ep.labels, durationMs);
      if (opened) s.count(METRICS.breakerOpened, ep.labels);
    }
    if (s.listener !== undefined) {
      if (opened) s.emit({ type: 'breaker-opened', endpoint: ep.name, cooldownMs: ep.breaker.openPeriodMs });
      if (closed) s.emit({ type: 'breaker-closed', endpoint: ep.name });
      s.emit({ type: 'attempt-failure', callId: this.id, endpoint: ep.name, attempt: a.attempt, durationMs, errorClass: cls, error });
    }
    if (closed) s.wakeParked();
  }

  /**
   * An `unauthorized` answer: refresh the endpoint's credentials (once per endpoint per
   * call, single-flight across calls), then replay the attempt there at once, with no
   * backoff and no retry budget spent. A second `unauthorized` from it is final.
   */
  #reauthenticate(ep: EndpointState<C>): void {
    const s = this.#s;
    const refresh = s.opts.refreshAuth as RefreshAuth<C> | undefined;
    if (refresh === undefined) return this.#fail('UNAUTHORIZED', `endpoint ${JSON.stringify(ep.name)} answered unauthorized`);
    if (this.#refreshed?.includes(ep) === true) {
      return this.#fail('UNAUTHORIZED', `endpoint ${JSON.stringify(ep.name)} answered unauthorized again after its credentials were refreshed`);
    }
    (this.#refreshed ??= []).push(ep);
    const done = refreshOnce(ep, refresh, s.clock, s.opts.refreshTimeoutMs, (ok, error) => {
      s.emit(ok ? { type: 'auth-refresh', endpoint: ep.name, ok } : { type: 'auth-refresh', endpoint: ep.name, ok, error });
    });
    this.#waitFor('auth', INF);
    done.then(
      () => {
        if (this.#settled || this.#waiting !== 'auth') return;
        this.#stopWaiting();
        this.#replays++;
        this.#launchIfStillAdmissible(ep, s.clock.now(), false);
      },
      (error: unknown) => {
        if (this.#settled || this.#waiting !== 'auth') return;
        this.#lastError = error;
        this.#fail('AUTH', `refreshing the credentials of endpoint ${JSON.stringify(ep.name)} failed`);
      },
    );
  }

  #retryOrFail(): void {
    if (this.#attempts - this.#replays >= this.#maxAttempts) {
      return this.#fail('RETRIES_EXHAUSTED', `all ${this.#attempts} attempts failed`, this.#lastRetryAfterMs);
    }
    const budget = this.#s.opts.retryBudget;
    if (budget !== undefined && !budget.tryWithdraw(this.#s.clock.now())) {
      return this.#fail('RETRY_BUDGET_EXHAUSTED', `the pool's retry budget is spent; no retry after ${this.#attempts} attempt(s)`, this.#lastRetryAfterMs);
    }
    this.#next();
  }

  /**
   * Waits `ms` (`Infinity`: until woken by freed capacity), bounded by the deadline.
   * `hinted`: the wait comes from a limit or breaker rather than the backoff schedule.
   */
  #sleep(ms: number, hinted: boolean): void {
    if (this.#retryPending) {
      this.#retryPending = false;
      if (this.#s.listener !== undefined) this.#s.emit({ type: 'retry-scheduled', callId: this.id, attempt: this.#attempts + 1, delayMs: ms, hinted });
    }
    this.#backedOff = true;
    if (ms === INF) {
      this.#s.parked.add(this);
      return this.#waitFor('park', INF);
    }
    this.#waitFor('sleep', ms);
  }

  #waitFor(state: WaitState, ms: number): void {
    const s = this.#s;
    this.#waiting = state;
    s.waiting.add(this);
    const left = this.#deadlineAt - s.clock.now();
    const delay = ms < left ? ms : left;
    if (delay === INF) return;
    this.#onWaitTimer ??= () => {
      this.#waitTimer = undefined;
      const was = this.#waiting;
      this.#stopWaiting();
      if (was === 'sleep') this.#next();
      else if (was === 'admission' && this.#s.clock.now() < this.#deadlineAt) this.#admissionTimedOut();
      else this.#deadlineExceeded();
    };
    this.#waitTimer = s.clock.setTimeout(this.#onWaitTimer, delay);
  }

  #stopWaiting(): void {
    const s = this.#s;
    if (this.#waitTimer !== undefined) {
      s.clock.clearTimeout(this.#waitTimer);
      this.#waitTimer = undefined;
    }
    if (this.#waiting === 'permit') {
      const i = s.permitQueue.indexOf(this);
      if (i >= 0) s.permitQueue.splice(i, 1);
    } else if (this.#waiting === 'park') {
      s.parked.delete(this);
    }
    if (this.#waiting !== 'none') s.waiting.delete(this);
    this.#waiting = 'none';
  }

  #deadlineExceeded(): void {
    this.#fail('DEADLINE_EXCEEDED', `the call's deadline of ${this.#deadlineMs} ms passed after ${this.#attempts} attempt(s)`);
  }

  #pinUnavailable(why: string, retryAfterMs: number | undefined): void {
    this.#fail('PIN_UNAVAILABLE', `pinned endpoint ${JSON.stringify(this.#pin!.name)} cannot serve: ${why}`, retryAfterMs);
  }

  #fail(code: PoolErrorCode, message: string, retryAfterMs?: number, cancel: CancelReason = 'aborted', abortReason?: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    const s = this.#s;
    const cause = this.#lastError !== undefined ? this.#lastError : abortReason;
    const error = new PoolError(code, message, {
      cause,
      attempts: this.#attempts,
      endpoint: this.#lastEndpoint?.name,
      retryAfterMs: retryAfterMs === undefined || retryAfterMs === INF ? undefined : retryAfterMs,
    });
    this.#cleanup(code === 'CLOSED' ? 'closed' : cancel, abortReason ?? error);
    if (s.metrics !== undefined) s.count(METRICS.exhausted, this.#lastEndpoint?.codeLabels(code) ?? noneLabels(code));
    if (s.listener !== undefined) s.emit({ type: 'call-failed', callId: this.id, error });
    this.#reject(error);
  }

  /** Cancels a running attempt: its signal aborts, its slots are released, and it ends with `attempt-cancelled`. */
  #cancel(a: Attempt<C>, cancel: CancelReason, abortReason: unknown): void {
    if (a.done) return;
    const s = this.#s;
    this.#endAttempt(a);
    a.ep.breaker.release(a.probe);
    const durationMs = s.clock.now() - a.startedAt;
    // A loser of a hedge race was at least this slow: let the latency estimate know.
    if (cancel === 'superseded' && s.tracksLatency) a.ep.latency.observeAtLeast(a.startedAt + durationMs, durationMs);
    a.abort(abortReason ?? new PoolError('ABORTED', 'another attempt of the call answered first'));
    if (s.listener !== undefined) s.emit({ type: 'attempt-cancelled', callId: this.id, endpoint: a.ep.name, attempt: a.attempt, durationMs, reason: cancel });
  }

  /** Releases everything the call holds. */
  #cleanup(cancel: CancelReason = 'aborted', abortReason?: unknown): void {
    const s = this.#s;
    if (this.#running !== undefined) this.#cancel(this.#running, cancel, abortReason);
    if (this.#hedges !== undefined) for (const h of this.#hedges.slice()) this.#cancel(h, cancel, abortReason);
    if (this.#hedgeTimer !== undefined) {
      s.clock.clearTimeout(this.#hedgeTimer);
      this.#hedgeTimer = undefined;
    }
    this.#stopWaiting();
    if (this.#holdsPermit) {
      this.#holdsPermit = false;
      s.releasePermit();
    }
    this.#signal?.removeEventListener('abort', this);
    s.callEnded();
  }
}

const NONE_LABELS = new Map<string, Readonly<Record<string, string>>>();
function noneLabels(code: string): Readonly<Record<string, string>> {
  let l = NONE_LABELS.get(code);
  if (l === undefined) {
    l = Object.freeze({ endpoint: 'none', code });
    NONE_LABELS.set(code, l);
  }
  return l;
}
