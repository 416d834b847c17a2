/**
 * Closing a pooled request without an `AbortSignal`, where `fetch` is undici's (Node).
 *
 * Why: undici's `fetch` pays for any signal it is given (its `Request` keeps the signal in a
 * `WeakRef` and a `FinalizationRegistry` and adds an abort listener): 7–14 % of a loopback
 * request on Node 20, 1–1.5 µs and 3 KB on Node 26 (docs/performance.md, "fetch, eighth
 * session"). Yet an attempt that times out must close its HTTP request, or the socket and the
 * server's work stay tied up.
 *
 * How: undici's `fetch` takes an `init.dispatcher` (undici's `Dispatcher`: it calls
 * `dispatch(opts, handler)` for each hop), and when the request gets its connection undici
 * hands the handler a way to abort it: `onConnect(abort)` in the older handler API (the
 * handlers of Node 20's, 22's and 24's `fetch`), `onRequestStart(controller)` with
 * `controller.abort(reason)` in the newer one (Node 26's). Each attempt gives `fetch` a
 * `RequestAborter`: it passes the request on to the dispatcher `fetch` would have used (undici's global one, read at each request so that
 * `setGlobalDispatcher` still counts), wraps the handler to keep that abort, and calls it when
 * the attempt is aborted (its timeout, the deadline, the caller's signal, a hedge that lost).
 * An abort that comes while the request waits for a connection takes effect when it gets one,
 * as a signal's does. `fetch` then rejects, and the socket is closed.
 *
 * When: only with the global `fetch`, and only once that very function has been seen calling
 * an `init.dispatcher` (until then each request carries its signal and a probing aborter:
 * `fetchPlan`), and only for a request whose `init` names no dispatcher of its own. Everywhere
 * else the attempt's signal goes to `fetch` as before: browsers, Deno and Bun (their `fetch`
 * never calls it), a `fetch` option, a global `fetch` replaced by a mock or a wrapper that
 * drops the dispatcher, a user's own `init.dispatcher` (never replaced), and a request whose
 * attempt already handed its signal out. Nothing here imports undici or a `node:` module.
 */

import { untrackedSignal, watchAbort, type AbortTarget, type AttemptContext } from '../call/context.js';

/** undici ≤ 7's global dispatcher, and undici 8's (where `.1` wraps `.2` for the old handler API). */
const GLOBAL_1 = Symbol.for('undici.globalDispatcher.1');
const GLOBAL_2 = Symbol.for('undici.globalDispatcher.2');

/** The part of undici's `Dispatcher` that `fetch` calls. */
interface Dispatcher {
  dispatch(opts: object, handler: object): boolean;
  readonly isMockActive?: boolean;
}

/** The older handler API (Node 20's, 22's and 24's `fetch` hand one of these). */
interface LegacyHandler {
  onConnect(abort: (reason?: unknown) => void, context?: unknown): void;
  onHeaders?(status: number, headers: unknown, resume: () => void, statusText: string): boolean;
  onData?(chunk: unknown): boolean;
  onComplete?(trailers: unknown): void;
  onError(error: unknown): void;
  onUpgrade?(status: number, headers: unknown, socket: unknown): void;
  onResponseStarted?(): void;
  onBodySent?(chunk: unknown): void;
  onRequestSent?(): void;
}

/** The handler of the newer API (undici 7's dispatchers read it; Node 26's `fetch` hands one). */
interface Controller {
  abort(reason: unknown): void;
}
interface ModernHandler {
  onRequestStart(controller: Controller, context: unknown): void;
  onRequestUpgrade?(controller: Controller, status: number, headers: unknown, socket: unknown): void;
  onResponseStart?(controller: Controller, status: number, headers: unknown, statusMessage?: string): void;
  onResponseData?(controller: Controller, chunk: unknown): void;
  onResponseEnd?(controller: Controller, trailers: unknown): void;
  onResponseError(controller: Controller, error: unknown): void;
  onResponseStarted?(): void;
  onBodySent?(chunk: unknown): void;
  onRequestSent?(): void;
}

/** The global `fetch` seen calling an `init.dispatcher`, and one seen answering without calling it. */
let honours: unknown;
let ignores: unknown;

/**
 * How a request to the global `fetch` `f` can be aborted: `'dispatcher'` (a `RequestAborter`
 * alone), `'probe'` (the signal, plus a probing aborter that learns whether `f` calls it), or
 * `'signal'`.
 */
export function fetchPlan(f: unknown): 'dispatcher' | 'probe' | 'signal' {
  // Not a function first: `honours` starts (and, after a handler of an unknown shape, goes back
  // to) `undefined`, which a missing global `fetch` equals.
  if (typeof f !== 'function' || f === ignores) return 'signal';
  return f === honours ? 'dispatcher' : 'probe';
}

/** How one attempt's request is closed: a signal, a dispatcher, or both (probing). */
export interface AbortRoute {
  readonly signal: AbortSignal | undefined;
  /** Call its `answered()` once `fetch` answered: a probing aborter learns from it (a no-op otherwise). */
  readonly dispatcher: RequestAborter | undefined;
}

