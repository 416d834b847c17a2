/**
 * The calls waiting for one quota's next token, in the order they arrived.
 *
 * A call that selection sends to wait on an endpoint joins the queue of that endpoint's
 * quota (a group's members share one quota, so one queue). The queue keeps one timer, for
 * the moment its head could leave; when it fires, the head gets its turn (`turn(now)`,
 * synchronously) and takes the token; if a token is still free after that (a bucket with
 * several, a head that went elsewhere) the next call gets its turn, and so on. So a token
 * wakes exactly the calls it can serve: cost per token is constant, however many wait.
 *
 * In a group the calls in one queue wait on different members, and a member may also be
 * paced by a ceiling of its own: when the head's member is not ready, the next few calls
 * (`LOOKAHEAD`) are looked at, and the first whose member can take the token now gets the
 * turn instead of the token going unused. The head keeps its place.
 *
 * A call leaving early (deadline, abort, close) is dropped lazily: its entry stays until
 * it reaches the head and is then skipped; `size` counts only calls still waiting.
 *
 * While calls are queued, selection treats the quota as busy for newcomers (their wait is
 * the queue's: `Quota.etaMs(now, size)`), so no newcomer takes a token ahead of the queue.
 */
import type { Clock, TimerHandle } from '../base/clock.js';

/** What the head call waits on: the endpoint it chose. */
export interface QueueSlot {
  /** 0 when a call may leave toward it now, else milliseconds until one may (its limits only). */
  limitWaitMs(now: number): number;
  /** When a call with `ahead` calls before it in this queue, `aheadHere` of them for this slot, would get its turn. */
  turnEtaMs(now: number, ahead: number, aheadHere: number): number;
}

/** A waiting call. */
export interface QueuedWaiter {
  /** The ticket of its current place in a queue (0: in none); owned by the queue. */
  queueTicket: number;
  /** Its turn came: it leaves the queue and takes the token (or selects again) synchronously. */
  turn(now: number): void;
  /** Whether a turn `etaMs` away is too late for it (see `recheck`). */
  overdue(now: number, etaMs: number): boolean;
  /** It was taken out of the queue by `recheck`: it selects again, as a newcomer. */
  readmit(): void;
}

interface Entry {
  readonly waiter: QueuedWaiter;
  readonly slot: QueueSlot;
  readonly ticket: number;
}

let tickets = 0;

/** How many calls behind a head that cannot leave are looked at for one that can. */
export const LOOKAHEAD = 8;

