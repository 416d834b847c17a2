/**
 * Latency tracking per endpoint, for latency-aware selection and hedging.
 *
 * Peak EWMA (Finagle's): the estimate jumps up to any slower observation at once and
 * decays back towards faster ones with a time constant, so an endpoint that just became
 * slow is avoided immediately and trusted again gradually. A failed attempt is observed
 * as at least `failurePenaltyMs`, so an endpoint that fails fast does not look fast.
 * An endpoint with no history (or only an old one) is costed at `coldStartMs`.
 *
 * A ring of the last 64 durations gives percentiles for `hedge: { percentile }`.
 *
 * An optional feature (features.ts: `latency`): the core reaches this module only through
 * its pool's feature table. A tracker is made by an endpoint's first observation, and only
 * while the pool tracks latency; an endpoint without one has no history yet. The pool's
 * side (`strategy: 'latency'`) is in latency-selector.ts.
 */
import { DEFAULTS } from '../options/defaults.js';
import type { LatencyOptions } from '../options/options.js';
import { finite, optionsObject, type KnownKeys } from '../options/validate.js';
import type { FeatureOptions } from '../features.js';

const RING = 64;
/** History this many `decayMs` old counts as none: the costliest endpoint gets no sample to correct it. */
const STALE_DECAYS = 3;

export class LatencyTracker {
  #ewma = 0;
  #samples = 0;
  /** Only lower bounds so far (attempts cut short): the estimate is at least the cold start. */
  #boundsOnly = false;
  #updatedAt = 0;
  #staleAt = Infinity;
  readonly #recent = new Float64Array(RING);
  #next = 0;
  #okCount = 0;

  /** Records one attempt's duration (`failed`: raised to at least the penalty). */
  observe(now: number, durationMs: number, failed: boolean, decayMs: number, failurePenaltyMs: number): void {
    const rtt = failed ? Math.max(durationMs, failurePenaltyMs) : durationMs;
    if (this.#samples === 0 || rtt > this.#ewma) {
      this.#ewma = rtt;
    } else {
      const w = Math.exp(-Math.max(0, now - this.#updatedAt) / decayMs);
      this.#ewma = this.#ewma * w + rtt * (1 - w);
    }
    this.#updatedAt = now;
    this.#staleAt = now + STALE_DECAYS * decayMs;
    this.#samples++;
    this.#boundsOnly = false;
    if (!failed) {
      this.#recent[this.#next] = durationMs;
      this.#next = (this.#next + 1) % RING;
      this.#okCount++;
    }
  }

  /**
   * A lower bound from an attempt that was cut short (a hedge that lost): it can only
   * raise the estimate, never pull a slow endpoint's estimate down.
   */
  observeAtLeast(now: number, durationMs: number, decayMs: number): void {
    if (this.#samples === 0) this.#boundsOnly = true;
    else if (durationMs <= this.#ewma) return;
    this.#ewma = durationMs;
    this.#updatedAt = now;
    this.#staleAt = now + STALE_DECAYS * decayMs; // a bound goes stale too: it was the only history of an endpoint it kept out
    this.#samples++;
  }

  /**
   * The current estimate: `coldStartMs` with no history, and at least that while the history
   * is only lower bounds (an endpoint known to take at least 40 ms is no faster than one not
   * known at all).
   */
  estimate(coldStartMs: number, now?: number): number {
    return this.#samples === 0 || (now !== undefined && now > this.#staleAt) || (this.#boundsOnly && coldStartMs > this.#ewma) ? coldStartMs : this.#ewma;
  }

  /** How many successful durations the percentile ring holds. */
  get successes(): number {
    return Math.min(this.#okCount, RING);
  }

  /** The `p` quantile (0..1) of recent successful durations, `undefined` with fewer than `minSamples`. */
  percentile(p: number, minSamples: number): number | undefined {
    const filled = this.#filled();
    if (filled.length < minSamples) return undefined;
    filled.sort((a, b) => a - b);
    return filled[Math.min(filled.length - 1, Math.floor(p * filled.length))];
  }

  #filled(): number[] {
    return Array.from(this.#recent.subarray(0, this.successes));
  }
}

export interface ResolvedLatency {
  readonly decayMs: number;
  readonly failurePenaltyMs: number;
  readonly coldStartMs: number | undefined;
}

const LATENCY_KEYS: Record<keyof LatencyOptions, true> & KnownKeys = { decayMs: true, failurePenaltyMs: true, coldStartMs: true };

/** Checks `latency`; the failure penalty defaults to the attempt timeout. */
export function resolveLatency(value: unknown, attemptTimeout: unknown): ResolvedLatency {
  const o = optionsObject('latency', value, LATENCY_KEYS) ?? {};
  const timeout = typeof attemptTimeout === 'number' && Number.isFinite(attemptTimeout) ? attemptTimeout : DEFAULTS.attemptTimeoutMs;
  return {
    decayMs: finite('latency.decayMs', o['decayMs'], DEFAULTS.latency.decayMs, 0, true),
    failurePenaltyMs: finite('latency.failurePenaltyMs', o['failurePenaltyMs'], timeout),
    coldStartMs: o['coldStartMs'] === undefined ? undefined : finite('latency.coldStartMs', o['coldStartMs'], 0),
  };
}

/** The pool's `latency` (the feature's options, features.ts). */
export const latencyOptions: FeatureOptions = (o) => ({ latency: resolveLatency(o['latency'], o['attemptTimeoutMs']) });
