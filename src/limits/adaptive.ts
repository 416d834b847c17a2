/**
 * A per-second limit that tunes itself from rate-limited answers that carry no number
 * (issue 18). Opt-in per endpoint: `rateLimit: { adaptive: { min, max } }`. A 429 that says
 * how fast ("(5/sec)") still sets a learned ceiling (ceiling.ts); the rate in force is the
 * lower of the two.
 *
 * The control law, in three parts:
 *
 * - **Decrease**, on a rate-limited answer, at most once per `windowMs` (the server's
 *   counting window, one second at most providers), and only for an attempt sent after the
 *   last decrease (an answer to a call sent at the old rate says nothing about the new one).
 *   The pool counts successes in half-window slots; the *accepted* rate is their count over
 *   the shortest span of 1, 2, 4 or 8 windows that holds at least 4. Two cases:
 *   - refused while *probing* above the anchor: the limit is at least the anchor (accepted
 *     through the hold) and under the probe; the new anchor is the highest of the anchor, the
 *     probe's previous step (held a whole window) and the accepted rate. Same anchor again:
 *     the hold doubles;
 *   - refused at or under the anchor (or before any): the limit moved down. The accepted
 *     rate is the new anchor if it is clearly under the refused rate; otherwise (the limit
 *     moved under the reading, or too few successes) the rate is multiplied by `decrease`.
 *   An anchor read from successes is rounded to whole calls (servers count whole calls per
 *   window: 4.8/s over a few windows is a limit of 5); the rate restarts 5 % under it, in
 *   whole calls, and never under half the rate in force unless the endpoint was busy (a
 *   reading taken while demand was low says more about the demand than the server).
 * - **Plateau**: back up to the anchor within two windows, then hold there for `holdMs`;
 *   after a failed probe, for the doubled hold, and at least the time of `PROBE_CALLS` calls
 *   at the anchor, up to `maxHoldMs`: a slow endpoint probes less often, since each failed
 *   probe costs a whole 429.
 * - **Probe**: past the hold, one call per window above the anchor, then faster and faster:
 *   `anchor × (1 + p²)` with `p` growing by 1 every `doublingMs`, one step per window (each
 *   step held long enough for the server to judge it). A limit that came back up is found
 *   within `maxHoldMs` and a few steps.
 *
 * Time counts only while the endpoint is busy (it sent at least 70 % of what its limiter
 * allowed over the last two windows): an idle endpoint keeps its rate, so a burst after a
 * quiet hour does not meet a rate that grew unchecked. Everything is clamped to
 * [`min`, `max`].
 *
 * Pure: every method takes `now`; the pool applies the rate to the quota's limiter and
 * reports `endpoint-adapted` (see call/adaptive.ts).
 */
import { invalidOption } from '../base/errors.js';
import { CONFIGURED_MAX_PER_SECOND } from './ceiling.js';
import { finite, optionsObject, type KnownKeys } from '../options/validate.js';

/** `rateLimit.adaptive`, resolved. */
export interface ResolvedAdaptive {
  readonly min: number;
  readonly max: number;
  readonly decrease: number;
  readonly windowMs: number;
  readonly holdMs: number;
  readonly maxHoldMs: number;
  readonly doublingMs: number;
}

/** Counting slots per window, and windows of history. */
const PER_WINDOW = 2;
const SLOTS = 36;
/** A limit slower than two windows is judged busy over this many of its intervals. */
const BUSY_INTERVALS = 4;
/** Below this many successes a window's count is too coarse to set the rate from. */
const MIN_COUNT = 4;
/** The share of its limiter's allowance an endpoint must send to count as busy. */
const BUSY = 0.7;
/** Under the accepted rate after a decrease, and the span (in windows) to climb back to the anchor. */
const BACKOFF = 0.95;
const APPROACH_WINDOWS = 2;
/** A probe (and the rate-limited answer it costs when it fails) at most once per this many calls, within `maxHoldMs`. */
const PROBE_CALLS = 50;
/** A failure within this ratio of the anchor is "the same limit again". */
const SAME = 0.1;

