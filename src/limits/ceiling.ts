/**
 * A learned per-second ceiling: what a server said it accepts, bounded, and how it comes
 * back up when the server stops complaining.
 *
 * - Bounded: a learned value is clamped to [`LEARNED_MIN_PER_SECOND`,
 *   `LEARNED_MAX_PER_SECOND`] (the caller reports the clamp with an event), so a hint
 *   like "(10000000000/sec)" or "(0.0000001/sec)" can neither break the limiter nor park
 *   an endpoint for days.
 * - Recovery: after a quiet period with no rate-limited answer at this level, the ceiling
 *   rises every `stepMs`, the first step by `stepFraction × target`, each next one twice
 *   the one before, up to the target: the configured rate, or, with none configured, the
 *   highest rate the server ever announced for this level. The next rate-limited answer
 *   with a number sets it again and restarts the quiet period. The quiet period is
 *   `quietMs`, a quarter of it while callers are being turned away for want of a turn
 *   (a probe then costs less than the calls lost by waiting) or while the value in force
 *   is only a guess (`weak`: a group lowered on two keys' equal numbers), and doubles for each
 *   recovery in a row that a hint took back (a limit that stays low is probed ever less
 *   often, up to × 8), back to one once the ceiling reaches its target. With the defaults
 *   (30 s, 10 s, 0.1) a ceiling halved by a hint is back at its target 30 s + 2 × 10 s =
 *   50 s after the last complaint (steps of 10 %, 20 %, 40 %), 7.5 s + 20 s under pressure.
 *
 * Pure: every method takes `now`; nothing schedules a timer. The pool calls `recover` on
 * a success on the endpoint and before a rate-limited answer is weighed, each step dated
 * when it fell due; `stats()` and `capacity()` only read.
 */
import { DEFAULTS } from '../options/defaults.js';
import type { CeilingRecoveryOptions } from '../options/options.js';
import { finite, optionsObject, type KnownKeys } from '../options/validate.js';
import { invalidOption } from '../base/errors.js';

/** The range a ceiling learned from a server is clamped to (calls per second). */
export const LEARNED_MIN_PER_SECOND = 0.01;
export const LEARNED_MAX_PER_SECOND = 100_000;

/** The range a configured `rateLimit.perSecond` must be in (calls per second). */
export const CONFIGURED_MAX_PER_SECOND = 1_000_000;

export interface CeilingRecovery {
  /** Time with no rate-limited answer before the ceiling starts to rise. */
  readonly quietMs: number;
  /** Time between two upward steps. */
  readonly stepMs: number;
  /** Each step adds this fraction of the target. */
  readonly stepFraction: number;
}

/** A failed recovery doubles the quiet period, at most this many times (× 8). */
const MAX_BACKOFF = 3;
/** A repeated hint sets the ceiling this much under the one in force, down to `REPEAT_FLOOR` × the hint. */
const REPEAT_CUT = 0.95;
const REPEAT_FLOOR = 0.8;
/** Under pressure (callers turned away for want of a turn) the quiet period is this share of `quietMs`. */
const PRESSED_QUIET = 0.25;
/** … and steps come twice as often. */
const PRESSED_STEP = 0.5;

export class LearnedCeiling {
  /** The ceiling in force. */
  value: number;
  /** When `value` last changed (a hint or a recovery step). */
  changedAt: number;
  /** The last rate-limited answer at this level. */
  limitedAt: number;
  /** Where recovery stops. */
  target: number;
  /** The number the last hint said. */
  hint: number;
  /** Recovery steps taken since the last hint (each one twice the size of the one before). */
  run = 0;
  /** Recoveries in a row that a hint took back (the quiet period doubles for each, up to × 8). */
  fails = 0;
  /** The value in force was inferred (two keys' equal numbers read as their account's), not said of this level. */
  weak = false;

  constructor(value: number, target: number, now: number) {
    this.value = value;
    this.hint = value;
    this.target = Math.max(target, value);
    this.changedAt = now;
    this.limitedAt = now;
  }

