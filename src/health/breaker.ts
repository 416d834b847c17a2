/**
 * A per-endpoint circuit breaker counting consecutive failures.
 *
 * Closed: every attempt goes through. After `threshold` consecutive failures it opens
 * for `cooldownMs`; while open nothing goes through. Once the cooldown has passed it is
 * half-open: exactly one attempt, the probe, is let through, and everyone else is turned
 * away until that probe reports (or is presumed lost: out longer than the open period and the
 * pool's bound on an attempt, which only a call with a longer bound of its own, or none, outlives). A successful probe closes it and resets the cooldown to
 * the base; a failed probe re-opens it with the cooldown doubled, up to `maxCooldownMs`.
 *
 * Three kinds of outcome, as in the attempt table of ARCHITECTURE.md:
 * - success: closes the breaker if open and clears the failure run;
 * - reachable (the endpoint answered, just not usefully): closes it if open but keeps the
 *   failure run, so `transient, permanent, transient, permanent, transient` still opens
 *   at a threshold of 3;
 * - failure (transient or timeout): extends the run and may open it.
 * Anything else (rate-limited, cancelled) touches nothing but releases a held probe slot.
 *
 * Each attempt carries a ticket taken when it starts: the breaker's `generation` (bumped
 * on every opening) and, for the probe, a fresh probe epoch. A failure whose generation is
 * stale started before the breaker opened, so it neither counts again nor passes for a
 * failed probe; a release or result with a stale probe epoch cannot free or judge a newer
 * probe. The breaker is pure state over the `now` it is given: no timers, no clock.
 *
 * Two ways to trip, chosen per pool: `consecutive` (the default, above) or
 * `failure-rate` (Polly's model, health/failure-rate.ts, the failureRate feature): it
 * opens when, over the last `windowMs`, at least `minThroughput` attempts were recorded
 * and the share of failures reached `failureRate`; the breaker asks its `FailureWindow`.
 * Either way, an attempt slower than `slowCallMs` counts as a failure (resilience4j's
 * slow-call rule; the call itself still succeeds).
 *
 * Two refinements, off by default: with `ejectionGrowth`, an endpoint that is ejected
 * again soon after it closed (within `maxCooldownMs`) starts from a doubled cooldown, so a
 * flapping endpoint is probed less and less often; with `jitter` (a fraction, e.g. 0.2),
 * every open period is spread by up to ±20 % with the injected random source, so a fleet
 * of processes does not probe in lockstep.
 */
import type { RandomSource } from '../base/clock.js';
import { invalidOption } from '../base/errors.js';
import { DEFAULTS } from '../options/defaults.js';
import { durationOrInfinity, finite, oneOf, optionsObject, positiveInteger, type KnownKeys } from '../options/validate.js';
import { needFeature, type Features } from '../features.js';

export interface BreakerOptions {
  /** Consecutive failures that open the breaker (`consecutive` mode). @default 5 */
  readonly threshold: number;
  /** First open period. @default 5000 */
  readonly cooldownMs: number;
  /** Ceiling for the doubling cooldown after failed probes. @default 60000 */
  readonly maxCooldownMs: number;
  /** How the breaker trips (`failure-rate`: a `PoolCore` needs `failureRates`). @default 'consecutive' */
  readonly mode: 'consecutive' | 'failure-rate';
  /** `failure-rate` mode: share of failures over the window that opens it. @default 0.5 */
  readonly failureRate: number;
  /** `failure-rate` mode: the sliding window. @default 10000 */
  readonly windowMs: number;
  /** `failure-rate` mode: attempts needed in the window before the rate counts. @default 10 */
  readonly minThroughput: number;
  /** An attempt slower than this counts as a breaker failure. @default Infinity (off) */
  readonly slowCallMs: number;
  /** Double the starting cooldown for an endpoint ejected again soon after it closed. @default false */
  readonly ejectionGrowth: boolean;
  /** Spread each open period by up to ± this fraction. @default 0 */
  readonly jitter: number;
}

