/**
 * The runtime state of one endpoint: its breaker, limiter, cooldown, in-flight count and
 * counters. Created from an `EndpointConfig` and owned by the pool; calls hold references
 * to it (never indices), so replacing the endpoint set never confuses a call in progress.
 */
import { Breaker, type BreakerOptions } from './breaker.js';
import type { FailureClass } from './events.js';
import type { Limiter } from './limiter.js';
import type { Labels } from './metrics.js';
import type { Priority } from './options.js';

export class EndpointState<C> {
  readonly name: string;
  readonly conn: C;
  readonly priority: Priority;
  readonly weight: number;
  readonly maxInFlight: number;
  readonly breaker: Breaker;
  /** Shared with the other members of its group, when it has one. */
  limiter: Limiter | undefined;
  /** Until when selection skips it after a rate-limited answer. */
  cooldownUntil = 0;
  inFlight = 0;
  peakInFlight = 0;
  /** False once `setEndpoints` dropped it: calls that still hold it must not start new attempts on it. */
  live = true;

  attempts = 0;
  successes = 0;
  failures = 0;
  rateLimited = 0;

  /** `{ endpoint: name }`, built once and reused for every metric. */
  readonly labels: Labels;
  readonly #classLabels = new Map<string, Labels>();
  readonly #codeLabels = new Map<string, Labels>();

  constructor(name: string, conn: C, priority: Priority, weight: number, maxInFlight: number, breaker: BreakerOptions, limiter: Limiter | undefined) {
    this.name = name;
    this.conn = conn;
    this.priority = priority;
    this.weight = weight;
    this.maxInFlight = maxInFlight;
    this.breaker = new Breaker(breaker);
    this.limiter = limiter;
    this.labels = Object.freeze({ endpoint: name });
  }

  /** `{ endpoint, class }` labels, cached. */
  classLabels(cls: FailureClass): Labels {
    let l = this.#classLabels.get(cls);
    if (l === undefined) {
      l = Object.freeze({ endpoint: this.name, class: cls });
      this.#classLabels.set(cls, l);
    }
    return l;
  }

  /** `{ endpoint, code }` labels, cached. */
  codeLabels(code: string): Labels {
    let l = this.#codeLabels.get(code);
    if (l === undefined) {
      l = Object.freeze({ endpoint: this.name, code });
      this.#codeLabels.set(code, l);
    }
    return l;
  }

  /**
   * 0 when an attempt could start here now; otherwise how long until one could, or
   * `Infinity` when only a finishing attempt (a free in-flight slot) can tell.
   * Does not look at the breaker.
   */
  readyInMs(now: number): number {
    let wait = this.cooldownUntil > now ? this.cooldownUntil - now : 0;
    if (this.limiter !== undefined) {
      const w = this.limiter.waitMs(now);
      if (w > wait) wait = w;
    }
    if (this.inFlight >= this.maxInFlight) return Number.POSITIVE_INFINITY;
    return wait;
  }
}
