/**
 * What an operation receives besides its connection: the attempt's signal, the endpoint's
 * name, the attempt number and the call's deadline.
 *
 * The `AbortController` behind `signal` is taken only when the operation reads `signal`:
 * creating and aborting one costs more than the rest of a call, and most attempts end
 * normally. A normal end never aborts it; it hands the controller back for a later
 * attempt (reusableSignals), which gets it only if nothing is listening to it any more
 * (base/signals.ts). If the attempt was already cut short when `signal` is first read, the
 * signal comes back already aborted.
 */

/** An attempt's controller, its signal kept in a field; base/signals.ts extends it. */
export class AttemptController {
  readonly controller = new AbortController();
  readonly signal: AbortSignal;

  constructor() {
    this.signal = this.controller.signal;
  }

  abort(reason: unknown): void {
    this.controller.abort(reason);
  }

  /** Its attempt ended normally (see base/signals.ts). */
  release(): void {}
}

/** Where a context's controllers come from when they may be reused (`Features.signals`). */
export interface SignalSource {
  acquire(): AttemptController;
}

export interface AttemptContext {
  /** Aborts when the attempt times out, the deadline passes, the caller aborts or the pool gives up on it. */
  readonly signal: AbortSignal;
  /** The endpoint this attempt goes to. */
  readonly endpoint: string;
  /** 1 for the first attempt of a call (probes are always 1). */
  readonly attempt: number;
  /** When the whole call's deadline passes, in clock milliseconds (`Infinity`: none). */
  readonly deadlineAt: number;
}

export type Operation<C, T> = (conn: C, ctx: AttemptContext) => Promise<T>;

/**
 * @internal Something an attempt's abort reaches instead of a signal: the fetch adapter's
 * handle on its HTTP request (fetch/dispatcher.ts), which closes the request without the
 * cost undici puts on any signal given to `fetch`. See `watchAbort`.
 */
export interface AbortTarget {
  abort(reason: unknown): void;
}

/** An abort that came before anyone read `signal` (most attempts never read it). */
class EarlyAbort {
  readonly reason: unknown;
  constructor(reason: unknown) {
    this.reason = reason;
  }
}

/**
 * The signal half of a context: one field holds nothing, the controller once `signal` is
 * read, or the abort reason when the attempt was cut short before (heap per attempt in
 * flight). An attempt supplies `endpoint`, `attempt` and `deadlineAt` as it likes.
 */
export abstract class SignalContext implements AttemptContext {
  abstract readonly endpoint: string;
  abstract readonly attempt: number;
  abstract readonly deadlineAt: number;
  // Fields of the classes a call is made of are assigned in constructors, never declared
  // with initializers or as `#private`: V8 runs a class's field initializers as a call of
  // their own on every construction, and a call (six classes deep) paid one per class,
  // 40-60 ns per call on Node 20 and 26 (docs/performance.md, "The viem path with `custom` handed in").
  /** Nothing yet, the controller once `signal` is read, the reason of an early abort, or a target set by `watch` (one field: heap per attempt in flight). */
  private declare signalState: AttemptController | EarlyAbort | AbortTarget | undefined;

  constructor() {
    this.signalState = undefined;
  }

  /** The pool's reusable controllers (`undefined`: a new one per read). */
  abstract readonly signalSource: SignalSource | undefined;

  get signal(): AbortSignal {
    return this.signalOf(false);
  }

  /** @internal The signal; `plain`: a plain controller's, never tracked for reuse (see `untrackedSignal`). */
  signalOf(plain: boolean): AbortSignal {
    const state = this.signalState;
    if (state instanceof AttemptController) return state.signal;
    const source = plain ? undefined : this.signalSource;
    const c = source === undefined ? new AttemptController() : source.acquire();
    this.signalState = c;
    if (state instanceof EarlyAbort) c.abort(state.reason);
    // A watched target (see `watch`) still hears the abort, through the signal now.
    else if (state !== undefined) c.signal.addEventListener('abort', () => state.abort(c.signal.reason), { once: true });
    return c.signal;
  }

  /**
   * @internal The attempt's abort goes to `target` (nothing allocated for it): only while
   * nothing else holds the attempt's abort. `false` when the signal was read already or the
   * attempt was cut short before: the caller then uses the signal (already aborted in the
   * second case).
   */
  watch(target: AbortTarget): boolean {
    if (this.signalState !== undefined) return false;
    this.signalState = target;
    return true;
  }

  /**
   * The attempt ended normally (its operation settled; nothing will abort it): its
   * controller may serve a later attempt. A later read of `signal` gets a fresh one.
   */
  release(): void {
    const c = this.signalState;
    if (c === undefined || c instanceof EarlyAbort) return;
    if (!(c instanceof AttemptController)) {
      // A watched target is let go: nothing aborts it after a normal end.
      this.signalState = undefined;
      return;
    }
    if (c.signal.aborted) return;
    this.signalState = undefined;
    c.release();
  }

  /** Aborts the signal if anyone holds it; remembers the reason for anyone who reads it later. */
  abort(reason: unknown): void {
    const state = this.signalState;
    if (state === undefined) this.signalState = new EarlyAbort(reason);
    else if (state instanceof AttemptController) {
      if (!state.signal.aborted) state.abort(reason);
    } else if (!(state instanceof EarlyAbort)) {
      // A watched target hears it once; a signal read later comes back aborted.
      this.signalState = new EarlyAbort(reason);
      state.abort(reason);
    }
  }
}

/**
 * @internal `ctx.signal` for an operation that hands it to `fetch`: undici keeps its abort
 * listener on a signal until the request is garbage-collected, so such a signal never
 * comes back free. A plain controller skips what reuse costs (tracking each signal, then
 * finding it taken) and leaves the pool-wide reuse counters to operations that can reuse.
 */
export function untrackedSignal(ctx: AttemptContext): AbortSignal {
  return ctx instanceof SignalContext ? ctx.signalOf(true) : ctx.signal;
}

/**
 * @internal Sends the attempt's abort to `target` instead of a signal (see `SignalContext.watch`):
 * `false` when that cannot be (a context of another kind, or one whose signal is taken).
 */
export function watchAbort(ctx: AttemptContext, target: AbortTarget): boolean {
  return ctx instanceof SignalContext && ctx.watch(target);
}

/** A context with its own fields (probes and credential refreshes). */
export class LazyContext extends SignalContext {
  readonly endpoint: string;
  readonly attempt: number;
  readonly deadlineAt: number;
  readonly signalSource: SignalSource | undefined;

  constructor(endpoint: string, attempt: number, deadlineAt: number, signals?: SignalSource) {
    super();
    this.endpoint = endpoint;
    this.attempt = attempt;
    this.deadlineAt = deadlineAt;
    this.signalSource = signals;
  }
}
