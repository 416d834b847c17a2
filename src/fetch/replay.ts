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
import { isHttpStatusError } from './classify.js';
import { RequestRefusedError } from './refused.js';

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

/**
 * Whether `headers` (a `RequestInit`'s) names `name` (lower case), read without building a
 * `Headers` (undici's costs a microsecond or more): a plain object's keys and an array's
 * pairs are compared as `Headers` would (case-insensitive).
 * `undefined` when it cannot tell (another kind of value: a `Headers`, a `Map`, something
 * invalid), for the caller to build a `Headers` after all.
 */
export function namesHeader(headers: unknown, name: string): boolean | undefined {
  if (headers === undefined || headers === null) return false;
  if (Array.isArray(headers)) {
    for (const pair of headers as unknown[]) {
      if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string') return undefined;
      if (sameName(pair[0], name)) return true;
    }
    return false;
  }
  if (!isRecord(headers)) return undefined;
  for (const key in headers) if (sameName(key, name)) return true;
  return false;
}

/** The characters of an HTTP token (a header name), by code: 1 where allowed. */
const TOKEN = /* @__PURE__ */ (() => {
  const t = new Uint8Array(128);
  for (const c of "!#$%&'*+-.^_`|~") t[c.charCodeAt(0)] = 1;
  for (let c = 48; c < 58; c++) t[c] = 1;
  for (let c = 65; c < 91; c++) t[c] = t[c + 32] = 1;
  return t;
})();
/** What `fetch` refuses in a header value: NUL, CR, LF, and anything beyond one byte. */
const BAD_VALUE = /[\0\r\n]|[^\0-\xff]/;
/** The last plain headers object found valid: a caller that sends the same one every time pays once. */
let lastValid: object | undefined;

/**
 * Throws the `TypeError` `fetch` would for a header it refuses, when `headers` is a plain
 * object or an array of pairs (a `Headers` checked its own when it was made; anything else
 * `fetch` checks). Checked before the call: `fetch` throws it inside an attempt, which
 * reads as a network failure (a `TypeError`), so the request would go to every endpoint.
 */
export function checkHeaders(headers: unknown): void {
  if (headers === undefined || headers === null || typeof headers !== 'object' || headers === lastValid) return;
  if (Array.isArray(headers)) {
    for (const pair of headers as unknown[]) if (Array.isArray(pair) && pair.length === 2) checkHeader(pair[0], pair[1]);
    return;
  }
  if (!isRecord(headers)) return;
  for (const key in headers) checkHeader(key, headers[key]);
  lastValid = headers;
}

function checkHeader(name: unknown, value: unknown): void {
  const n = String(name);
  let ok = n.length > 0;
  for (let i = 0; ok && i < n.length; i++) {
    const c = n.charCodeAt(i);
    ok = c < 128 && TOKEN[c] === 1;
  }
  if (!ok) throw new TypeError(`pooled fetch: ${JSON.stringify(n)} is not a valid header name`);
  if (BAD_VALUE.test(String(value))) throw new TypeError(`pooled fetch: the value of header ${JSON.stringify(n)} is not valid (no NUL, CR or LF, one byte per character)`);
}

/** Headers given as a plain object (or one without a prototype), whose own keys are the names. */
function isRecord(headers: unknown): headers is Record<string, unknown> {
  if (typeof headers !== 'object' || headers === null) return false;
  const proto: unknown = Object.getPrototypeOf(headers);
  return proto === Object.prototype || proto === null;
}

function sameName(key: string, name: string): boolean {
  return key.length === name.length && key.toLowerCase() === name;
}

/**
 * `headers` with `authorization: value` in place of any authorization header, in any case. A
 * plain object or pairs stay plain: a `Headers` costs 1-2 µs on Node 20. A `Headers` (or
 * anything else `fetch` takes) is copied into one.
 */