/** The `failure-rate` mode's record of recent attempts (health/failure-rate.ts), one per breaker. */
export interface FailureWindow {
  /** A success. */
  ok(now: number): void;
  /** A failure: whether the breaker should now open. */
  trip(now: number): boolean;
  /** The breaker opened: start over. */
  reset(): void;
}

/** The breaker's options as resolved: `failureWindow` makes a breaker's window in `failure-rate` mode. */
export interface ResolvedBreaker extends BreakerOptions {
  readonly failureWindow?: ((opts: BreakerOptions) => FailureWindow) | undefined;
  /**
   * How long a half-open probe may be out before it is presumed lost and another may go (at
   * least the open period): the pool's bound on an attempt (`attemptTimeoutMs`, else
   * `deadlineMs`), which only a call's own longer bound, or none at all, outlives. 0: the
   * open period alone.
   */
  readonly probeLostMs?: number;
}

/** A breaker in `stats()`: one shape whatever the state, so it prints and compares without narrowing. */
export interface BreakerSnapshot {
  readonly state: 'closed' | 'half-open' | 'open';
  /** While `open`: when the breaker lets a probe through. */
  readonly untilMs?: number;
}

/** What `breakerState()` reports (kept as it was; `stats()` gives a `BreakerSnapshot`). */
export type BreakerState = 'closed' | 'half-open' | { readonly state: 'open'; readonly untilMs: number };

const CLOSED: BreakerSnapshot = Object.freeze({ state: 'closed' });
const HALF_OPEN: BreakerSnapshot = Object.freeze({ state: 'half-open' });

export class Breaker {
  readonly #opts: ResolvedBreaker;
  readonly #random: RandomSource;
  #open = false;
  #failures = 0;
  #openUntil = 0;
  #cooldownMs: number;
  /** The last open period actually used (cooldown with jitter). */
  #periodMs: number;
  #generation = 0;
  #probeEpoch = 0;
  #epochSeq = 0;
  /** When the probe out went. */
  #probeAt = 0;
  /** Openings from closed in a row, each soon after the previous close (for `ejectionGrowth`). */
  #ejections = 0;
  #closedAt = -Infinity;
  /** `failure-rate` mode's window; `undefined`: consecutive failures decide. */
  readonly #window: FailureWindow | undefined;

  constructor(opts: ResolvedBreaker, random: RandomSource = () => 0.5) {
    this.#opts = opts;
    this.#random = random;
    this.#cooldownMs = opts.cooldownMs;
    this.#periodMs = opts.cooldownMs;
    this.#window = opts.failureWindow?.(opts);
  }

  /** Bumped each time the breaker opens; part of every attempt's ticket. */
  get generation(): number {
    return this.#generation;
  }

  /** Consecutive failures counted so far. */
  get failures(): number {
    return this.#failures;
  }

  /** The cooldown the breaker would use (or used) for its current opening, before jitter. */
  get cooldownMs(): number {
    return this.#cooldownMs;
  }

  /** The length of the current (or last) open period, jitter included. */
  get openPeriodMs(): number {
    return this.#periodMs;
  }

  /** When the current open period ends (meaningful only while open). */
  get openUntil(): number {
    return this.#openUntil;
  }

  /** True while a half-open probe is out. */
  get probing(): boolean {
    return this.#probeEpoch !== 0;
  }

  /** Set by `enter` when it hands out the probe slot: how long the probe it replaced as lost was out, else -1. */
  lostProbeMs = -1;

  /** Whether an attempt may start now: closed, or half-open with the probe slot free (or its probe lost). */
  admits(now: number): boolean {
    return !this.#open || (now >= this.#openUntil && (this.#probeEpoch === 0 || this.#probeLost(now)));
  }