/**
 * How an attempt's abort reaches its request, for the fetch and ethers adapters: to the
 * global `fetch` once seen calling an `init.dispatcher` (Node's), through a dispatcher alone
 * (the attempt's abort goes to it, or to what `target` wraps it in); to any other, through
 * the attempt's signal, with a probing dispatcher while that `fetch` is unknown. `own`: the
 * request goes to a `fetch` handed in, or names a dispatcher of its own (the signal only).
 */
export function abortRoute(ctx: AttemptContext, own: boolean, target?: (aborter: RequestAborter) => AbortTarget): AbortRoute {
  const plan = own ? 'signal' : fetchPlan(globalThis.fetch);
  if (plan === 'dispatcher') {
    const aborter = new RequestAborter(undefined);
    if (watchAbort(ctx, target === undefined ? aborter : target(aborter))) return { signal: undefined, dispatcher: aborter };
  }
  // A plain controller's signal: undici keeps its listener until the request is collected.
  return { signal: untrackedSignal(ctx), dispatcher: plan === 'probe' ? new RequestAborter(globalThis.fetch) : undefined };
}

/** Whether `init` names a dispatcher of its own (never replaced). */
export function hasOwnDispatcher(init: RequestInit): boolean {
  return (init as { readonly dispatcher?: unknown }).dispatcher != null;
}

const NOT_ABORTED: unique symbol = Symbol('notAborted');

/** A handler of either API (a request's handler has one set of methods or the other; Node 24's adds `onRequestUpgrade` to the older set). */
type Handler = Partial<LegacyHandler> & Partial<ModernHandler>;

/** Makes a relay pass a handler's callbacks on, and its connection's abort to its aborter (set in `LegacyRelay`). */
// eslint-disable-next-line prefer-const
let relayFor: (relay: LegacyRelay, owner: RequestAborter, h: Handler) => LegacyRelay;
/** The handler a relay passes on to (set in `LegacyRelay`). */
// eslint-disable-next-line prefer-const
let handlerOf: (relay: LegacyRelay) => Handler;
/** A relay's hop has its connection, whose abort is `cut` (set in `LegacyRelay`). */
// eslint-disable-next-line prefer-const
let hopConnected: (relay: LegacyRelay, cut: ((reason: unknown) => void) | Controller) => void;
/** A relay's hop ended (set in `LegacyRelay`). */
// eslint-disable-next-line prefer-const
let hopEnded: (relay: LegacyRelay) => void;

/**
 * One hop of a request on its way to undici's global dispatcher: forwards every callback of
 * undici 6's handler API to the handler `fetch` gave, and hands the abort its connection
 * gives (`onConnect(abort)`) to the attempt's `RequestAborter`. It shows that API alone:
 * undici 7 (Node 24) gives `fetch`'s handler of that API to a dispatcher that calls a handler
 * by the newer API whenever it has `onRequestStart`, so a relay showing both APIs there got
 * `onResponseError` and the like, which `fetch`'s handler does not have (a `TypeError`
 * thrown in undici, the request never settled; seen running the suite on Node 24).
 */
class LegacyRelay implements LegacyHandler {
  #owner: RequestAborter | undefined = undefined;
  #h: Handler | undefined = undefined;
  /** This hop's abort, once it has a connection. */
  #hopCut: ((reason: unknown) => void) | Controller | undefined = undefined;

  static {
    // Not methods: a property name of a handler object is one more name undici could read.
    relayFor = (relay, owner, h) => {
      relay.#owner = owner;
      relay.#h = h;
      return relay;
    };
    handlerOf = (relay) => relay.#h!;
    hopConnected = (relay, cut) => {
      relay.#hopCut = cut;
      relay.#owner!.connected(cut);
    };
    hopEnded = (relay) => relay.#owner!.ended(relay.#hopCut);
  }

  onConnect(abort: (reason?: unknown) => void, context?: unknown): void {
    this.#h!.onConnect!(abort, context);
    hopConnected(this, abort);
  }
  onHeaders(status: number, headers: unknown, resume: () => void, statusText: string): boolean {
    return this.#h!.onHeaders!(status, headers, resume, statusText);
  }
  onData(chunk: unknown): boolean {
    return this.#h!.onData!(chunk);
  }
  onComplete(trailers: unknown): void {
    hopEnded(this);
    this.#h!.onComplete!(trailers);
  }
  onError(error: unknown): void {
    hopEnded(this);
    this.#h!.onError!(error);
  }
  onUpgrade(status: number, headers: unknown, socket: unknown): void {
    hopEnded(this);
    this.#h!.onUpgrade!(status, headers, socket);
  }
  onResponseStarted(): void {
    this.#h!.onResponseStarted?.();
  }
  onBodySent(chunk: unknown): void {
    this.#h!.onBodySent?.(chunk);
  }
  onRequestSent(): void {
    this.#h!.onRequestSent?.();
  }
}

/**
 * A relay of either API (undici 6's and undici 7+'s, see above), for a handler of the newer
 * one, or where undici reads only the older (undici 6: Node 20, 22). The aborter is its
 * request's first relay itself (one object per request); a later hop of the same request (a
 * redirect), or a hop that must show one API alone, gets a relay of its own.
 */
