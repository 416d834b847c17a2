/**
 * A learned per-second ceiling: what a server said it accepts, bounded, and how it comes
 * back up when the server stops complaining.
 *
 * - Bounded: a learned value is clamped to [`LEARNED_MIN_PER_SECOND`,
 *   `LEARNED_MAX_PER_SECOND`] (the caller reports the clamp with an event), so a hint
 *   like "(10000000000/sec)" or "(0.0000001/sec)" can neither break the limiter nor park
 *   an endpoint for days.
 * - Recovery (additive increase): after `quietMs` with no rate-limited answer at this
 *   level, the ceiling rises by `stepFraction × target` every `stepMs`, up to the target:
 *   the configured rate, or, with none configured, the highest rate the server ever
 *   announced for this level. The next rate-limited answer with a number sets it again
 *   and restarts the quiet period. With the defaults (30 s, 10 s, 0.1) a ceiling halved
 *   by a hint is back at its target 30 s + 5 × 10 s = 80 s after the last complaint.
 *
 * Pure: every method takes `now`; nothing schedules a timer. The pool calls `recover`
 * when it has a reason to look (a success on the endpoint, `stats()`, `capacity()`).
 */

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

export class LearnedCeiling {
  /** The ceiling in force. */
  value: number;
  /** When `value` last changed (a hint or a recovery step). */
  changedAt: number;
  /** The last rate-limited answer at this level. */
  limitedAt: number;
  /** Where recovery stops. */
  target: number;

  constructor(value: number, target: number, now: number) {
    this.value = value;
    this.target = Math.max(target, value);
    this.changedAt = now;
    this.limitedAt = now;
  }

  /** A hint said `perSecond` (already clamped); the highest ever said raises the target when nothing is configured. */
  set(perSecond: number, now: number, configured: number | undefined): void {
    this.value = perSecond;
    this.changedAt = now;
    this.limitedAt = now;
    this.target = configured ?? Math.max(this.target, perSecond);
  }

  /** A rate-limited answer (with or without a number): the quiet period starts again. */
  limited(now: number): void {
    this.limitedAt = now;
  }

  /** Applies the recovery steps due by `now`. Returns true when the value rose. */
  recover(now: number, r: CeilingRecovery): boolean {
    if (this.value >= this.target) return false;
    const first = Math.max(this.limitedAt + r.quietMs, this.changedAt + r.stepMs);
    if (now < first) return false;
    const step = r.stepFraction * this.target;
    const steps = Math.min(Math.floor((now - first) / r.stepMs) + 1, Math.ceil((this.target - this.value) / step - 1e-9));
    const next = this.value + steps * step;
    // Floating steps must land on the target, not a hair under it.
    this.value = next >= this.target - step * 1e-6 ? this.target : next;
    this.changedAt = first + (steps - 1) * r.stepMs;
    return true;
  }
}

/** Clamps a hinted ceiling into the learned range. */
export function clampLearned(perSecond: number): number {
  return Math.min(LEARNED_MAX_PER_SECOND, Math.max(LEARNED_MIN_PER_SECOND, perSecond));
}
