/**
 * What an attempt's end does to its endpoint: counters, latency, the breaker, cooldowns
 * and the hints a classification carries (a learned ceiling: ceilings.ts; a spent daily
 * quota, an invalid key), then the metrics and events that report it. State changes come first;
 * events and metrics after, so a listener always sees the state the event describes.
 *
 * The call loop decides what the call does next; these functions only record.
 */
import { runClassifier, type Verdict } from '../base/classify.js';
import { PoolError } from '../base/errors.js';
import type { CancelReason, FailureClass } from '../base/events.js';
import { METRICS, noneLabels, safeObserve } from '../base/metrics.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { LatencyTracker } from '../selection/latency.js';
import type { PoolState } from '../state.js';
import { NotAPromiseError, type Attempt } from './attempt.js';
import type { BasicQuota } from '../limits/basic-quota.js';
import type { Quota } from '../limits/quota.js';

/** Retry-After gets up to this much on top, from the pool's random source, so callers hit by one answer do not return together. */
const RETRY_AFTER_JITTER = 0.25;

/** `ep`'s latency tracker, made by its first observation (the pool tracks latency only with the latency feature). */
function tracker<C>(s: PoolState<C>, ep: EndpointState<C>): LatencyTracker {
  return (ep.latency ??= new s.features.latency!.Tracker());
}

/** An attempt's duration for `ep`'s latency estimate, if the pool tracks latency. */
function observeLatency<C>(s: PoolState<C>, ep: EndpointState<C>, now: number, durationMs: number, failed: boolean): void {
  if (s.tracksLatency) tracker(s, ep).observe(now, durationMs, failed, s.opts.latency!.decayMs, s.opts.latency!.failurePenaltyMs);
}

/** A success: the breaker, latency, metrics and `attempt-success`. */
export function recordSuccess<C>(s: PoolState<C>, a: Attempt<C>): void {
  a.release();
  const ep = a.ep;
  ep.successes++;
  // Reading the clock costs as much as the rest of this function: only when something uses it.
  const limited = ep.quota.rate !== undefined;
  const now = s.timesSuccesses || limited ? s.clock.now() : a.startedAt;
  const durationMs = now - a.startedAt;
  if (limited) ep.okMs = ep.okMs === 0 ? durationMs : ep.okMs + (durationMs - ep.okMs) / 8;
  observeLatency(s, ep, now, durationMs, false);
  // A slow success still answers the caller, but counts against the endpoint (not for a probe).
  if (durationMs > s.opts.breaker.slowCallMs && a.probe === 0) report(s, a, undefined, undefined, now, ep.breaker.recordFailure(a.generation, a.probe, now), false);
  else report(s, a, undefined, undefined, now, false, ep.breaker.recordSuccess(now));
  const q = ep.quota;
  q.limitedRun = 0;
  // Only the limits feature makes a quota grouped, learned or adaptive, or an endpoint's own level.
  if (q.grouped) (q as Quota).noteAccepted(a.startedAt);
  if (q.learned !== undefined || ep.own !== undefined) s.features.limits!.recoverCeilings(s, ep, now);
  if (q.adaptive !== undefined) s.features.limits!.adaptUp(s, ep, s.timesSuccesses ? now : s.clock.now());
}

/**
 * The message of a `PERMANENT` failure, blaming what was wrong: the operation (it threw
 * synchronously or returned a non-promise), the classifier (an answer that is not an
 * error class), or else the endpoint's answer.
 */
export function permanentMessage(endpoint: string, error: unknown, sync: boolean, verdict: Verdict): string {
  const on = `endpoint ${JSON.stringify(endpoint)}`;
  if (sync) {
    return isNotAPromise(error)
      ? `${error.message} (on ${on}); return a promise, e.g. make it async`
      : `the operation threw synchronously on ${on} instead of returning a rejected promise; not retried`;
  }
  // Past the synchronous case, only runClassifier makes a verdict invalid, and it always says why.
  if (!verdict.valid) {
    // An adapter's answer marked UNSENT (runClassifier): its attempt was refused before anything was sent.
    return verdict.problem === undefined ? `the attempt on ${on} was refused before anything was sent; not retried` : `${verdict.problem} for the error from ${on}; treated as permanent`;
  }
  return `${on} answered with a permanent error`;
}

