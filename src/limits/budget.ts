/**
 * A pool-wide retry budget (Finagle's and Envoy's idea): retries may add at most a
 * fraction of the traffic, so that during an outage a pool does not multiply the load on
 * endpoints that are already failing.
 *
 * Over any window of `windowMs` (10 s), retries (and hedged attempts) are allowed up to
 * `max(ratio × calls, minPerSecond × windowMs / 1000)`: each logical call deposits
 * `ratio` of a retry once (never per attempt), and the floor keeps a quiet client able to
 * retry at all. When the budget is spent, a call that would retry fails at once with
 * `RETRY_BUDGET_EXHAUSTED` and its last error as `cause`.
 *
 * Counts are kept in one-second buckets (longer ones past a 100 s window): memory is constant.
 */
import { RollingCounter } from './window.js';
import { DEFAULTS } from '../options/defaults.js';
import { finite, optionsObject, type KnownKeys } from '../options/validate.js';
import type { FeatureOptions } from '../features.js';

export interface RetryBudgetOptions {
  /** Retries allowed per call, over the window. @default 0.2 */
  readonly ratio?: number;
  /** Retries allowed per second whatever the traffic. @default 10 */
  readonly minPerSecond?: number;
  /** @default 10000 */
  readonly windowMs?: number;
}

const MAX_BUCKETS = 100;

export class RetryBudget {
  readonly ratio: number;
  readonly minPerSecond: number;
  readonly windowMs: number;
  readonly #calls: RollingCounter;
  readonly #retries: RollingCounter;

  constructor(ratio: number, minPerSecond: number, windowMs: number) {
    this.ratio = ratio;
    this.minPerSecond = minPerSecond;
    this.windowMs = windowMs;
    // One-second buckets, at most MAX_BUCKETS of them: a week-long window is 100 buckets, not 604,800 (or a RangeError).
    const buckets = Math.min(MAX_BUCKETS, Math.max(1, Math.round(windowMs / 1000)));
    this.#calls = new RollingCounter(buckets, windowMs / buckets);
    this.#retries = new RollingCounter(buckets, windowMs / buckets);
  }

  /** One logical call started. */
  deposit(now: number): void {
    this.#calls.add(now);
  }

  /** Takes one retry from the budget if there is one left (with `peek`, only says whether there is). */
  tryWithdraw(now: number, peek?: boolean): boolean {
    const allowed = Math.max(this.ratio * this.#calls.sum(now, this.windowMs), (this.minPerSecond * this.windowMs) / 1000);
    if (this.#retries.sum(now, this.windowMs) + 1 > allowed) return false;
    if (peek !== true) this.#retries.add(now);
    return true;
  }
}

const BUDGET_KEYS: Record<keyof RetryBudgetOptions, true> & KnownKeys = { ratio: true, minPerSecond: true, windowMs: true };

/** Checks `retryBudget`; `undefined` when off. */
export function resolveBudget(value: unknown): RetryBudget | undefined {
  const o = optionsObject('retryBudget', value, BUDGET_KEYS);
  if (o === undefined) return undefined;
  const ratio = finite('retryBudget.ratio', o['ratio'], DEFAULTS.retryBudget.ratio);
  const minPerSecond = finite('retryBudget.minPerSecond', o['minPerSecond'], DEFAULTS.retryBudget.minPerSecond);
  const windowMs = finite('retryBudget.windowMs', o['windowMs'], DEFAULTS.retryBudget.windowMs, 1000);
  return new RetryBudget(ratio, minPerSecond, windowMs);
}

/** The pool's `retryBudget` (the feature's options, features.ts). */
export const budgetOptions: FeatureOptions = (o) => ({ retryBudget: resolveBudget(o['retryBudget']) });