  /**
   * A probe out for longer than the open period and the pool's bound on an attempt is presumed
   * lost (its call set no bound, or a longer one, and its operation never settles): its slot
   * goes to the next attempt, else the endpoint would turn every call away until it settled.
   */
  #probeLost(now: number): boolean {
    return now - this.#probeAt >= Math.max(this.#periodMs, this.#opts.probeLostMs ?? 0);
  }

  /** Open and still inside the cooldown: nothing, not even a health probe, should go. */
  isStrictlyOpen(now: number): boolean {
    return this.#open && now < this.#openUntil;
  }

  /**
   * Registers an attempt that `admits()` let through. Returns its probe epoch when it is
   * the half-open probe, or 0 for an ordinary attempt. An attempt sent past the breaker
   * (panic mode) is always ordinary, so it can never take or steal the probe slot.
   */
  enter(now: number): number {
    if (!this.#open || now < this.#openUntil || (this.#probeEpoch !== 0 && !this.#probeLost(now))) return 0;
    this.lostProbeMs = this.#probeEpoch === 0 ? -1 : now - this.#probeAt;
    this.#probeAt = now;
    this.#probeEpoch = ++this.#epochSeq;
    return this.#probeEpoch;
  }

  /** A success. Returns true when it closed the breaker. */
  recordSuccess(now: number): boolean {
    this.#failures = 0;
    this.#window?.ok(now);
    if (!this.#open) return false;
    this.#close(now);
    return true;
  }

  /** An answer that proves the endpoint is up without being a success. Returns true when it closed the breaker. */
  recordReachable(now: number): boolean {
    if (!this.#open) return false;
    this.#close(now);
    return true;
  }

  /** A failure of an attempt that started at `generation`. Returns true when this failure opened the breaker. */
  recordFailure(generation: number, probe: number, now: number): boolean {
    if (probe !== 0 && probe === this.#probeEpoch) {
      // The probe failed: re-open for a longer cooldown.
      this.#probeEpoch = 0;
      this.#cooldownMs = Math.min(this.#cooldownMs * 2, this.#opts.maxCooldownMs);
      this.#openAt(now);
      return true;
    }
    if (this.#open || generation !== this.#generation) return false;
    this.#failures++;
    const w = this.#window;
    if (w === undefined ? this.#failures < this.#opts.threshold : !w.trip(now)) return false;
    this.#ejections = this.#opts.ejectionGrowth && now - this.#closedAt <= this.#opts.maxCooldownMs ? this.#ejections + 1 : 1;
    this.#cooldownMs = Math.min(this.#opts.cooldownMs * 2 ** Math.min(this.#ejections - 1, 30), this.#opts.maxCooldownMs);
    this.#openAt(now);
    return true;
  }

  /** Gives back a probe slot without a verdict (the probe was cancelled or inconclusive). */
  release(probe: number): void {
    // Stryker disable next-line ConditionalExpression: with probe 0, `probe === #probeEpoch` holds only when no probe is out, and clearing 0 to 0 changes nothing
    if (probe !== 0 && probe === this.#probeEpoch) this.#probeEpoch = 0;
  }

  /** Milliseconds until a probe may go, 0 when the breaker admits now (or would but for an out-standing probe). */
  waitMs(now: number): number {
    // Stryker disable next-line EqualityOperator: at now === openUntil both sides give 0
    return this.#open && now < this.#openUntil ? this.#openUntil - now : 0;
  }

  state(now: number): BreakerState {
    const s = this.snapshot(now);
    // Open: the snapshot is a fresh `{ state: 'open', untilMs }`, the shape `breakerState()` reports.
    return s.state === 'open' ? (s as BreakerState) : s.state;
  }

  snapshot(now: number): BreakerSnapshot {
    if (!this.#open) return CLOSED;
    if (now < this.#openUntil) return { state: 'open', untilMs: this.#openUntil };
    return HALF_OPEN;
  }

  #openAt(now: number): void {
    const jitter = this.#opts.jitter;
    this.#periodMs = jitter > 0 ? Math.max(1, Math.round(this.#cooldownMs * (1 + jitter * (2 * this.#random() - 1)))) : this.#cooldownMs;
    this.#open = true;
    this.#openUntil = now + this.#periodMs;
    this.#generation++;
    this.#window?.reset();
  }

  #close(now: number): void {
    this.#open = false;
    this.#probeEpoch = 0;
    this.#closedAt = now;
    this.#cooldownMs = this.#opts.cooldownMs;
  }
}

const BREAKER_KEYS: Record<keyof BreakerOptions, true> & KnownKeys = {
  threshold: true,
  cooldownMs: true,
  maxCooldownMs: true,
  mode: true,
  failureRate: true,
  windowMs: true,
  minThroughput: true,
  slowCallMs: true,
  ejectionGrowth: true,
  jitter: true,
};

/** The options only `failure-rate` mode reads: a pool without the failureRate feature refuses them. */
const RATE_KEYS = ['failureRate', 'windowMs', 'minThroughput'] as const;

/**
 * Checks the pool's `breaker` options; `failureRate`: the feature's slot, which checks the
 * mode's options and, in that mode, gives the breakers their window (without it the mode
 * and its options are refused).
 */
export function resolveBreaker(value: unknown, failureRate?: Features['failureRate'], probeLostMs = 0): ResolvedBreaker {
  const o = optionsObject('breaker', value, BREAKER_KEYS, { failures: 'threshold', timeoutMs: 'cooldownMs', resetTimeoutMs: 'cooldownMs', resetTimeout: 'cooldownMs', halfOpenAfter: 'cooldownMs' }) ?? {};
  const d = DEFAULTS.breaker;
  const threshold = positiveInteger('breaker.threshold', o['threshold'], d.threshold);
  const cooldownMs = finite('breaker.cooldownMs', o['cooldownMs'], d.cooldownMs, 0, true);
  const maxCooldownMs = finite('breaker.maxCooldownMs', o['maxCooldownMs'], Math.max(d.maxCooldownMs, cooldownMs), 0, true);
  if (maxCooldownMs < cooldownMs) {
    throw invalidOption('breaker.maxCooldownMs', `a number >= cooldownMs (${cooldownMs})`, maxCooldownMs);
  }
  const mode = oneOf('breaker.mode', o['mode'], ['consecutive', 'failure-rate'] as const, d.mode);
  if (failureRate === undefined) {
    if (mode === 'failure-rate') throw needFeature('breaker.mode', 'failureRate');
    for (const key of RATE_KEYS) if (o[key] !== undefined) throw needFeature(`breaker.${key}`, 'failureRate');
  }
  // Without the feature the three are unused: their defaults keep the resolved shape whole.
  const rate = failureRate === undefined ? d : failureRate.resolve(o, mode);
  const slowCallMs = durationOrInfinity('breaker.slowCallMs', o['slowCallMs'], Infinity);
  const growth = o['ejectionGrowth'];
  if (growth !== undefined && typeof growth !== 'boolean') throw invalidOption('breaker.ejectionGrowth', 'a boolean', growth);
  const jitter = finite('breaker.jitter', o['jitter'], 0);
  if (jitter >= 1) throw invalidOption('breaker.jitter', 'a fraction in [0, 1)', jitter);
  // Every member named, no spread: `{ ...rate, more }` takes V8's slow path on Node 20 (4-5 µs per endpoint).
  const failureWindow = 'failureWindow' in rate ? rate.failureWindow : undefined;
  const { failureRate: rateOfFailures, windowMs, minThroughput } = rate;
  return { threshold, cooldownMs, maxCooldownMs, mode, failureRate: rateOfFailures, windowMs, minThroughput, failureWindow, slowCallMs, ejectionGrowth: growth === true, jitter, probeLostMs };
}