export class AdaptiveLimit {
  readonly o: ResolvedAdaptive;
  /** The rate the controller allows now. */
  rate: number;
  /** The accepted rate when the last counted rate-limited answer came; `undefined` before one did. */
  anchor: number | undefined;
  /** When the last decrease happened. */
  decreasedAt = -Infinity;
  /** When `rate` last changed. */
  changedAt: number;
  /** The current plateau length. */
  hold: number;
  /** Rate right after the last decrease (or the start). */
  #from: number;
  /** The rate before the last increase (held at least a window). */
  #held = 0;
  /** Busy time since the last decrease (or the start). */
  #elapsed = 0;
  readonly #slotMs: number;
  #slot: number;
  readonly #ok = new Array<number>(SLOTS).fill(0);
  readonly #sent = new Array<number>(SLOTS).fill(0);
  /** The limiter's steady spacing, as last seen (for the busy test). */
  #intervalMs: number;

  constructor(o: ResolvedAdaptive, start: number, now: number) {
    this.o = o;
    this.rate = clamp(start, o);
    this.#from = this.rate;
    this.changedAt = now;
    this.hold = o.holdMs;
    this.#slotMs = o.windowMs / PER_WINDOW;
    this.#slot = Math.floor(now / this.#slotMs);
    this.#intervalMs = 1000 / this.rate;
  }

  /** An attempt left (counted for the busy test). */
  taken(now: number): void {
    this.#roll(now);
    this.#sent[this.#slot % SLOTS]!++;
  }

  /** A success. */
  succeeded(now: number): void {
    this.#roll(now);
    this.#ok[this.#slot % SLOTS]!++;
  }

