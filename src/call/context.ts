/**
 * What an operation receives besides its connection: the attempt's signal, the endpoint's
 * name, the attempt number and the call's deadline.
 *
 * The `AbortController` behind `signal` is created only when the operation reads
 * `signal`: creating and aborting one costs more than the rest of a call, and most
 * attempts end normally. A normal end never aborts it. If the attempt was already cut
 * short when `signal` is first read, the signal comes back already aborted.
 */

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

export class LazyContext implements AttemptContext {
  readonly endpoint: string;
  readonly attempt: number;
  readonly deadlineAt: number;
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  constructor(endpoint: string, attempt: number, deadlineAt: number) {
    this.endpoint = endpoint;
    this.attempt = attempt;
    this.deadlineAt = deadlineAt;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts the signal if anyone holds it; remembers the reason for anyone who reads it later. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}