class Relay extends LegacyRelay implements ModernHandler {
  onRequestStart(controller: Controller, context: unknown): void {
    handlerOf(this).onRequestStart!(controller, context);
    hopConnected(this, controller);
  }
  onResponseStart(controller: Controller, status: number, headers: unknown, statusMessage?: string): void {
    handlerOf(this).onResponseStart!(controller, status, headers, statusMessage);
  }
  onResponseData(controller: Controller, chunk: unknown): void {
    handlerOf(this).onResponseData!(controller, chunk);
  }
  onResponseEnd(controller: Controller, trailers: unknown): void {
    hopEnded(this);
    handlerOf(this).onResponseEnd!(controller, trailers);
  }
  onResponseError(controller: Controller, error: unknown): void {
    hopEnded(this);
    handlerOf(this).onResponseError!(controller, error);
  }
  onRequestUpgrade(controller: Controller, status: number, headers: unknown, socket: unknown): void {
    hopEnded(this);
    handlerOf(this).onRequestUpgrade!(controller, status, headers, socket);
  }
}

/**
 * An attempt's dispatcher (see the module comment): passes each request on to undici's
 * global dispatcher and aborts it when the attempt is aborted. It relays its request's first
 * hop itself (see `Relay`).
 */
export class RequestAborter extends Relay {
  /** The abort of the request on its connection: undici 6's function, or undici 7+'s controller. */
  #cut: ((reason: unknown) => void) | Controller | undefined = undefined;
  #reason: unknown = NOT_ABORTED;
  /** Probing: the global `fetch` this request went to (see `fetchPlan`); `undefined` once it called `dispatch`, or when not probing. */
  #probing: unknown;
  /** Whether this aborter relays a hop already (a later hop gets a `Relay` of its own). */
  #relaying = false;

  constructor(probing?: unknown) {
    super();
    this.#probing = probing;
  }

  /** Read by undici's `fetch` (Node 22+) before `dispatch`: a `MockAgent` set as global dispatcher is active. */
  get isMockActive(): boolean {
    return globalDispatcher(true)?.isMockActive === true;
  }

  dispatch(opts: object, handler: object): boolean {
    if (this.#probing !== undefined) {
      honours = this.#probing;
      this.#probing = undefined;
    }
    const modern = typeof (handler as Partial<ModernHandler>).onRequestStart === 'function';
    const target = globalDispatcher(modern);
    if (target === undefined) throw new TypeError('pooled fetch: fetch called init.dispatcher, but undici has no global dispatcher');
    if (!modern && typeof (handler as Partial<LegacyHandler>).onConnect !== 'function') {
      // A handler of a shape this module does not know (a later undici): the request goes on
      // untouched (this one attempt's abort cannot close it), and later requests to this
      // `fetch` carry the attempt's signal again.
      ignores = honours;
      honours = undefined;
      return target.dispatch(opts, handler);
    }
    // Where undici reads the newer API too (a global dispatcher for it: undici 7+), a handler
    // of the older one is relayed by a relay that shows that one alone (see `LegacyRelay`).
    const alone = !modern && (globalThis as unknown as Record<symbol, unknown>)[GLOBAL_2] !== undefined;
    const relay = alone ? new LegacyRelay() : this.#relaying ? new Relay() : this;
    if (!alone) this.#relaying = true;
    return target.dispatch(opts, relayFor(relay, this, handler as Handler));
  }

  /** The attempt was aborted: the request closes now, or as soon as it has a connection. */
  abort(reason: unknown): void {
    if (this.#reason !== NOT_ABORTED) return;
    this.#reason = reason;
    const cut = this.#cut;
    this.#cut = undefined;
    if (cut !== undefined) abortWith(cut, reason);
  }

  /** Probing: `fetch` answered. Had it not called `dispatch`, this `fetch` ignores `init.dispatcher`. */
  answered(): void {
    if (this.#probing !== undefined) ignores = this.#probing;
  }

  /** @internal A relay's request has its connection. */
  connected(cut: ((reason: unknown) => void) | Controller): void {
    if (this.#reason === NOT_ABORTED) this.#cut = cut;
    else abortWith(cut, this.#reason);
  }

  /** @internal A relay's request ended: nothing left to abort (let the handler go). */
  ended(cut: ((reason: unknown) => void) | Controller | undefined): void {
    if (this.#cut === cut) this.#cut = undefined;
  }
}

/** The dispatcher `fetch` uses when given none: undici 8's own for its handler API, else the one undici ≤ 7 reads. */
function globalDispatcher(modern: boolean): Dispatcher | undefined {
  const g = globalThis as unknown as Record<symbol, Dispatcher | undefined>;
  return (modern ? g[GLOBAL_2] : undefined) ?? g[GLOBAL_1];
}

function abortWith(cut: ((reason: unknown) => void) | Controller, reason: unknown): void {
  if (typeof cut === 'function') cut(reason);
  else cut.abort(reason);
}