/** `instanceof` asks a Proxy's `getPrototypeOf`, which may throw (a revoked Proxy thrown by the operation). */
function isNotAPromise(error: unknown): error is NotAPromiseError {
  try {
    return error instanceof NotAPromiseError;
  } catch {
    return false;
  }
}

/** An endpoint's name as messages quote it. */
export const quoted = (ep: { readonly name: string }): string => JSON.stringify(ep.name);

/** "1 attempt", "3 attempts". */
export function attemptCount(n: number): string {
  return n === 1 ? '1 attempt' : `${n} attempts`;
}

/** What a failed attempt left behind, for the call loop to act on. */
export interface FailureRecord {
  readonly cls: FailureClass;
  /** The cooldown a rate-limited answer set; `undefined` for other classes. */
  readonly retryAfterMs: number | undefined;
  /** The endpoint is now out of the running (disabled or parked): move on at once. */
  readonly movesOn: boolean;
}

/**
 * Classifies a failure (into `verdict`, reused per call) and records it. `sync`: the
 * operation threw synchronously or returned a non-promise, which is treated as permanent.
 */
export function recordFailure<C>(s: PoolState<C>, a: Attempt<C>, error: unknown, sync: boolean, verdict: Verdict, maxCooldownMs: number): FailureRecord {
  a.release();
  const now = s.clock.now();
  const ep = a.ep;
  if (sync) {
    // Nothing was classified: no hint from an earlier failure of this call may carry over.
    Object.assign(verdict, newVerdict(), { class: 'permanent', valid: false });
  } else {
    runClassifier(s.opts.classify, error, verdict, a);
  }
  const cls = verdict.class;
  ep.failures++;
  // The limit the answer came from: the group's quota, or the key's own (see ceilings.ts).
  const limits = s.features.limits;
  const level = limits !== undefined ? limits.learnCeiling(s, ep, verdict, now, a.startedAt) : plainLevel(ep, verdict);
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
      // A bare 429 on an adaptive limit lowers it (a number went to the learned ceiling above).
      if (level.adaptive !== undefined && verdict.ceilingPerSecond === undefined) limits!.adaptDown(s, ep, level as Quota, a.startedAt, now);
      cooldownMs = rateLimitCooldownMs(s, level, verdict, maxCooldownMs);
      const until = level.cooldownUntil;
      level.coolDown(now, cooldownMs);
      // A longer cooldown moves the turns of the calls queued on it: those now too late leave
      // (once this attempt has ended and given back what it held).
      if (level.cooldownUntil > until) queueMicrotask(() => ep.quota.waiters?.recheck(s.clock.now()));
      // Stryker disable next-line ConditionalExpression,EqualityOperator: the call's #endAttempt (releaseSlot) already woke parked calls for a probe, in a microtask that runs after this
      if (a.probe !== 0) s.wakeParked();
      break;
    }
    default:
      // A throwing operation or classifier, or an attempt refused unsent, says nothing about the endpoint's health.
      if (verdict.valid) closed = ep.breaker.recordReachable(now);
      else ep.breaker.release(a.probe);
      break;
  }
  // Only failures that say something about the endpoint's health feed the ranking.
  const unhealthy = cls === 'transient' || cls === 'rate-limited';
  if (unhealthy) ep.recentFailures.add(now);
  if (verdict.valid) observeLatency(s, ep, now, now - a.startedAt, unhealthy);
  const movesOn = applyHints(s, ep, verdict, now);
  report(s, a, cls, error, now, opened, closed);
  if (cls === 'rate-limited' && s.listener !== undefined) {
    // A replaced or removed endpoint's cooldown is reported only where a live endpoint shares it.
    const name = liveName(s, ep, level);
    if (name !== undefined) s.emit({ type: 'endpoint-cooling', endpoint: name, cooldownMs });
  }
  return { cls, retryAfterMs: cls === 'rate-limited' ? cooldownMs : undefined, movesOn };
}

/**
 * Cut by the call's deadline before half its fair time (its timeout, or the whole deadline when
 * shorter): a turn that came late in the call (after a long rate-limit wait, say), which says
 * nothing about the endpoint.
 */
export function starved<C>(plan: { readonly attemptTimeoutMs: number; readonly deadlineMs: number }, deadlineAt: number, a: Attempt<C>, now: number): boolean {
  const t = plan.attemptTimeoutMs;
  const d = plan.deadlineMs;
  return now >= deadlineAt && now - a.startedAt < (t < d ? t : d) / 2;
}

