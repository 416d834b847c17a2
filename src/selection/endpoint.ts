/**
 * The runtime state of one endpoint: its breaker, quota, in-flight count, rolling usage
 * and failure windows, and counters. Created from an `EndpointConfig` and owned by the
 * pool; calls hold references to it (never indices), so replacing the endpoint set never
 * confuses a call in progress.
 */
import { Breaker, type ResolvedBreaker } from '../health/breaker.js';
import type { RandomSource } from '../base/clock.js';
import type { FailureClass } from '../base/events.js';
import { cachedLabels, type Labels } from '../base/metrics.js';
import type { Priority } from '../options/options.js';
import type { BasicQuota } from '../limits/basic-quota.js';
import type { LatencyTracker } from './latency.js';
import { RollingCounter } from '../limits/window.js';

/** Fifteen one-minute buckets: enough for the 5- and 15-minute views. */
const WINDOW_BUCKETS = 15;
const WINDOW_BUCKET_MS = 60_000;

/** An attempt's endpoint with its breaker and credential tickets when it started (`probe`: its probe epoch, 0 for none). */
export interface EndpointTicket<C> {
  readonly ep: EndpointState<C>;
  readonly generation: number;
  readonly probe: number;
  readonly authGeneration: number;
}

/** The ticket of an attempt starting on `ep` now: the endpoint's shared one, or a probe's own. */
export function ticketOf<C>(ep: EndpointState<C>, probe: number): EndpointTicket<C> {
  const generation = ep.breaker.generation;
  const authGeneration = ep.authGeneration;
  if (probe !== 0) return { ep, generation, probe, authGeneration };
  const t = ep.ticket;
  if (t !== undefined && t.generation === generation && t.authGeneration === authGeneration) return t;
  return (ep.ticket = { ep, generation, probe: 0, authGeneration });
}

export class EndpointState<C> {
  readonly name: string;
  readonly conn: C;
  priority: Priority;
  weight: number;
  maxInFlight: number;
  readonly breaker: Breaker;
  /** Shared with the other members of its group, when it has one. */
  quota: BasicQuota;
  /**
   * In a group, the key's own learned ceiling, when a rate-limited answer described the
   * key rather than the group (see outcome.ts): it paces this member only, never its
   * siblings, and goes away once it has recovered to the group's level.
   */
  own: BasicQuota | undefined;
  inFlight = 0;
  peakInFlight = 0;
  /**
   * Calls queued on its quota that chose this endpoint (in a group the queue is shared;
   * this counts this member's part of it, which its own ceiling paces).
   */
  queued = 0;
  /**
   * Smoothed duration of its successes (ms; an EWMA over about 8), kept for endpoints with a
   * rate limit: deadline-aware admission leaves a queued call twice this much time to run.
   */
  okMs = 0;
  /** False once `setEndpoints` dropped it: calls that still hold it must not start new attempts on it. */
  live = true;
  /** Set when the server says this endpoint can never succeed (an invalid key); cleared by `enableEndpoint`. */
  disabled = false;

  /** Bumped by every successful credential refresh: an attempt started under an older one replays without refreshing. */
  authGeneration = 0;
  /** Whether the selecting call has tried or excluded it, while a selection runs (selection/marks.ts). */
  mark = 0;
  /** What an attempt starting now takes (see `ticketOf`), shared by every such attempt until a generation moves. */
  ticket: EndpointTicket<C> | undefined = undefined;
  /** The last error that counted against this endpoint (a transient failure, a timeout) and when: the cause of a later `NO_ENDPOINT`. */
  lastError: unknown = undefined;
  lastErrorAt = -Infinity;

  attempts = 0;
  successes = 0;
  failures = 0;
  rateLimited = 0;
  /** Attempts started, per minute. */
  readonly usage = new RollingCounter(WINDOW_BUCKETS, WINDOW_BUCKET_MS);
  /** Failures that say something about the endpoint (not `permanent`), per minute. */
  readonly recentFailures = new RollingCounter(WINDOW_BUCKETS, WINDOW_BUCKET_MS);
  /** Peak-EWMA latency and recent durations: made by the first observation while the pool tracks latency (the latency feature); none yet means no history. */
  latency: LatencyTracker | undefined = undefined;

  /** The selection "go to this endpoint now", built once: the common answer allocates nothing. */
  readonly pick: { readonly kind: 'endpoint'; readonly endpoint: EndpointState<C>; readonly tried: false };

