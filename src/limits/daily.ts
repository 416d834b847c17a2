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
 *
 * Wall steps: a step forward across the reset is a reset while it lasts. A step back
 * before the counted day undoes the resets it recrosses: the days counted since the wall
 * passed them (up to a week of them) count again in the day the wall is back in, with
 * their "spent" marks, and that day ends at the next reset the wall reaches. The provider
 * counts on its own clock, so calls made on either side of a reset that did not happen
 * were made on one day of its: counting them together can stop a little early, never late.
 */
import { invalidOption } from '../base/errors.js';
import { DEFAULTS } from '../options/defaults.js';

const DAY_MS = 86_400_000;
/** Past days remembered for a step back (an entry per day with calls, or per quota it came from). */
const KEPT_DAYS = 7;

/** A day the counter left at a reset: its end on the wall, its count, whether the server said it was spent. */
interface PastDay {
  readonly end: number;
  count: number;
  exhausted: boolean;
}

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
  /** Days left at a reset, oldest first, with calls or spent (see the module comment). */
  #past: PastDay[] = [];
  /** What the past days could bring back on a step back: their calls, and whether one was spent. */
  #pastCount = 0;
  #pastSpent = false;
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
    // Under the stop even with every past day back (a step of the wall backwards), and not
    // spent: no wait, whatever the calendar says (a reset only lowers the count), so the wall
    // is not read. A selection asks every endpoint; the next take or count rolls the day.
    if (!this.#exhausted && !this.#pastSpent && this.#count + this.#pastCount < this.stopAt) return 0;
    const wall = this.#wallAt(now);
    this.#roll(wall);
    return this.#exhausted || this.#count >= this.stopAt ? this.#periodEnd - wall : 0;
  }

  take(now: number): void {
    this.#roll(this.#wallAt(now));
    this.#count++;
  }

  /**
   * Takes in what `old`, the counter this one replaces (a new limit or group for the same
   * key), counted: today's calls and the past days a step back would bring back; with
   * `parks`, the "spent" marks too (not into a group: a key's spent day is its own).
   */
  absorb(old: DailyCounter, now: number, parks: boolean): void {
    const wall = this.#wallAt(now);
    this.#roll(wall);
    old.#roll(wall);
    this.#count += old.#count;
    if (parks && old.#exhausted) this.#exhausted = true;
    // Two entries for one day add up when a step back merges them.
    for (const p of old.#past) this.#past.push({ end: p.end, count: p.count, exhausted: parks && p.exhausted });
    this.#past = this.#past.sort((a, b) => a.end - b.end).slice(-KEPT_DAYS);
    this.#tally();
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
      if (wall < this.#periodEnd - DAY_MS) this.#back(wall);
      return;
    }
    if (this.#count > 0 || this.#exhausted) {
      this.#past.push({ end: this.#periodEnd, count: this.#count, exhausted: this.#exhausted });
      if (this.#past.length > KEPT_DAYS) this.#past.shift();
      this.#tally();
    }
    this.#count = 0;
    this.#exhausted = false;
    this.#periodEnd = nextDailyReset(wall, this.resetUtcHour);
  }

  /** The wall is back before the counted day: the days counted since it passed their end count again. */
  #back(wall: number): void {
    const past = this.#past;
    while (past.length > 0 && past[past.length - 1]!.end > wall) {
      const day = past.pop()!;
      this.#count += day.count;
      if (day.exhausted) this.#exhausted = true;
    }
    this.#tally();
    this.#periodEnd = nextDailyReset(wall, this.resetUtcHour);
  }

  #tally(): void {
    let count = 0;
    let spent = false;
    for (const p of this.#past) {
      count += p.count;
      if (p.exhausted) spent = true;
    }
    this.#pastCount = count;
    this.#pastSpent = spent;
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
