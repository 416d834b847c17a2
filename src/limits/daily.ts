/**
 * A daily quota: counts calls per day and stops admitting at a fraction of the quota
 * (95 % by default, leaving room for what other clients of the same key spend), until the
 * next reset, midnight UTC by default.
 *
 * `exhaust(now)` parks the counter until the next reset: used when the server says the
 * day's quota is spent, whatever our own count says.
 *
 * `now` is the pool's monotonic time; the day boundaries are calendar (wall) time, read
 * from `wall()` when one is given (the pool passes its clock's `wallNow`), else taken to
 * be `now` itself. Waits come out as durations, so a caller never mixes the two clocks.
 */
import { invalidOption } from '../base/errors.js';
import { DEFAULTS } from '../options/defaults.js';

const DAY_MS = 86_400_000;

/** The first reset strictly after `now`, for a reset at `resetUtcHour`:00 UTC every day. */
export function nextDailyReset(now: number, resetUtcHour: number): number {
  const offset = resetUtcHour * 3_600_000;
  return (Math.floor((now - offset) / DAY_MS) + 1) * DAY_MS + offset;
}

export class DailyCounter {
  readonly perDay: number;
  readonly stopAt: number;
  readonly resetUtcHour: number;
  #count = 0;
  #periodEnd: number;
  #exhausted = false;
  readonly #wall: (() => number) | undefined;

  constructor(perDay: number, stopFraction: number, resetUtcHour: number, now: number, wall?: () => number) {
    this.perDay = perDay;
    this.stopAt = Math.max(1, Math.floor(perDay * stopFraction));
    this.resetUtcHour = resetUtcHour;
    this.#wall = wall;
    this.#periodEnd = nextDailyReset(wall === undefined ? now : wall(), resetUtcHour);
  }

  /** Calls counted since the last reset. */
  count(now: number): number {
    this.#roll(this.#wallAt(now));
    return this.#count;
  }

  waitMs(now: number): number {
    const wall = this.#wallAt(now);
    this.#roll(wall);
    return this.#exhausted || this.#count >= this.stopAt ? this.#periodEnd - wall : 0;
  }

  take(now: number, n = 1): void {
    this.#roll(this.#wallAt(now));
    this.#count += n;
  }

  /** The server says today's quota is spent: admit nothing until the next reset. Returns that time (on `now`'s clock). */
  exhaust(now: number): number {
    const wall = this.#wallAt(now);
    this.#roll(wall);
    this.#exhausted = true;
    return now + (this.#periodEnd - wall);
  }

  #wallAt(now: number): number {
    return this.#wall === undefined ? now : this.#wall();
  }

  #roll(wall: number): void {
    if (wall < this.#periodEnd) {
      if (wall < this.#periodEnd - DAY_MS) this.#periodEnd = nextDailyReset(wall, this.resetUtcHour);
      return;
    }
    this.#count = 0;
    this.#exhausted = false;
    this.#periodEnd = nextDailyReset(wall, this.resetUtcHour);
  }
}

/** Checks `dailyResetUtcHour`. */
export function resetHour(value: unknown): number {
  if (value === undefined) return DEFAULTS.dailyResetUtcHour;
  // Number.isInteger is false for every non-number.
  const hour = value as number;
  if (!Number.isInteger(hour) || hour < 0 || hour > 23) throw invalidOption('dailyResetUtcHour', 'an integer hour from 0 to 23', value);
  return hour;
}
