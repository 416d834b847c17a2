/**
 * Attempt timeouts on one shared timer.
 *
 * Arming and clearing a host timer per attempt is the largest single cost of a call that
 * succeeds (Node's timer lists are rebuilt when a list empties). Attempts of one pool
 * mostly share one timeout, so their deadlines arrive in order: those go to a doubly
 * linked list sorted by due time, appended at the tail in O(1) and unlinked in O(1) when
 * an attempt ends. An entry due before the list's tail (a shorter per-call timeout, a
 * deadline closer than the attempt timeout) goes to a binary min-heap instead: O(log n)
 * to add or remove, so due times arriving in decreasing order never make the queue
 * quadratic. The earliest entry is the earlier of the list's head and the heap's top. One
 * clock timer is armed for it; it is not cleared when that entry leaves early (it simply
 * fires, finds nothing due, and re-arms). An attempt with no timeout is queued too (due at
 * `Infinity`, at the list's tail, arming nothing): the queue holds every running attempt,
 * which is how `close({ abortAfterMs })` finds them.
 *
 * A queued attempt keeps the process alive (an operation that waits on nothing else still
 * gets its timeout); an empty queue does not. On Node with the system clock that costs
 * nothing per call (Bun and Deno alike): the timer is never referenced while calls come and go, and when the
 * process is about to exit for lack of other work (`beforeExit`, see `exitHolds`) a queue
 * that still holds attempts references its timer, so the process runs on to their timeouts.
 * With any other clock the timer is referenced while the queue has entries and released when
 * it empties (`ref`/`unref` at each transition: at one caller, twice per call).
 */
import { exitHolds, type Clock, type TimerHandle } from '../base/clock.js';
import { requestBound } from '../base/request-bound.js';

/** Something with a deadline in the queue (the attempt itself: no allocation per entry). */
export interface TimeoutEntry {
  dueAt: number;
  prevTimeout: TimeoutEntry | undefined;
  nextTimeout: TimeoutEntry | undefined;
  queued: boolean;
  /** Its index in the heap, or -1 while it is in the list (or not queued). */
  heapIndex: number;
  /** Called once when dueAt has passed and the entry is still queued. */
  expire(now: number): void;
}

export class TimeoutQueue {
  readonly #clock: Clock;
  #head: TimeoutEntry | undefined;
  #tail: TimeoutEntry | undefined;
  readonly #heap: TimeoutEntry[] = [];
  #timer: TimerHandle | undefined;
  /** When the armed timer fires. */
  #armedAt = Infinity;
  /** Whether the armed timer currently keeps the process alive. */
  #refed = false;
  readonly #onTimer = (): void => this.#fire();
  /** Where the host runs holds before it exits (see `exitHolds`): the timer is referenced only then. */
  readonly #holds: Set<() => void> | undefined;
  /** Run before the process would exit: attempts still queued keep it alive until their timeouts. */
  readonly #hold = (): void => {
    if (this.#due()) this.#setRef(true);
  };

