/**
 * Attempt signals, reused when nothing can hear them fire.
 *
 * On Node 20 creating an `AbortController` and reading its signal costs ~5 µs, and each
 * `addEventListener`/`removeEventListener` pair on it ~2–4 µs (viem adds and removes one
 * per request): more than the rest of a call. Attempts that read `ctx.signal` mostly end
 * normally, so a controller whose attempt ended without aborting is kept and handed to a
 * later attempt, and listeners are kept in a plain list until an abort needs them.
 *
 * The contract that makes reuse safe: a controller is handed out again only if, at that
 * moment, its signal
 *   - never aborted (an aborted one is thrown away),
 *   - has no listener left that was added through `signal.addEventListener` (each add is
 *     matched by a remove of the same type, listener and capture, as `EventTarget` counts),
 *   - has no listener registered natively behind our back (`onabort`, a call through
 *     `EventTarget.prototype` or another event target's `{ signal }` option),
 *   - is not the source of an `AbortSignal.any(...)` (its dependants would abort too),
 *   - had no listener added while it sat unused (someone still holds it after its attempt).
 * So no listener registered by an earlier attempt's operation can fire when a later attempt
 * aborts. What this cannot see is a listener added *after* the controller went to another
 * attempt by code that kept the signal past its operation's end: the signal belongs to the
 * attempt, and is meant to be used while the operation runs (docs/calls.md).
 *
 * The native checks read Node's internal symbols (`kEvents`, `kDependantSignals`), found
 * once by their descriptions. Where they are not visible (browsers, Deno, Bun), nothing is
 * reused: each attempt gets a plain controller, as before, and signals are cheap there. Node
 * 24 is one of those: its `AbortSignal.any` records a dependant on its sources only once the
 * dependant has a listener, yet the dependant's `aborted` follows them from the start, so a
 * source without the record may still have a dependant that would read as aborted.
 */

import { AttemptController } from '../call/context.js';

type Options = boolean | AddEventListenerOptions | undefined;
type Listener = EventListenerOrEventListenerObject | null;

interface Entry {
  readonly type: string;
  readonly listener: EventListenerOrEventListenerObject;
  readonly capture: boolean;
  readonly options: Options;
}

/** 0: not probed yet; 1: reuse; 2: this runtime hides what reuse must check. */
let mode = 0;
let eventsKey: symbol | undefined;
let dependantsKey: symbol | undefined;
const HOLDER = Symbol('endpointPoolSignal');
type Held = AbortSignal & { [HOLDER]?: AttemptSignal };
/** Controllers whose attempts ended normally; checked when taken out (listeners may go away meanwhile). */
const free: AttemptSignal[] = [];
const MAX_FREE = 256;

const nativeAdd = (t: EventTarget, type: string, l: Listener, o: Options): void => EventTarget.prototype.addEventListener.call(t, type, l, o);
const nativeRemove = (t: EventTarget, type: string, l: Listener, o: Options | EventListenerOptions): void =>
  EventTarget.prototype.removeEventListener.call(t, type, l, o);

function captureOf(o: Options | EventListenerOptions): boolean {
  return typeof o === 'boolean' ? o : o !== undefined && o !== null && o.capture === true;
}

/** A controller with its listener list (see the module comment). */
export class AttemptSignal extends AttemptController {
  #entries: Entry[] | undefined;
  #leased = true;
  #tainted = false;

  constructor() {
    super();
    const s = this.signal as Held;
    s[HOLDER] = this;
    s.addEventListener = trackedAdd;
    s.removeEventListener = trackedRemove;
  }