export class WaitQueue {
  readonly #clock: Clock;
  #items: Entry[] = [];
  #head = 0;
  /** Calls still waiting (entries of calls that left are skipped when they reach the head). */
  size = 0;
  /** Of those, the calls that queued again at the front (see `join`). */
  front = 0;
  #timer: TimerHandle | undefined;
  #dueAt = Infinity;
  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#dueAt = Infinity;
    this.pump();
  };

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * Queues `waiter` at the back, or, when it already had its turn and must wait again, at
   * the front: behind the calls already there for the same reason, in their order (their
   * tickets are negative, and `front` counts those still waiting).
   */
  join(waiter: QueuedWaiter, slot: QueueSlot, front = false): void {
    const entry: Entry = { waiter, slot, ticket: front ? -++tickets : ++tickets };
    waiter.queueTicket = entry.ticket;
    this.size++;
    if (!front) this.#items.push(entry);
    else {
      this.front++;
      const items = this.#items;
      let at = this.#head;
      while (at < items.length && items[at]!.ticket < 0) at++;
      if (at === this.#head && this.#head > 0) items[--this.#head] = entry;
      else items.splice(at, 0, entry);
    }
    // A call within the look-ahead may leave before the head: look at its wait too.
    if (this.size === 1 || front || this.#items.length - this.#head <= LOOKAHEAD + 1) this.#arm(slot.limitWaitMs(this.#clock.now()));
    // A call back at the front takes a turn promised to the calls behind it (one refused
    // elsewhere may come here): those it now puts past their bound leave at once, rather
    // than wait for it and fail then.
    if (front && this.size > 1) this.recheck(this.#clock.now(), waiter);
  }

  /** `waiter` leaves before its turn. */
  leave(waiter: QueuedWaiter): void {
    if (waiter.queueTicket === 0) return;
    if (waiter.queueTicket < 0) this.front--;
    waiter.queueTicket = 0;
    this.size--;
    if (this.size === 0) this.#reset();
  }

  /**
   * A ceiling fell: the turns promised to the calls queued here come later. Walks the queue
   * in order, works out each call's new turn (behind the calls that stay), and takes out
   * those for which it is now too late (`overdue`); they then select again in their order
   * (another endpoint may be sooner; if none is in time they fail at once), so the calls
   * that stay keep the wait they were admitted with. Run once the answer that lowered the
   * ceiling has been dealt with (in a microtask): its call, if it queued again, is at the
   * front by then and counted as the others are. Also run when a call comes back to the
   * front (`keep`: that call, which stays). Cost: one pass over the queue, per fall or return.
   */
  recheck(now: number, keep?: QueuedWaiter): void {
    const items = this.#items;
    const out: QueuedWaiter[] = [];
    const here = new Map<QueueSlot, number>();
    let ahead = 0;
    for (let i = this.#head; i < items.length; i++) {
      const e = items[i]!;
      if (e.waiter.queueTicket !== e.ticket) continue;
      const mine = here.get(e.slot) ?? 0;
      if (e.waiter !== keep && e.waiter.overdue(now, e.slot.turnEtaMs(now, ahead, mine))) {
        out.push(this.#take(e));
        continue;
      }
      ahead++;
      here.set(e.slot, mine + 1);
    }
    if (this.size === 0) this.#reset();
    for (const w of out) w.readmit();
  }

  /**
   * `slot` (every slot, when none is named) takes no call for a long while: its key parked for
   * the day or disabled. The calls queued for it leave at once and select again, in their
   * order, as after a fall (`recheck`), rather than wait for a turn that would only send them
   * elsewhere then, at the front, ahead of the calls queued there meanwhile (whose turns it
   * would push past their bound). Calls queued for another slot (a group's other keys) stay.
   */
  evacuate(slot?: QueueSlot): void {
    const items = this.#items;
    const out: QueuedWaiter[] = [];
    for (let i = this.#head; i < items.length; i++) {
      const e = items[i]!;
      if (e.waiter.queueTicket === e.ticket && (slot === undefined || e.slot === slot)) out.push(this.#take(e));
    }
    if (out.length === 0) return;
    if (this.size === 0) this.#reset();
    else this.poke();
    for (const w of out) w.readmit();
  }

  /** The limits may have changed (a ceiling rose, the store recovered): look again soon. */
  poke(): void {
    if (this.size > 0) this.#arm(0);
  }

  /**
   * Gives turns while the head, or one of the `LOOKAHEAD` calls behind it, can leave now;
   * then arms the timer for the soonest of their waits.
   */
  pump(): void {
    for (;;) {
      const e = this.#peek();
      if (e === undefined) return this.#reset();
      const now = this.#clock.now();
      let wait = e.slot.limitWaitMs(now);
      if (wait === 0) {
        this.#head++;
        this.#give(e, now);
        continue;
      }
      const behind = this.#ready(now);
      if (typeof behind === 'number') {
        if (behind < wait) wait = behind;
        return this.#arm(wait === Infinity ? 1000 : wait);
      }
      this.#give(behind, now);
    }
  }

  #give(e: Entry, now: number): void {
    this.#take(e).turn(now);
  }

  /** Takes `e`'s call out of the queue (its entry stays, skipped); returns the call. */
  #take(e: Entry): QueuedWaiter {
    if (e.ticket < 0) this.front--;
    e.waiter.queueTicket = 0;
    this.size--;
    return e.waiter;
  }

  /** Among the calls just behind the head: the first that can leave now, else the soonest wait. */
  #ready(now: number): Entry | number {
    const items = this.#items;
    let soonest = Infinity;
    for (let i = this.#head + 1, seen = 0; i < items.length && seen < LOOKAHEAD; i++) {
      const e = items[i]!;
      if (e.waiter.queueTicket !== e.ticket) continue;
      seen++;
      const w = e.slot.limitWaitMs(now);
      if (w === 0) return e;
      if (w < soonest) soonest = w;
    }
    return soonest;
  }

  /** The first entry whose call still waits here. */
  #peek(): Entry | undefined {
    const items = this.#items;
    while (this.#head < items.length) {
      const e = items[this.#head]!;
      if (e.waiter.queueTicket === e.ticket) {
        // Stryker disable next-line all: compaction only frees memory (entries before #head are never read again), so when it runs changes no turn
        if (this.#head > 1024 && this.#head * 2 > items.length) {
          this.#items = items.slice(this.#head);
          this.#head = 0;
        }
        return e;
      }
      this.#head++;
    }
    return undefined;
  }

  #arm(ms: number): void {
    const due = this.#clock.now() + ms;
    if (this.#timer !== undefined) {
      if (due >= this.#dueAt) return;
      this.#clock.clearTimeout(this.#timer);
    }
    this.#dueAt = due;
    this.#timer = this.#clock.setTimeout(this.#fire, ms);
  }

  #reset(): void {
    this.front = 0;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#dueAt = Infinity;
    this.#items = [];
    this.#head = 0;
  }

  /** Stops the timer (the pool is closing; the calls themselves are failed by the pool). */
  close(): void {
    this.size = 0;
    this.front = 0;
    this.#reset();
  }
}