  /** Where timers belong to a request (base/request-bound.ts): each entry's own timer, armed by its call (none for an entry never due). */
  readonly #own: Map<TimeoutEntry, TimerHandle | undefined> | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#holds = exitHolds(clock);
    this.#own = requestBound() ? new Map() : undefined;
  }

  add(entry: TimeoutEntry, dueAt: number): void {
    entry.dueAt = dueAt;
    entry.queued = true;
    const own = this.#own;
    if (own !== undefined) {
      // Its own timer, armed now, in the request of the code that adds it.
      const clock = this.#clock;
      own.set(entry, dueAt === Infinity ? undefined : clock.setTimeout(() => entry.queued && (this.remove(entry), entry.expire(clock.now())), Math.max(0, dueAt - clock.now())));
      return;
    }
    const tail = this.#tail;
    const top = this.#heap[0];
    // Appended to a list that had entries, it is not the earliest: nothing to arm (the timer is
    // never armed later than the earliest entry), and no due time to read again.
    let firstDue: number | undefined = tail === undefined && top === undefined ? dueAt : undefined;
    if (tail === undefined || tail.dueAt <= dueAt) {
      entry.heapIndex = -1;
      entry.prevTimeout = tail;
      entry.nextTimeout = undefined;
      if (tail === undefined) this.#head = entry;
      else {
        tail.nextTimeout = entry;
        firstDue = Infinity;
      }
      this.#tail = entry;
    } else {
      this.#heapPush(entry);
    }
    // Arm for the earliest entry, which is not always the new one (an expiry handler may
    // add a later entry while earlier ones are still queued).
    firstDue ??= this.#earliest()!.dueAt;
    if (firstDue < this.#armedAt) this.#arm(firstDue);
    else if (!this.#refed && this.#holds === undefined && dueAt !== Infinity) this.#setRef(true);
  }

  remove(entry: TimeoutEntry): void {
    if (!entry.queued) return;
    entry.queued = false;
    const own = this.#own;
    if (own !== undefined) {
      const timer = own.get(entry);
      if (timer !== undefined) this.#clock.clearTimeout(timer);
      own.delete(entry);
      return;
    }
    const i = entry.heapIndex;
    if (i >= 0) {
      this.#heapRemove(i);
    } else {
      const prev = entry.prevTimeout;
      const next = entry.nextTimeout;
      if (prev === undefined) this.#head = next;
      else prev.nextTimeout = next;
      if (next === undefined) this.#tail = prev;
      else next.prevTimeout = prev;
      entry.prevTimeout = entry.nextTimeout = undefined;
    }
    if (this.#refed && !this.#due()) this.#setRef(false);
  }

  /** Whether an entry with a due time is queued (one with none keeps nothing alive). */
  #due(): boolean {
    const h = this.#head;
    return this.#heap.length > 0 || (h !== undefined && h.dueAt !== Infinity);
  }

  /** What is queued now, in no order (`close({ abortAfterMs })` ends them). */
  entries(): TimeoutEntry[] {
    const all = this.#own === undefined ? this.#heap.slice() : [...this.#own.keys()];
    for (let e = this.#head; e !== undefined; e = e.nextTimeout) all.push(e);
    return all;
  }

  /** Stops the timer (the pool is closed and nothing is queued). */
  stop(): void {
    this.#own?.forEach((timer) => timer !== undefined && this.#clock.clearTimeout(timer));
    this.#own?.clear();
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedAt = Infinity;
    this.#holds?.delete(this.#hold);
  }

  #earliest(): TimeoutEntry | undefined {
    const h = this.#head;
    const top = this.#heap[0];
    if (top === undefined) return h;
    return h === undefined || top.dueAt < h.dueAt ? top : h;
  }

  #arm(dueAt: number): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#armedAt = dueAt;
    const holds = this.#holds;
    this.#refed = holds === undefined;
    this.#timer = this.#clock.setTimeout(this.#onTimer, Math.max(0, dueAt - this.#clock.now()), !this.#refed);
    holds?.add(this.#hold);
  }

  #setRef(on: boolean): void {
    if (this.#timer === undefined) return;
    this.#refed = on;
    this.#clock.setRef?.(this.#timer, on);
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedAt = Infinity;
    this.#refed = false;
    this.#holds?.delete(this.#hold);
    const now = this.#clock.now();
    for (let e = this.#earliest(); e !== undefined && e.dueAt <= now; e = this.#earliest()) {
      this.remove(e);
      e.expire(now);
    }
    const next = this.#earliest();
    if (next !== undefined && next.dueAt < this.#armedAt) this.#arm(next.dueAt);
  }

  #heapPush(e: TimeoutEntry): void {
    const heap = this.#heap;
    e.heapIndex = heap.length;
    heap.push(e);
    this.#up(heap.length - 1);
  }

  #heapRemove(i: number): void {
    const heap = this.#heap;
    const e = heap[i]!;
    e.heapIndex = -1;
    const last = heap.pop()!;
    if (last === e) return;
    heap[i] = last;
    last.heapIndex = i;
    this.#up(i);
    this.#down(last.heapIndex);
  }

  #up(i: number): void {
    const heap = this.#heap;
    const e = heap[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = heap[p]!;
      if (parent.dueAt <= e.dueAt) break;
      heap[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    heap[i] = e;
    e.heapIndex = i;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const e = heap[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && heap[r]!.dueAt < heap[l]!.dueAt ? r : l;
      if (heap[c]!.dueAt >= e.dueAt) break;
      heap[i] = heap[c]!;
      heap[i]!.heapIndex = i;
      i = c;
    }
    heap[i] = e;
    e.heapIndex = i;
  }
}