  /** `{ endpoint: name }`, built once and reused for every metric. */
  readonly labels: Labels;
  readonly #classLabels = new Map<string, Labels>();
  readonly #codeLabels = new Map<string, Labels>();

  constructor(name: string, conn: C, priority: Priority, weight: number, maxInFlight: number, breaker: ResolvedBreaker, quota: BasicQuota, random?: RandomSource) {
    this.name = name;
    this.conn = conn;
    this.priority = priority;
    this.weight = weight;
    this.maxInFlight = maxInFlight;
    this.breaker = new Breaker(breaker, random);
    this.quota = quota;
    this.labels = Object.freeze({ endpoint: name });
    this.pick = Object.freeze({ kind: 'endpoint' as const, endpoint: this, tried: false as const });
  }

  /** `{ endpoint, class }` labels, cached. */
  classLabels(cls: FailureClass): Labels {
    return cachedLabels(this.#classLabels, this.name, 'class', cls);
  }

  /** `{ endpoint, code }` labels, cached. */
  codeLabels(code: string): Labels {
    return cachedLabels(this.#codeLabels, this.name, 'code', code);
  }

  /**
   * Whether the endpoint is in the running at all: 0 when it is, otherwise how long until
   * it may be (`Infinity`: only a person or a probe verdict can bring it back). Covers the
   * breaker (unless `ignoreBreaker`: panic mode), a disabled endpoint and a spent daily
   * quota.
   */
  unavailableMs(now: number, ignoreBreaker = false): number {
    if (this.disabled) return Infinity;
    if (!ignoreBreaker && !this.breaker.admits(now)) {
      const w = this.breaker.waitMs(now);
      return w > 0 ? w : Infinity;
    }
    const blocked = this.quota.blockedMs(now);
    const own = this.own;
    if (own === undefined) return blocked;
    const b = own.blockedMs(now);
    return b > blocked ? b : blocked;
  }

  /**
   * 0 when an attempt could start here now; otherwise how long until one could, or
   * `Infinity` when only a finishing attempt (a free in-flight slot) can tell.
   * Assumes the endpoint is available (see `unavailableMs`).
   */
  readyInMs(now: number): number {
    if (this.inFlight >= this.maxInFlight) return Infinity;
    // Calls queued on the quota go first: for a newcomer it is busy until they have left.
    if (this.quota.waiters !== undefined && this.quota.waiters.size > 0) return this.etaMs(now);
    return this.limitWaitMs(now);
  }

  /** Whether an attempt could start here now, ahead of any queue (a call whose turn came). */
  readyNow(now: number, ignoreBreaker = false): boolean {
    return this.live && this.unavailableMs(now, ignoreBreaker) === 0 && this.inFlight < this.maxInFlight && this.limitWaitMs(now) === 0;
  }

  /** 0 when its limits (the quota's and the key's own) let a call leave now, else the wait. */
  limitWaitMs(now: number): number {
    const wait = this.quota.waitMs(now);
    const own = this.own;
    if (own === undefined) return wait;
    const w = own.waitMs(now);
    return w > wait ? w : wait;
  }

  /**
   * How long a new call would wait for this endpoint: its limits' wait plus its turn
   * behind the calls already queued on its quota (`Infinity` when only a finishing
   * attempt can free it). In a group, the later of two turns: behind every call queued
   * on the group's quota at the group's rate, and behind the calls queued for this
   * member at its own ceiling (when it has one). At least 1 when calls are queued.
   */
  etaMs(now: number): number {
    if (this.inFlight >= this.maxInFlight) return Infinity;
    const q = this.quota;
    const eta = q.etaMs(now, q.queued);
    const own = this.own;
    const w = own === undefined ? 0 : own.etaMs(now, this.queued);
    const wait = w > eta ? w : eta;
    return wait === 0 && q.queued > 0 ? 1 : wait;
  }

  /** QueueSlot: the turn of a queued call with `ahead` calls before it on its quota, `aheadHere` of them for this endpoint. */
  turnEtaMs(now: number, ahead: number, aheadHere: number): number {
    const eta = this.quota.etaMs(now, ahead);
    const own = this.own;
    const w = own === undefined ? 0 : own.etaMs(now, aheadHere);
    return w > eta ? w : eta;
  }
}
