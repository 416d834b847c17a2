/**
 * Which requests the fetch adapter may send more than once.
 *
 * A request that failed after it may have reached the server (a timeout, a reset, a 5xx)
 * is replayed on another endpoint only when running it twice is harmless: an idempotent
 * method (GET, HEAD, OPTIONS, PUT, DELETE, TRACE, as undici's RetryAgent), a call marked
 * `idempotent: true`, or a request carrying an idempotency key (the server deduplicates).
 * Any request is still moved on when the failure proves it never left (connection
 * refused, a name that does not resolve, a connect timeout: Node's and Bun's codes, Deno's
 * words) or the server said it did not
 * process it (408, 429).
 */
import type { AttemptContext } from '../call/context.js';
import { isHttpStatusError } from './classify.js';

const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

/** Error codes (on the error or its `cause`, as Node's and Bun's fetch report them) of requests that never reached a server. */
const NEVER_SENT: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
/**
 * Deno's `fetch` gives no code: its cause says the connection could not be made ("client
 * error (Connect): tcp connect error: …", "… dns error: …"; before Deno 2, "error trying to
 * connect"). A request sent and then lost says "client error (SendRequest)" instead.
 */
const NEVER_CONNECTED = /client error \(Connect\)|error trying to connect/;

export interface ReplayOptions {
  /** `'idempotent'`: replay only requests that are safe to repeat; `'always'`: any request (the old behaviour). */
  readonly replay: 'idempotent' | 'always';
  /** The header that makes a request replayable, lower case. */
  readonly header: string;
  /** Generates a key for a non-idempotent request that has none, or `undefined` to never add one. */
  readonly generate: (() => string) | undefined;
}

/** GET, HEAD, OPTIONS, PUT, DELETE, TRACE (any case); no method means GET. */
export function isIdempotentMethod(method: string | undefined): boolean {
  return method === undefined || IDEMPOTENT_METHODS.has(method.toUpperCase());
}

/** Whether a request may be sent again after it may have reached a server; may add an idempotency key to `headers`. */
export function isReplayable(method: string | undefined, headers: Headers, explicit: boolean | undefined, o: ReplayOptions): boolean {
  if (explicit !== undefined) return explicit;
  if (o.replay === 'always' || isIdempotentMethod(method)) return true;
  if (headers.has(o.header)) return true;
  if (o.generate === undefined) return false;
  headers.set(o.header, o.generate());
  return true;
}

/** The default key generator: a random UUID where the runtime has `crypto.randomUUID`. */
export function randomKey(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID === undefined) throw new TypeError('pooled fetch: this runtime has no crypto.randomUUID; pass idempotencyKey a function');
  return c.randomUUID();
}

/** A failure that proves the request never reached a server, or that the server did not process it. */
export function neverProcessed(error: unknown): boolean {
  if (isHttpStatusError(error)) return error.status === 408 || error.status === 429;
  for (let e: unknown = error, depth = 0; typeof e === 'object' && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NEVER_SENT.has(code)) return true;
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && NEVER_CONNECTED.test(message)) return true;
  }
  return false;
}

/**
 * Raised in place of a failure after which a non-replayable request may have reached the
 * server: classified `permanent`, so the call ends there. `cause` is the original failure.
 */
export class NotReplayableError extends Error {
  override readonly name = 'NotReplayableError';
  readonly endpoint: string;

  constructor(method: string, endpoint: string, cause: unknown) {
    super(
      `the ${method} request may have reached endpoint ${JSON.stringify(endpoint)} before it failed, and is not replayed: ${method} is not idempotent (mark the call idempotent: true or send an Idempotency-Key to allow it)`,
      { cause },
    );
    this.endpoint = endpoint;
  }
}

/**
 * One call's guard: after an attempt that may have reached a server (including one the
 * pool timed out), no later attempt sends the request again.
 */
export class ReplayGuard {
  readonly #method: string;
  #reached: { endpoint: string; error: unknown } | undefined;

  constructor(method: string | undefined) {
    this.#method = (method ?? 'GET').toUpperCase();
  }

  /** Called before an attempt sends: throws if an earlier one may have reached a server. Watches this attempt's signal for a timeout. */
  enter(ctx: AttemptContext): void {
    if (this.#reached !== undefined) throw new NotReplayableError(this.#method, this.#reached.endpoint, this.#reached.error);
    const signal = ctx.signal;
    const endpoint = ctx.endpoint;
    // The pool aborts an attempt it timed out and starts the next one at once; the request may be at the server by then.
    signal.addEventListener('abort', () => (this.#reached ??= { endpoint, error: signal.reason }), { once: true });
  }

  /** Turns a failure into `NotReplayableError` unless it proves the request was not processed. */
  failed(endpoint: string, error: unknown): unknown {
    if (neverProcessed(error)) return error;
    this.#reached ??= { endpoint, error };
    return new NotReplayableError(this.#method, endpoint, error);
  }
}