/**
 * An attempt past its timeout: aborted, counted as a failure of its endpoint unless `starved`
 * (the call's deadline cut it short before it had a fair share of time: see `Call.attemptTimedOut`),
 * in which case the endpoint's breaker and health ranking do not hear of it. Returns the error.
 */
export function recordTimeout<C>(s: PoolState<C>, a: Attempt<C>, now: number, starved: boolean): PoolError {
  const ep = a.ep;
  const error = new PoolError('ATTEMPT_TIMEOUT', `attempt ${a.attempt} on endpoint ${quoted(ep)} timed out after ${Math.round(now - a.startedAt)} ms`, {
    attempts: a.attempt,
    endpoint: ep.name,
  });
  a.abort(error);
  ep.failures++;
  if (starved) {
    ep.breaker.release(a.probe);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: as in recordFailure, releaseSlot already woke parked calls for a probe
    if (a.probe !== 0) s.wakeParked();
    report(s, a, 'timeout', error, now, false, false);
    return error;
  }
  ep.recentFailures.add(now);
  observeLatency(s, ep, now, now - a.startedAt, true);
  report(s, a, 'timeout', error, now, ep.breaker.recordFailure(a.generation, a.probe, now), false);
  return error;
}

/**
 * The level a rate-limited answer cools in a pool without the limits feature: the
 * endpoint's quota. A `ceilingPerSecond` hint is dropped (see features.ts): with no limiter
 * to pace at the stated rate, cooling for one interval of it would only invite the next
 * 429, so the answer cools down as one without a number does.
 */
function plainLevel<C>(ep: EndpointState<C>, verdict: Verdict): BasicQuota {
  verdict.ceilingPerSecond = undefined;
  verdict.ceilingScope = undefined;
  return ep.quota;
}

/**
 * The cooldown of a rate-limited answer on `level`: the server's Retry-After plus up to
 * 25 % jitter; with a learned ceiling or an adaptive limit and no Retry-After, one
 * interval of that rate (at most `rateLimitCooldownMs`); with no
 * hint at all, `rateLimitCooldownMs` doubled for each such answer in a row (reset by a
 * success). Capped at `maxCooldownMs` (the backoff's `maxMs`).
 */
export function rateLimitCooldownMs<C>(s: PoolState<C>, level: BasicQuota, verdict: Verdict, maxCooldownMs: number): number {
  let ms: number;
  if (verdict.retryAfterMs !== undefined) {
    const r = s.random();
    ms = verdict.retryAfterMs * (1 + RETRY_AFTER_JITTER * (r >= 0 && r < 1 ? r : 0));
  } else if (verdict.ceilingPerSecond !== undefined || level.adaptive !== undefined) {
    // A rate the server stated, or one an adaptive limit just set: pacing at it is the remedy, so skip one slot.
    ms = level.rate === undefined ? s.opts.rateLimitCooldownMs : Math.min(s.opts.rateLimitCooldownMs, Math.ceil(level.rate.intervalMs));
  } else {
    ms = s.opts.rateLimitCooldownMs * 2 ** Math.min(level.limitedRun, 30);
    level.limitedRun++;
  }
  return Math.min(Math.round(ms), maxCooldownMs);
}

/**
 * The name an event about limit `q` goes under: the answering endpoint's; for one that
 * `setEndpoints` replaced or removed, a live endpoint that shares `q` (a group its live
 * members kept: the account's answer), else none (its name may be a replacement's now).
 */
export function liveName<C>(s: PoolState<C>, ep: EndpointState<C>, q: BasicQuota): string | undefined {
  if (ep.live) return ep.name;
  for (const e of s.endpoints) if (e.quota === q) return e.name;
  return undefined;
}

/**
 * Acts on what the classification said about the endpoint itself. Returns true when the
 * endpoint is now out of the running (disabled or parked).
 */
