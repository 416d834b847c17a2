/**
 * One JSON-RPC request over HTTP with `fetch`, for the ethers adapter. No retries, no
 * batching: the pool decides what happens next. What can go wrong is thrown as:
 *
 * - `RpcAnswerError`: the body carried a JSON-RPC `error` (whatever the HTTP status);
 * - `HttpStatusError` (from `endpoint-pool/fetch`): a non-2xx status without one;
 * - `BadResponseError`: a 2xx whose body is not a JSON-RPC response, or is the answer to
 *   another request (its `id` is not the request's: a proxy that swapped two answers);
 * - whatever `fetch` throws (a refused connection, an abort).
 *
 * Messages carry the endpoint name, never the URL or the request body.
 */
import { HttpStatusError } from '../fetch/classify.js';
import type { RequestAborter } from '../fetch/dispatcher.js';
import { waitAskedMs } from '../fetch/retry-after.js';
import { redactUrls } from '../rpc/redact.js';

/** What each endpoint of the ethers provider connects to. */
export interface RpcConnection {
  readonly url: string;
  /** Extra request headers (an API key header, for one). Never logged. */
  readonly headers?: Readonly<Record<string, string>>;
}

export type FetchFn = (url: string, init: { method: string; headers: Record<string, string>; body: string; signal?: AbortSignal }) => Promise<{
  readonly status: number;
  readonly ok: boolean;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
}>;

/** A node's JSON-RPC error answer. */
export class RpcAnswerError extends Error {
  override readonly name = 'RpcAnswerError' as const;
  /** The JSON-RPC error code. */
  readonly code: number | undefined;
  /** The JSON-RPC error's `data` (revert data, for one). */
  readonly data: unknown;
  /** The HTTP status it came with. */
  readonly status: number;
  readonly headers: { get(name: string): string | null } | undefined;
  readonly endpoint: string;
  /** The error member as the node sent it, for ethers' own error mapping. */
  readonly rpcError: { code: number; message: string; data?: unknown };

  constructor(error: Record<string, unknown>, status: number, headers: RpcAnswerError['headers'], endpoint: string) {
    const message = typeof error['message'] === 'string' ? (redactUrls(error['message']) as string) : 'error';
    super(message);
    this.code = typeof error['code'] === 'number' ? error['code'] : undefined;
    this.data = error['data'];
    this.status = status;
    this.headers = headers;
    this.endpoint = endpoint;
    this.rpcError = { code: this.code ?? -32603, message, ...(this.data === undefined ? {} : { data: this.data }) };
  }
}

/** A 2xx answer that is not a JSON-RPC response (an HTML error page, a proxy's banner). */
export class BadResponseError extends Error {
  override readonly name = 'BadResponseError' as const;
  readonly endpoint: string;
  constructor(endpoint: string, status: number, otherId = false) {
    super(`endpoint ${JSON.stringify(endpoint)} answered HTTP ${status} with ${otherId ? "the answer to another request (its id is not the request's)" : 'something that is not a JSON-RPC response'}`);
    this.endpoint = endpoint;
  }
}

export interface PostOptions {
  readonly fetch: FetchFn;
  readonly signal: AbortSignal | undefined;
  /** Where the global `fetch` is undici's: closes the request on the attempt's abort instead of a signal (`abortRoute`, fetch/dispatcher.ts). */
  readonly dispatcher?: RequestAborter | undefined;
  readonly endpoint: string;
  readonly nowMs: number;
  readonly maxRetryAfterMs: number;
}

/**
 * Posts one JSON-RPC request (`body`, whose `id` is `id`) and returns its `result`. An answer
 * of another `id` is refused (`BadResponseError`), as ethers' own provider refuses it; from
 * an array (a batch's answer), the member of `id` is taken. An error answer whose `id` is
 * `null` or missing (the node could not read the request, as JSON-RPC allows) is the node's.
 */
export async function postJsonRpc(conn: RpcConnection, id: number, body: string, o: PostOptions): Promise<unknown> {
  const init: Parameters<FetchFn>[1] & { dispatcher?: RequestAborter } = { method: 'POST', headers: { 'content-type': 'application/json', ...conn.headers }, body };
  if (o.signal !== undefined) init.signal = o.signal;
  if (o.dispatcher !== undefined) init.dispatcher = o.dispatcher;
  // Called as a plain function: a runtime's own `fetch` (workerd's, a browser's) refuses a
  // call whose `this` is another object ("Illegal invocation").
  const fetchFn = o.fetch;
  const res = await fetchFn(conn.url, init);
  // Probing (`abortRoute`): had this `fetch` not called the dispatcher, it ignores one.
  o.dispatcher?.answered();
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const rec = recordOf(Array.isArray(json) ? (json as unknown[]).find((m) => recordOf(m)?.['id'] === id) : json);
  const error = rec?.['error'];
  const answerId = rec?.['id'];
  // An answer (a result, an error of an id) to another request: a proxy swapped two answers.
  const other = rec !== undefined && answerId !== id && ('result' in rec || (answerId !== null && answerId !== undefined));
  if (typeof error === 'object' && error !== null && !other) throw new RpcAnswerError(error as Record<string, unknown>, res.status, res.headers, o.endpoint);
  if (!res.ok) {
    const retryAfterMs = waitAskedMs((name) => res.headers.get(name), res.status, o.nowMs, o.maxRetryAfterMs);
    throw new HttpStatusError(res.status, { retryAfterMs, endpoint: o.endpoint });
  }
  if (rec === undefined || !('result' in rec) || other) throw new BadResponseError(o.endpoint, res.status, other);
  return rec['result'];
}

function recordOf(json: unknown): Record<string, unknown> | undefined {
  return typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
}