  /**
   * A rate-limited answer without a number, for an attempt sent at `sentAt`. Returns the
   * new rate when it decreased, else `undefined`.
   */
  limited(now: number, sentAt: number): number | undefined {
    this.#roll(now);
    if (sentAt < this.decreasedAt || now - this.decreasedAt < this.o.windowMs) return undefined;
    const accepted = this.#accepted();
    // The rate the refused call was sent at: the step before the last increase, if it left before that increase.
    const before = sentAt < this.changedAt && this.#held > 0 ? this.#held : this.rate;
    const a = this.anchor;
    let found: number;
    let measured: boolean;
    if (a !== undefined && before > a * 1.001) {
      // A probe failed: the limit is at least the anchor (accepted through the hold) and under the probe.
      measured = true;
      // The step before the refused one was held a whole window: a paced limiter sent floor(rate) calls in each.
      const held = before === this.rate && this.#held >= 1 ? Math.floor(this.#held) : a;
      found = Math.max(a, held < before ? held : a, accepted !== undefined && accepted < before ? accepted : a);
      this.hold = found <= a * (1 + SAME) ? Math.min(this.hold * 2, this.o.maxHoldMs) : this.o.holdMs;
    } else {
      // Refused at or under the rate last found: the limit moved down. A reading of what the
      // server accepted counts only if it is under the refused rate (else the limit moved under it).
      measured = accepted !== undefined && accepted < before * (1 - SAME / 2);
      found = measured ? accepted! : before * this.o.decrease;
      this.hold = this.o.holdMs;
    }
    // Servers count whole calls per window: an accepted rate of 4.8/s over a few windows is a limit
    // of 5, 0.9/s one of 1 (but never the rate just refused, or above it).
    const whole = Math.round(found);
    const anchor = measured && found >= 0.75 && whole < before ? whole : found;
    this.anchor = anchor;
    // Just under what the server accepted, in whole calls per window when the anchor is (a paced 1.9/s sends 1 a second).
    const under = anchor * BACKOFF;
    // A reading taken while the endpoint sent all it could is the server's doing: go there at once.
    // Otherwise (demand was low), never under half the rate in force.
    const next = measured ? Math.max(this.#busy() ? 0 : before / 2, under >= 1 && anchor === whole ? Math.ceil(under) : under) : found;
    this.rate = clamp(next, this.o);
    this.#from = this.rate;
    this.#held = 0;
    this.#elapsed = 0;
    this.decreasedAt = now;
    this.changedAt = now;
    return this.rate;
  }

  /** Applies the increase due by `now`; returns the new rate when it rose. `intervalMs`: the limiter's steady spacing. */
  increase(now: number, intervalMs: number): number | undefined {
    this.#intervalMs = intervalMs;
    this.#roll(now);
    // One step a window at most: each rate of a probe is held long enough for the server to judge it.
    if (now - this.changedAt < this.o.windowMs) return undefined;
    const target = this.#schedule();
    if (target <= this.rate * 1.001 || !this.#busy()) return undefined;
    this.#held = this.rate;
    this.rate = target;
    this.changedAt = now;
    return target;
  }

  /** The rate the schedule reaches after `#elapsed` ms of busy time. */
  #schedule(): number {
    const t = this.#elapsed;
    const o = this.o;
    const a = this.anchor;
    let r: number;
    if (a === undefined) {
      // Nothing found yet: double every `doublingMs` from the start rate.
      r = this.#from * 2 ** (t / o.doublingMs);
    } else {
      const approach = APPROACH_WINDOWS * o.windowMs;
      if (t < approach) r = this.#from + (Math.max(a, this.#from) - this.#from) * (t / approach);
      else if (t < approach + this.#holdFor(Math.max(a, this.#from))) r = Math.max(a, this.#from);
      else {
        // The probe starts one call per window above the anchor (less is the same rate to a server counting whole calls).
        const base = Math.max(a, this.#from);
        const p = (t - approach - this.#holdFor(base)) / o.doublingMs + (base >= 1 ? Math.min(1, Math.sqrt(1 / base)) : 0);
        r = base * (1 + p * p);
      }
    }
    return clamp(r, o);
  }

  /** Only a busy endpoint has shown that it needs more: it sent 70 % of what its limiter allowed over the last two windows. */
  #busy(): boolean {
    // Whole slots only: the current one has only begun. A slow limit is judged over four of
    // its intervals (as far as the ring reaches), so that a count one short by phase still passes.
    const span = this.#busySlots();
    const sent = this.#sentIn(span + 1) - this.#sent[this.#slot % SLOTS]!;
    return sent >= (BUSY * span * this.#slotMs) / this.#intervalMs;
  }

  /** Whole slots the busy test looks back over: two windows, or four intervals of a slower limit (at most the ring less the current slot). */
  #busySlots(): number {
    const slots = Math.ceil((BUSY_INTERVALS * this.#intervalMs) / this.#slotMs);
    return Math.min(SLOTS - 1, Math.max(2 * PER_WINDOW, slots));
  }

  /**
   * The hold at `rate`: every probe that fails costs at least one rate-limited answer, so once
   * a probe failed at the same anchor, a slow endpoint holds longer, to spend at most one on
   * `PROBE_CALLS` calls (up to `maxHoldMs`).
   */
  #holdFor(rate: number): number {
    // The first probe after the limit moved comes soon: the reading that set the anchor may be short.
    if (this.hold === this.o.holdMs) return this.hold;
    const perCalls = (PROBE_CALLS * 1000) / rate;
    return Math.max(this.hold, Math.min(this.o.maxHoldMs, perCalls));
  }

  /** Successes per second over the shortest span of whole slots before the current one (one, two, four or eight windows) that holds enough of them. */
  #accepted(): number | undefined {
    for (const windows of [1, 2, 4, 8]) {
      const slots = windows * PER_WINDOW;
      const n = this.#okIn(slots + 1) - this.#ok[this.#slot % SLOTS]!;
      if (n >= MIN_COUNT) return (n * 1000) / (windows * this.o.windowMs);
    }
    return undefined;
  }

  #okIn(slots: number): number {
    let n = 0;
    for (let i = 0; i < slots; i++) n += this.#ok[(this.#slot - i + SLOTS * 4) % SLOTS]!;
    return n;
  }

  #sentIn(slots: number): number {
    let n = 0;
    for (let i = 0; i < slots; i++) n += this.#sent[(this.#slot - i + SLOTS * 4) % SLOTS]!;
    return n;
  }

  /** Moves to the slot of `now`, clearing the ones passed, and counts busy time. */
  #roll(now: number): void {
    const slot = Math.floor(now / this.#slotMs);
    const passed = slot - this.#slot;
    if (passed <= 0) return;
    // Busy time: the slots just completed, if the endpoint was busy over the last two windows (an idle gap counts nothing).
    // A gap of up to one interval of the limiter (and a slot) is an endpoint at its pace, not idle.
    if (passed <= Math.max(2, Math.ceil(this.#intervalMs / this.#slotMs) + 1) && this.#busy()) this.#elapsed += passed * this.#slotMs;
    for (let i = 1; i <= Math.min(passed, SLOTS); i++) {
      const k = (this.#slot + i) % SLOTS;
      this.#ok[k] = 0;
      this.#sent[k] = 0;
    }
    this.#slot = slot;
  }
}

function clamp(r: number, o: ResolvedAdaptive): number {
  return Math.min(o.max, Math.max(o.min, r));
}

const ADAPTIVE_KEYS: Record<keyof ResolvedAdaptive, true> & KnownKeys = {
  min: true,
  max: true,
  decrease: true,
  windowMs: true,
  holdMs: true,
  maxHoldMs: true,
  doublingMs: true,
};

/** Defaults of `rateLimit.adaptive` (min: 1 % of max). */
export const ADAPTIVE_DEFAULTS = { decrease: 0.8, windowMs: 1_000, holdMs: 5_000, maxHoldMs: 15_000, doublingMs: 8_000 } as const;

/**
 * Checks `rateLimit.adaptive`. `perSecond`: the configured rate, the start rate and the
 * default `max`. Returns the options and the start rate.
 */
export function resolveAdaptive(field: string, value: unknown, perSecond: number | undefined): ResolvedAdaptive | undefined {
  const a = optionsObject(field, value === true ? {} : value, ADAPTIVE_KEYS, { floor: 'min', ceiling: 'max' });
  if (a === undefined) return undefined;
  const d = ADAPTIVE_DEFAULTS;
  const max = a['max'] === undefined ? perSecond : finite(`${field}.max`, a['max'], 0, 0, true);
  if (max === undefined) throw invalidOption(`${field}.max`, 'a number of calls per second > 0 (or a rateLimit.perSecond)', undefined);
  if (max > CONFIGURED_MAX_PER_SECOND) throw invalidOption(`${field}.max`, `a number of calls per second up to ${CONFIGURED_MAX_PER_SECOND}`, max);
  const min = finite(`${field}.min`, a['min'], max / 100, 0, true);
  if (min > max) throw invalidOption(`${field}.min`, `a number of calls per second <= max (${max})`, min);
  if (perSecond !== undefined && (perSecond < min || perSecond > max)) throw invalidOption(`${field.replace(/\.adaptive$/, '')}.perSecond`, `a start rate within adaptive [min, max] = [${min}, ${max}]`, perSecond);
  const decrease = finite(`${field}.decrease`, a['decrease'], d.decrease, 0, true);
  if (decrease >= 1) throw invalidOption(`${field}.decrease`, 'a factor in (0, 1)', decrease);
  const windowMs = finite(`${field}.windowMs`, a['windowMs'], d.windowMs, 0, true);
  const holdMs = finite(`${field}.holdMs`, a['holdMs'], d.holdMs);
  const maxHoldMs = finite(`${field}.maxHoldMs`, a['maxHoldMs'], Math.max(d.maxHoldMs, holdMs));
  if (maxHoldMs < holdMs) throw invalidOption(`${field}.maxHoldMs`, `a number of milliseconds >= holdMs (${holdMs})`, maxHoldMs);
  const doublingMs = finite(`${field}.doublingMs`, a['doublingMs'], d.doublingMs, 0, true);
  return { min, max, decrease, windowMs, holdMs, maxHoldMs, doublingMs };
}