function applyHints<C>(s: PoolState<C>, ep: EndpointState<C>, verdict: Verdict, now: number): boolean {
  let out = false;
  if (verdict.dailyQuotaExhausted) {
    const limits = s.features.limits;
    if (limits === undefined) {
      // No daily reset to park until without the limits feature (see features.ts): a cooldown, as for a bare 429.
      ep.quota.coolDown(now, s.opts.rateLimitCooldownMs);
    } else {
      // In a group, the key that said so is parked, not its siblings (they say so themselves if the account's day is spent).
      const untilMs = (ep.quota.grouped ? limits.ownLevel(s, ep, now) : (ep.quota as Quota)).park(now);
      // As for a disable below: a replaced endpoint's spent day is not the live one's.
      if (ep.live) s.emit({ type: 'endpoint-parked', endpoint: ep.name, untilMs });
    }
    out = true;
  }
  if (verdict.disableEndpoint && !ep.disabled) {
    ep.disabled = true;
    if (ep.live) s.emit({ type: 'endpoint-disabled', endpoint: ep.name });
  }
  // The calls queued for this key leave now and select again (once this answer is dealt with),
  // rather than at the turn they were promised (see waiters.ts `evacuate`).
  if (out || verdict.disableEndpoint) queueMicrotask(() => ep.quota.waiters?.evacuate(ep));
  return out || verdict.disableEndpoint;
}

/** Metrics and events for an attempt that answered (no class) or failed, after every state change. */
function report<C>(s: PoolState<C>, a: Attempt<C>, cls: FailureClass | undefined, error: unknown, now: number, opened: boolean, closed: boolean): void {
  const ep = a.ep;
  // A replaced or removed endpoint's breaker serves nobody: its turns are no news of the live one of that name.
  if ((opened || closed) && !ep.live) opened = closed = false;
  const durationMs = now - a.startedAt;
  if (s.listener !== undefined) {
    if (opened) s.emit({ type: 'breaker-opened', endpoint: ep.name, cooldownMs: ep.breaker.openPeriodMs });
    if (closed) s.emit({ type: 'breaker-closed', endpoint: ep.name });
    const callId = a.owner.id;
    const attempt = a.attempt;
    s.emit(cls === undefined ? { type: 'attempt-success', callId, endpoint: ep.name, attempt, durationMs } : { type: 'attempt-failure', callId, endpoint: ep.name, attempt, durationMs, errorClass: cls, error });
  }
  // After the events: a sink that acts on the pool finds the news out.
  if (s.metrics !== undefined) {
    if (cls !== undefined) s.count(METRICS.failures, ep.classLabels(cls));
    safeObserve(s.metrics, METRICS.attemptDuration, ep.labels, durationMs);
    if (opened) s.count(METRICS.breakerOpened, ep.labels);
  }
  if (closed) s.wakeParked();
}

/** A cancelled attempt: its probe slot released, its signal aborted, `attempt-cancelled` emitted. */
export function recordCancel<C>(s: PoolState<C>, a: Attempt<C>, cancel: CancelReason, abortReason: unknown): void {
  a.ep.breaker.release(a.probe);
  const durationMs = s.clock.now() - a.startedAt;
  // A loser of a hedge race was at least this slow: let the latency estimate know.
  if (cancel === 'superseded' && s.tracksLatency) tracker(s, a.ep).observeAtLeast(a.startedAt + durationMs, durationMs, s.opts.latency!.decayMs);
  a.abort(abortReason ?? new PoolError('ABORTED', 'another attempt of the call answered first'));
  if (s.listener !== undefined) s.emit({ type: 'attempt-cancelled', callId: a.owner.id, endpoint: a.ep.name, attempt: a.attempt, durationMs, reason: cancel });
}

/** A call that failed: the `exhausted` counter and `call-failed`. */
export function recordCallFailure<C>(s: PoolState<C>, call: { readonly id: number }, error: PoolError, last: EndpointState<C> | undefined): void {
  if (s.listener !== undefined) s.emit({ type: 'call-failed', callId: call.id, error });
  if (s.metrics !== undefined) s.count(METRICS.exhausted, last?.codeLabels(error.code) ?? noneLabels(error.code));
}

/** A classification slot, made at a call's first failure (most calls never fail). */
// Stryker disable next-line ObjectLiteral: every field is written before it is read (runClassifier, or the synchronous case, whose unset flags read as false)
export const newVerdict = (): Verdict => ({ class: 'transient', retryAfterMs: undefined, ceilingPerSecond: undefined, ceilingScope: undefined, dailyQuotaExhausted: false, disableEndpoint: false, valid: true });
