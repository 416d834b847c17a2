/**
 * Attempt timeouts on one shared timer.
 *
 * Arming and clearing a host timer per attempt is the largest single cost of a call that
 * succeeds (Node's timer lists are rebuilt when a list empties). Attempts of one pool
 * mostly share one timeout, so their deadlines arrive in order: the queue is a doubly
 * linked list sorted by due time, appended at the tail in O(1) in the common case, and
 * unlinked in O(1) when an attempt ends. One clock timer is armed for the head; it is
 * not cleared when the head leaves early (it simply fires, finds nothing due, and re-arms
 * for the new head), and while the queue is empty it is told not to keep the process
 * alive.
 */
import type { Clock, TimerHandle } from '../base/clock.js';

/** Something with a deadline in the queue (the attempt itself: no allocation per entry). */
export interface TimeoutEntry {
  dueAt: number;
  prevTimeout: TimeoutEntry | undefined;
  nextTimeout: TimeoutEntry | undefined;
  queued: boolean;
  /** Called once when `dueAt` has passed and the entry is still queued. */
  expire(now: number): void;
}

export class TimeoutQueue {
  readonly #clock: Clock;
  #head: TimeoutEntry | undefined;
  #tail: TimeoutEntry | undefined;
  #timer: TimerHandle | undefined;
  /** When the armed timer fires. */
  #armedAt = Number.POSITIVE_INFINITY;
  /** Whether the armed timer currently keeps the process alive. */
  #refed = false;
  readonly #onTimer = (): void => this.#fire();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  add(entry: TimeoutEntry, dueAt: number): void {
    entry.dueAt = dueAt;
    entry.queued = true;
    let after = this.#tail;
    while (after !== undefined && after.dueAt > dueAt) after = after.prevTimeout;
    entry.prevTimeout = after;
    entry.nextTimeout = after === undefined ? this.#head : after.nextTimeout;
    if (entry.nextTimeout === undefined) this.#tail = entry;
    else entry.nextTimeout.prevTimeout = entry;
    if (after === undefined) this.#head = entry;
    else after.nextTimeout = entry;
    // Arm for the head, which is not always the new entry (an expiry handler may add a
    // later entry while earlier ones are still queued).
    const headDue = this.#head!.dueAt;
    if (headDue < this.#armedAt) this.#arm(headDue);
    else if (!this.#refed) this.#setRef(true);
  }

  remove(entry: TimeoutEntry): void {
    if (!entry.queued) return;
    entry.queued = false;
    const prev = entry.prevTimeout;
    const next = entry.nextTimeout;
    if (prev === undefined) this.#head = next;
    else prev.nextTimeout = next;
    if (next === undefined) this.#tail = prev;
    else next.prevTimeout = prev;
    entry.prevTimeout = entry.nextTimeout = undefined;
    if (this.#head === undefined) this.#setRef(false);
  }

  /** Stops the timer (the pool is closed and nothing is queued). */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
  }

  #arm(dueAt: number): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#armedAt = dueAt;
    this.#refed = true;
    this.#timer = this.#clock.setTimeout(this.#onTimer, Math.max(0, dueAt - this.#clock.now()));
  }

  #setRef(on: boolean): void {
    if (this.#timer === undefined) return;
    this.#refed = on;
    this.#clock.setRef?.(this.#timer, on);
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    for (let e = this.#head; e !== undefined && e.dueAt <= now; e = this.#head) {
      this.remove(e);
      e.expire(now);
    }
    if (this.#head !== undefined && this.#head.dueAt < this.#armedAt) this.#arm(this.#head.dueAt);
  }
}