export function withAuthorization(headers: HeadersInit | undefined, value: string): HeadersInit {
  if (headers === undefined || headers === null) return { authorization: value };
  if (Array.isArray(headers)) {
    const out: [string, string][] = [];
    for (const pair of headers as unknown[]) {
      if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string') return inHeaders(headers, value);
      if (!sameName(pair[0], 'authorization')) out.push(pair as [string, string]);
    }
    out.push(['authorization', value]);
    return out;
  }
  if (!isRecord(headers)) return inHeaders(headers, value);
  const out: Record<string, string> = { authorization: value };
  for (const key in headers) if (!sameName(key, 'authorization')) out[key] = headers[key] as string;
  return out;
}

function inHeaders(headers: HeadersInit, value: string): Headers {
  const out = new Headers(headers);
  out.set('authorization', value);
  return out;
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
  if (error instanceof RequestRefusedError) return true; // fetch refused it: nothing was sent
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

  /** Called before an attempt sends: throws if an earlier one may have reached a server. */
  enter(): void {
    if (this.#reached !== undefined) throw new NotReplayableError(this.#method, this.#reached.endpoint, this.#reached.error);
  }

  /**
   * The pool aborted an attempt (it timed out, the deadline came, the caller gave up) and
   * may start the next one at once: the request may be at the server by then. The attempt's
   * abort comes here through its request's aborter (`GuardedAbort`), or through its signal
   * where the request has one (`watch`).
   */
  aborted(endpoint: string, reason: unknown): void {
    this.#reached ??= { endpoint, error: reason };
  }

  /** Watches an attempt's signal for its abort (see `aborted`). */
  watch(signal: AbortSignal, endpoint: string): void {
    signal.addEventListener('abort', () => this.aborted(endpoint, signal.reason), { once: true });
  }

  /** Turns a failure into `NotReplayableError` unless it proves the request was not processed. */
  failed(endpoint: string, error: unknown): unknown {
    if (neverProcessed(error)) return error;
    this.#reached ??= { endpoint, error };
    return new NotReplayableError(this.#method, endpoint, error);
  }
}

/**
 * Whether `fetch` can send this body only once: a `ReadableStream`, or any other async iterable
 * (an async generator, a Node `Readable` such as `fs.createReadStream`), which it drains as it
 * sends. A string, `Blob`, `FormData`, `URLSearchParams`, `ArrayBuffer` or view is sent again as
 * it is. (Only a `ReadableStream` was caught at first: an async iterable
 * sent to a second endpoint after a 429, a 503 or as a hedge went out empty, and its answer
 * was the call's.)
 */
export function isOneShotBody(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false; // none, or a string: the common requests
  return (typeof ReadableStream !== 'undefined' && body instanceof ReadableStream) || Symbol.asyncIterator in body;
}

/** The replay settings, checked once (`checkAdapterOptions` has checked their types). */
export function resolveReplay(replay: unknown, key: unknown): ReplayOptions {
  return {
    replay: (replay ?? 'idempotent') as ReplayOptions['replay'],
    header: typeof key === 'string' ? key.toLowerCase() : 'idempotency-key',
    generate: key === true ? randomKey : typeof key === 'function' ? (key as () => string) : undefined,
  };
}

/**
 * The replay decision for one request: a guard when it must not be sent again once it may
 * have reached a server, and its headers when a generated idempotency key was added.
 */
export function replayGuard(init: RequestInit, explicit: boolean | undefined, o: ReplayOptions): { guard: ReplayGuard | undefined; headers: Headers | undefined } | undefined {
  // The common cases (a GET, replay: 'always', a request marked idempotent or not, a key
  // already in the headers) build no Headers.
  if (explicit !== undefined) return explicit ? undefined : { guard: new ReplayGuard(init.method), headers: undefined };
  if (o.replay === 'always' || isIdempotentMethod(init.method)) return undefined;
  const named = namesHeader(init.headers, o.header);
  if (named === true) return undefined;
  if (named === false && o.generate === undefined) return { guard: new ReplayGuard(init.method), headers: undefined };
  const headers = new Headers(init.headers);
  const keyed = headers.has(o.header);
  if (!isReplayable(init.method, headers, explicit, o)) return { guard: new ReplayGuard(init.method), headers: undefined };
  return !keyed && headers.has(o.header) ? { guard: undefined, headers } : undefined;
}