  /**
   * A hint said `perSecond` (already clamped) for a call sent at `sentAt`; the highest ever
   * said raises the target when nothing is configured.
   */
  set(perSecond: number, now: number, configured: number | undefined, sentAt = now, weak = false): void {
    this.weak = weak;
    let value = perSecond;
    if (this.run > 0) {
      // A hint after a recovery step took it back at the level it said before: the server has
      // not come back up, wait longer next time. A lower number than before is a new limit
      // (it fell again), which says nothing of how soon the old one returns.
      if (perSecond < this.value && perSecond >= this.hint) this.fails = Math.min(this.fails + 1, MAX_BACKOFF);
    } else if (sentAt >= this.changedAt && perSecond === this.hint) {
      // Refused although sent at the pace in force, with the same number again: the server's
      // number is rounded, or its window stricter than it says. Go a little under (5 % a
      // time, down to 80 % of what it says).
      value = Math.max(REPEAT_FLOOR * perSecond, Math.min(perSecond, this.value) * REPEAT_CUT);
    }
    this.hint = perSecond;
    this.run = 0;
    this.value = value;
    this.changedAt = now;
    this.limitedAt = now;
    this.target = configured ?? Math.max(this.target, perSecond);
  }

  /**
   * A hint of `perSecond` for a call sent at `sentAt` repeats the last one although that call
   * went at the lowest pace the repeats take the ceiling to (`REPEAT_FLOOR` × the number): not
   * a rounding at the edge of this level's limit, so not this level's limit at all.
   */
  refusedAtFloor(perSecond: number, sentAt: number): boolean {
    return this.hint === perSecond && this.run === 0 && sentAt >= this.changedAt && this.value <= REPEAT_FLOOR * perSecond * (1 + 1e-9);
  }

  /** A rate-limited answer (with or without a number): the quiet period starts again. */
  limited(now: number): void {
    this.limitedAt = now;
  }

  /** The quiet period in force: `quietMs` (a quarter under pressure or on a guess), doubled per failed recovery. */
  quietMs(r: CeilingRecovery, pressed: boolean): number {
    return (pressed || this.weak ? PRESSED_QUIET * r.quietMs : r.quietMs) * 2 ** this.fails;
  }

  /**
   * Applies the recovery steps due by `now`. Returns true when the value rose. `pressed`:
   * callers were turned away for want of a turn lately, so waiting costs more than a probe.
   */
  recover(now: number, r: CeilingRecovery, pressed = false): boolean {
    if (this.value >= this.target) return false;
    // The quiet period holds back the first step only: once a recovery has begun it goes on.
    const stepMs = pressed ? r.stepMs * PRESSED_STEP : r.stepMs;
    let at = this.run > 0 ? this.changedAt + stepMs : Math.max(this.limitedAt + this.quietMs(r, pressed), this.changedAt + stepMs);
    if (now < at) return false;
    let value = this.value;
    let run = this.run;
    // Floating steps must land on the target, not a hair under it.
    const top = this.target * (1 - 1e-9);
    // Each step doubles the one before (0.1, 0.2, 0.4 … of the target): a ceiling halved by a
    // drift that has ended is back within a few steps, while the first step stays small.
    for (;;) {
      value += r.stepFraction * this.target * 2 ** Math.min(run, 30);
      run++;
      if (value >= top || at + stepMs > now) break;
      at += stepMs;
    }
    this.value = value >= top ? this.target : value;
    this.run = run;
    this.changedAt = at;
    // Back at the target: the limit is whole again, the next drop starts from the short quiet period.
    if (this.value === this.target) this.fails = 0;
    return true;
  }
}

/** Clamps a hinted ceiling into the learned range. */
export function clampLearned(perSecond: number): number {
  return Math.min(LEARNED_MAX_PER_SECOND, Math.max(LEARNED_MIN_PER_SECOND, perSecond));
}

const CEILING_RECOVERY_KEYS: Record<keyof CeilingRecoveryOptions, true> & KnownKeys = { quietMs: true, stepMs: true, stepFraction: true };

/** Checks `ceilingRecovery`. */
export function resolveCeilingRecovery(value: unknown): CeilingRecovery {
  const o = optionsObject('ceilingRecovery', value, CEILING_RECOVERY_KEYS) ?? {};
  const d = DEFAULTS.ceilingRecovery;
  const stepFraction = finite('ceilingRecovery.stepFraction', o['stepFraction'], d.stepFraction, 0, true);
  if (stepFraction > 1) throw invalidOption('ceilingRecovery.stepFraction', 'a fraction in (0, 1]', stepFraction);
  return {
    quietMs: finite('ceilingRecovery.quietMs', o['quietMs'], d.quietMs),
    stepMs: finite('ceilingRecovery.stepMs', o['stepMs'], d.stepMs, 0, true),
    stepFraction,
  };
}
