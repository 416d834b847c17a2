/**
 * Backoff schedules between retries of one call.
 *
 * The base delay doubles from `initialMs` up to `maxMs`; the exponent is clamped, so the
 * 1,025th retry still waits a finite, positive time. Jitter spreads retries of many
 * callers so they do not arrive in lockstep:
 * - `none`: the base delay;
 * - `full` (default): uniform in [0, base];
 * - `equal`: base/2 plus uniform in [0, base/2];
 * - `decorrelated`: uniform in [initialMs, previous × 3], capped at `maxMs`.
 * Whatever the options, a delay is never below 1 ms, so a misconfigured policy cannot spin.
 * A random source that throws or answers outside [0, 1) (NaN, Infinity) counts as 0.5 for
 * that draw, so it cannot turn a backoff into an endless wait.
 */
import { safeDraw, type RandomSource } from '../base/clock.js';
import { invalidOption } from '../base/errors.js';
import { finite, oneOf, optionsObject, type KnownKeys } from '../options/validate.js';

export type Jitter = 'none' | 'full' | 'equal' | 'decorrelated';

export interface BackoffOptions {
  /** First delay. @default 100 */
  readonly initialMs: number;
  /** Ceiling of the doubling delay, and of a server's `retryAfterMs` hint. @default 10000 */
  readonly maxMs: number;
  /** How the delay is randomised. @default 'full' */
  readonly jitter: Jitter;
}

/** 2^30 × initialMs already exceeds any sane ceiling; clamping keeps the arithmetic finite. */
const MAX_EXPONENT = 30;

const draw = safeDraw;

/**
 * The delay before retry number `retry` (1 for the first retry). `previousMs` is the
 * delay used before the previous retry (for `decorrelated`), 0 for the first.
 */
export function backoffDelay(retry: number, opts: BackoffOptions, random: RandomSource, previousMs = 0): number {
  const exponent = Math.min(Math.max(retry - 1, 0), MAX_EXPONENT);
  const base = Math.min(opts.maxMs, opts.initialMs * 2 ** exponent);
  let delay: number;
  switch (opts.jitter) {
    case 'none':
      delay = base;
      break;
    case 'full':
      delay = draw(random) * base;
      break;
    case 'equal':
      delay = base / 2 + (draw(random) * base) / 2;
      break;
    case 'decorrelated': {
      const low = opts.initialMs;
      const high = Math.max(low, (previousMs > 0 ? previousMs : low) * 3);
      delay = Math.min(opts.maxMs, low + draw(random) * (high - low));
      break;
    }
  }
  return Math.max(1, Math.round(delay));
}

const JITTERS: readonly Jitter[] = ['none', 'full', 'equal', 'decorrelated'];
const BACKOFF_KEYS: Record<keyof BackoffOptions, true> & KnownKeys = { initialMs: true, maxMs: true, jitter: true };

/** Checks `backoff` options laid over `base` (the pool's, or the defaults). */
export function resolveBackoff(field: string, value: unknown, base: BackoffOptions): BackoffOptions {
  const o = optionsObject(field, value, BACKOFF_KEYS, {
    baseMs: 'initialMs',
    base: 'initialMs',
    minMs: 'initialMs',
    delayMs: 'initialMs',
    initialDelayMs: 'initialMs',
    maxDelayMs: 'maxMs',
    maxDelay: 'maxMs',
    factor: 'the delay doubles on each retry; set initialMs and maxMs',
  });
  if (o === undefined) return base;
  const initialMs = finite(`${field}.initialMs`, o['initialMs'], base.initialMs);
  const maxMs = finite(`${field}.maxMs`, o['maxMs'], Math.max(base.maxMs, initialMs));
  if (maxMs < initialMs) throw invalidOption(`${field}.maxMs`, `a number >= initialMs (${initialMs})`, maxMs);
  const jitter = oneOf(`${field}.jitter`, o['jitter'], JITTERS, base.jitter);
  return { initialMs, maxMs, jitter };
}