  add(type: string, listener: EventListenerOrEventListenerObject, options: Options): void {
    if (!this.#leased) this.#tainted = true;
    const capture = captureOf(options);
    const list = (this.#entries ??= []);
    for (const e of list) if (e.type === type && e.listener === listener && e.capture === capture) return;
    list.push({ type, listener, capture, options });
  }

  remove(type: string, listener: EventListenerOrEventListenerObject, capture: boolean): void {
    const list = this.#entries;
    if (list === undefined) return;
    for (let i = 0; i < list.length; i++) {
      const e = list[i]!;
      if (e.type === type && e.listener === listener && e.capture === capture) {
        list.splice(i, 1);
        return;
      }
    }
  }

  /** Registers the kept listeners natively, in order, then aborts: `EventTarget` does the dispatch. */
  override abort(reason: unknown): void {
    const list = this.#entries;
    this.#entries = undefined;
    if (list !== undefined) for (const e of list) nativeAdd(this.signal, e.type, e.listener, e.options);
    this.controller.abort(reason);
  }

  /** The attempt ended without aborting: keep the controller for a later attempt if it may be reused. */
  override release(): void {
    this.#leased = false;
    if (free.length < MAX_FREE) free.push(this);
  }

  /** Whether nothing can hear this signal fire (checked when it is taken out of the free list). */
  reusable(): boolean {
    if (this.#tainted || this.signal.aborted || (this.#entries !== undefined && this.#entries.length > 0)) return false;
    const s = this.signal as unknown as Record<symbol, { size: number } | undefined>;
    if ((s[eventsKey!]?.size ?? 0) !== 0) return false;
    return dependantsKey === undefined || (s[dependantsKey]?.size ?? 0) === 0;
  }

  lease(): this {
    this.#leased = true;
    return this;
  }
}

function trackedAdd(this: AbortSignal, type: string, listener: Listener, options?: Options): void {
  const h = (this as Held | undefined)?.[HOLDER];
  // Not ours (a borrowed method), no listener, or already aborted: the native behaviour.
  if (h === undefined || listener === null || listener === undefined || this.aborted) return nativeAdd(this, type, listener, options);
  h.add(String(type), listener, options);
}

function trackedRemove(this: AbortSignal, type: string, listener: Listener, options?: Options | EventListenerOptions): void {
  const h = (this as Held | undefined)?.[HOLDER];
  if (h === undefined || listener === null || listener === undefined) return nativeRemove(this, type, listener, options);
  h.remove(String(type), listener, captureOf(options));
  if (this.aborted) nativeRemove(this, type, listener, options);
}

/** Looks once for what reuse must check; turns reuse off where it cannot be checked. */
function probe(): void {
  mode = 2;
  if (typeof AbortController !== 'function' || typeof EventTarget !== 'function') return;
  const s = new AbortController().signal;
  const base = Object.getOwnPropertySymbols(s);
  eventsKey = base.find((k) => k.description === 'kEvents');
  if (eventsKey === undefined) return;
  const any = (AbortSignal as { any?: (signals: AbortSignal[]) => AbortSignal }).any;
  if (typeof any === 'function') {
    any.call(AbortSignal, [s]);
    dependantsKey = Object.getOwnPropertySymbols(s).find((k) => !base.includes(k));
    if (dependantsKey === undefined) return;
  }
  mode = 1;
}

/**
 * Tracking costs microseconds per controller on Node 20 (three properties added to the
 * signal), and is wasted when the
 * signals are never free again: `fetch` (undici) keeps its abort listener on the signal
 * until its request is garbage-collected. After `MISS_LIMIT` controllers in a row came back
 * unusable, the next `PLAIN_RUN` are plain (untracked) ones; then tracking is tried again.
 */
const MISS_LIMIT = 16;
const PLAIN_RUN = 256;
let misses = 0;
let plainLeft = 0;

/** A controller for an attempt that reads `ctx.signal`: a reusable one if any, else a new one. */
export function acquireSignal(): AttemptController {
  if (mode === 0) probe();
  if (plainLeft > 0) {
    plainLeft--;
    return new AttemptController();
  }
  while (free.length > 0) {
    const h = free.pop()!;
    if (h.reusable()) {
      misses = 0;
      return h.lease();
    }
    if (++misses === MISS_LIMIT) {
      misses = 0;
      plainLeft = PLAIN_RUN;
    }
  }
  return mode === 1 ? new AttemptSignal() : new AttemptController();
}

/** @internal for tests: whether this runtime lets signals be reused (see `probe`). */
export function reusesSignals(): boolean {
  if (mode === 0) probe();
  return mode === 1;
}

/** @internal for tests: how many controllers wait for reuse. */
export function freeSignals(): number {
  return free.length;
}
