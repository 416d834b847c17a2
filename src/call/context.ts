/**
 * What an operation receives besides its connection: the attempt's signal, the endpoint's
 * name, the attempt number and the call's deadline.
 *
 * The `AbortController` behind `signal` is taken only when the operation reads `signal`:
 * creating and aborting one costs more than the rest of a call, and most attempts end
 * normally. A normal end never aborts it; it hands the controller back for a later
 * attempt, which gets it only if nothing is listening to it any more (signals.ts). If the
 * attempt was already cut short when `signal` is first read, the signal comes back already
 * aborted.
 */
import { acquireSignal, type AttemptSignal } from '../base/signals.js';

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

const NOT_ABORTED: unique symbol = Symbol('not aborted');

export class LazyContext implements AttemptContext {
  readonly endpoint: string;
  readonly attempt: number;
  readonly deadlineAt: number;
  #controller: AttemptSignal | undefined;
  /** The abort reason once aborted; `NOT_ABORTED` until then (one field: heap per attempt). */
  #reason: unknown = NOT_ABORTED;

  constructor(endpoint: string, attempt: number, deadlineAt: number) {
    this.endpoint = endpoint;
    this.attempt = attempt;
    this.deadlineAt = deadlineAt;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = acquireSignal();
      if (this.#reason !== NOT_ABORTED) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /**
   * The attempt ended normally (its operation settled; nothing will abort it): its
   * controller may serve a later attempt. A later read of `signal` gets a fresh one.
   */
  release(): void {
    const c = this.#controller;
    if (c === undefined || this.#reason !== NOT_ABORTED) return;
    this.#controller = undefined;
    c.release();
  }

  /** Aborts the signal if anyone holds it; remembers the reason for anyone who reads it later. */
  abort(reason: unknown): void {
    if (this.#reason !== NOT_ABORTED) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}
