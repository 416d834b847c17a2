/**
 * Coalescing: identical reads in flight at the same time share one upstream request.
 *
 * `run(key, signal, start)` starts `start` for the first caller of a key and lets every
 * caller of the same key that arrives before it settles wait on the same promise; the
 * entry is dropped as soon as it settles, so a later caller gets a fresh answer (this is
 * not a cache). Each caller keeps its own `signal`: an aborted caller leaves with
 * `ABORTED` while the others go on waiting, and the shared request is aborted only when
 * every caller of it has left. What the key covers (method, params, pin, quorum, deadline)
 * is the adapter's choice, made with `requestKey`: callers of one key should be able to wait
 * as long as the request they share.
 */
import { PoolError } from '../base/errors.js';
import { stableJson } from './redact.js';

interface Entry {
  /** The shared request; `undefined` while its `start` runs. */
  promise: Promise<unknown> | undefined;
  /** For callers that joined while `start` ran: settles as the shared request does. */
  early: Promise<unknown> | undefined;
  settle: ((p: Promise<unknown>) => void) | undefined;
  /**
   * Aborts the shared request when its last caller leaves; none when the first caller has no
   * signal: that caller never leaves, so neither can the last (and on Node 20 a controller whose
   * signal is read costs about 5 µs, four times a whole uncoalesced request).
   */
  readonly controller: AbortController | undefined;
  /** Callers still waiting on it. */
  waiting: number;
  /** When it started, on the caller's clock; read only when joins are bounded. */
  readonly startedAt: number;
}

export interface CoalesceStats {
  /** Requests actually started. */
  readonly started: number;
  /** Callers served by a request another caller started. */
  readonly joined: number;
  /** Shared requests in flight now. */
  readonly inFlight: number;
}

export class Coalescer {
  readonly #entries = new Map<string, Entry>();
  #started = 0;
  #joined = 0;

  /**
   * `joinWithin`: when given, a caller joins only a request started less than `maxAgeMs` ago;
   * past it, the caller starts a request of its own (which later callers then join). For
   * requests that bound nothing (no deadline, no attempt timeout): one that never settled held
   * every later caller of its key for good, though a new request might have been answered.
   */
  run<T>(key: string, signal: AbortSignal | undefined, start: (signal: AbortSignal | undefined) => Promise<T>, joinWithin?: { readonly maxAgeMs: number; readonly now: () => number }): Promise<T> {
    if (signal?.aborted === true) return Promise.reject(aborted(signal.reason));
    let entry = this.#entries.get(key);
    const now = joinWithin === undefined ? 0 : joinWithin.now();
    if (entry !== undefined && joinWithin !== undefined && now - entry.startedAt >= joinWithin.maxAgeMs) entry = undefined;
    if (entry === undefined) {
      // In the map with its first caller before `start` runs: a caller of the same key that
      // `start` reaches (a listener of the pool's events starting a read) joins it.
      const e: Entry = { promise: undefined, early: undefined, settle: undefined, controller: signal === undefined ? undefined : new AbortController(), waiting: 1, startedAt: now };
      entry = e;
      this.#entries.set(key, e);
      this.#started++;
      let promise: Promise<unknown>;
      try {
        promise = start(e.controller?.signal);
      } catch (error) {
        promise = Promise.reject(error);
      }
      // Registered first, so the entry is gone before any caller's continuation runs.
      const drop = () => {
        if (this.#entries.get(key) === e) this.#entries.delete(key);
      };
      promise.then(drop, drop);
      e.promise = promise;
      e.settle?.(promise);
    } else {
      this.#joined++;
      entry.waiting++;
    }
    const e = entry;
    const shared = e.promise ?? (e.early ??= new Promise((resolve) => (e.settle = resolve)));
    if (signal === undefined) return shared as Promise<T>;
    return new Promise<T>((resolve, reject) => {
      const done = () => signal.removeEventListener('abort', onAbort);
      const onAbort = () => {
        done();
        e.waiting--;
        reject(aborted(signal.reason));
        if (e.waiting === 0) {
          if (this.#entries.get(key) === e) this.#entries.delete(key);
          e.controller?.abort(signal.reason);
        }
      };
      // A caller that aborted while `start` ran (inside a listener of the pool's events) leaves now.
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      shared.then(
        (v) => {
          done();
          resolve(v as T);
        },
        (err: unknown) => {
          done();
          reject(err);
        },
      );
    });
  }

  stats(): CoalesceStats {
    return { started: this.#started, joined: this.#joined, inFlight: this.#entries.size };
  }
}

/** The key of a read: method, params (as JSON) and whatever else routes it differently. */
export function requestKey(method: string, params: unknown, ...routing: readonly (string | number | undefined)[]): string {
  return `${method}\u0000${stableJson(params)}\u0000${routing.map((r) => (r === undefined ? '' : String(r))).join('\u0000')}`;
}

function aborted(reason: unknown): PoolError {
  return new PoolError('ABORTED', 'the call was aborted', reason === undefined ? {} : { cause: reason });
}
