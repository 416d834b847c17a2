/**
 * The breaker's `failure-rate` mode (the failureRate feature, see features.ts), Polly's
 * model: a breaker opens when, over the last `windowMs`, at least `minThroughput` attempts
 * were recorded and the share of failures reached `failureRate`. Each breaker in that mode
 * has one `FailureRate`: two rolling counters of ten buckets over the window, so the rate
 * is judged on recent traffic only, cleared whenever the breaker opens. A pool built
 * without the feature refuses the mode and its three options; its breakers count
 * consecutive failures.
 */
import type { BreakerOptions, FailureWindow, ResolvedBreaker } from './breaker.js';
import { RollingCounter } from '../limits/window.js';
import { invalidOption } from '../base/errors.js';
import { DEFAULTS } from '../options/defaults.js';
import { finite, positiveInteger } from '../options/validate.js';

/** The options of the mode, as the breaker's resolver takes them in (`breaker.failureRate` ...). */
export type FailureRateOptions = Pick<ResolvedBreaker, 'failureRate' | 'windowMs' | 'minThroughput' | 'failureWindow'>;

/**
 * Checks `breaker.failureRate`, `breaker.windowMs` and `breaker.minThroughput` (`o`: the
 * `breaker` object); in `failure-rate` mode, the breakers' windows come with them.
 */
export function resolveFailureRate(o: Readonly<Record<string, unknown>>, mode: BreakerOptions['mode']): FailureRateOptions {
  const d = DEFAULTS.breaker;
  const failureRate = finite('breaker.failureRate', o['failureRate'], d.failureRate, 0, true);
  if (failureRate > 1) throw invalidOption('breaker.failureRate', 'a fraction in (0, 1]', failureRate);
  const windowMs = finite('breaker.windowMs', o['windowMs'], d.windowMs, 0, true);
  const minThroughput = positiveInteger('breaker.minThroughput', o['minThroughput'], d.minThroughput);
  return { failureRate, windowMs, minThroughput, failureWindow: mode === 'failure-rate' ? (opts) => new FailureRate(opts) : undefined };
}

/** One breaker's window of successes and failures. */
export class FailureRate implements FailureWindow {
  readonly #opts: BreakerOptions;
  #ok: RollingCounter;
  #failed: RollingCounter;

  constructor(opts: BreakerOptions) {
    this.#opts = opts;
    this.#ok = this.#counter();
    this.#failed = this.#counter();
  }

  ok(now: number): void {
    this.#ok.add(now);
  }

  trip(now: number): boolean {
    const o = this.#opts;
    this.#failed.add(now);
    const failed = this.#failed.sum(now, o.windowMs);
    const total = failed + this.#ok.sum(now, o.windowMs);
    return total >= o.minThroughput && failed / total >= o.failureRate;
  }

  reset(): void {
    this.#ok = this.#counter();
    this.#failed = this.#counter();
  }

  /** Ten buckets over the window. */
  #counter(): RollingCounter {
    return new RollingCounter(10, Math.max(1, this.#opts.windowMs / 10));
  }
}
