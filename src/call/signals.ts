/**
 * One abort listener per caller signal, whatever the number of calls sharing it.
 *
 * A service often passes one `AbortSignal` (a request's, a shutdown's) to many calls.
 * Adding a listener per call costs the host's listener list a linear scan per add (100,000
 * calls: tens of seconds) and as many closures. Instead the signal gets one listener, and
 * the calls watching it sit in a `Set` (O(1) to join and to leave); when the last one
 * leaves, the listener is removed.
 */

/** A call watching a signal: told once when it aborts. */
export interface AbortWatcher {
  aborted(): void;
}

class Watchers extends Set<AbortWatcher> {
  readonly signal: AbortSignal;
  constructor(signal: AbortSignal) {
    super();
    this.signal = signal;
  }
  handleEvent(): void {
    registry.delete(this.signal);
    try {
      this.signal.removeEventListener('abort', this);
    } catch {
      // a signal-like object's own failure: its calls are told all the same
    }
    for (const w of [...this]) w.aborted();
    this.clear();
  }
}

const registry = new WeakMap<AbortSignal, Watchers>();

/** `w.aborted()` runs when `signal` aborts, until `unwatchAbort`. */
/** Undefined, or what the signal's `addEventListener` threw (a signal-like object of the user's): then nothing watches. */
export function watchAbort(signal: AbortSignal, w: AbortWatcher): { readonly error: unknown } | undefined {
  let set = registry.get(signal);
  if (set === undefined) {
    set = new Watchers(signal);
    try {
      signal.addEventListener('abort', set);
    } catch (error) {
      return { error };
    }
    registry.set(signal, set);
  }
  set.add(w);
  return undefined;
}

export function unwatchAbort(signal: AbortSignal, w: AbortWatcher): void {
  const set = registry.get(signal);
  if (set === undefined || !set.delete(w) || set.size > 0) return;
  registry.delete(signal);
  try {
    signal.removeEventListener('abort', set);
  } catch {
    // A signal-like object's own failure: the call it watched has ended anyway.
  }
}
