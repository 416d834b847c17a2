/**
 * A default `classify` for errors thrown by viem transports, read from the whole `cause`
 * chain (viem wraps: `RpcRequestError` inside `InvalidInputRpcError`, a fetch
 * `TypeError` inside `HttpRequestError`, ...). First match wins:
 *
 * | evidence anywhere in the chain                                          | class            |
 * |--------------------------------------------------------------------------|------------------|
 * | `LandedCheckError` (a send's "already known" whose check by hash failed)  | `transient`      |
 * | execution reverted (code 3, "revert")                                    | `permanent`      |
 * | already known / nonce too low (Nethermind: AlreadyKnown, OldNonce; Erigon: existing tx with same hash) / replacement underpriced | `permanent` |
 * | user rejected (4001)                                                     | `permanent`      |
 * | response too large, block range too wide, "query returned more than", 413 | `retry-narrower` |
 * | method not found / not supported (-32601, -32004, 4200), HTTP 405          | `unsupported`    |
 * | HTTP 408/429, -32005, 429, -32007, rate-limit or quota wording, 503 with `Retry-After` | `rate-limited` (+ `Retry-After`) |
 * | HTTP 401/402/403 (a key or origin refused, a plan out of credit), 404/410 (no JSON-RPC endpoint at that URL) not worded as a quota | `unsupported` |
 * | HTTP 5xx, -32603, -32002, a node behind (not synced, header or block not found, no state, indexing), shutting down, its transaction pool full | `transient` |
 * | no HTTP status and no RPC code (or viem's -1): refused, reset, timeout, socket closed, not JSON, a runtime's network `TypeError` ("Failed to fetch", "Load failed", ...) | `transient` |
 * | any other JSON-RPC code or 4xx: the node answered                         | `permanent`      |
 *
 * 401/402/403 are `unsupported` rather than `permanent` because they are about this endpoint
 * (a key it rejects, a plan out of credit, a method its plan excludes), not about the request: another
 * endpoint may well serve it. Only `details`/`shortMessage` are read from viem errors,
 * never their long `message`, which carries the URL and the request body.
 */
import type { ClassifyResult } from '../base/classify.js';
import { DEFAULT_MAX_RETRY_AFTER_MS, waitAskedMs } from '../fetch/retry-after.js';
import { systemClock, wallNow } from '../base/clock.js';
import { DUPLICATE_SEND } from '../rpc/landed-check.js';

/** What the chain of causes says, gathered once. */
export interface ErrorEvidence {
  /** HTTP status, if any error in the chain carries one. */
  readonly status: number | undefined;
  /** The first numeric (JSON-RPC / EIP-1193) code in the chain. */
  readonly code: number | undefined;
  /** Error names in the chain (`HttpRequestError`, `TimeoutError`, ...). */
  readonly names: ReadonlySet<string>;
  /** String codes in the chain (`ECONNREFUSED`, `UND_ERR_SOCKET`, ...). */
  readonly sysCodes: ReadonlySet<string>;
  /** Lower-cased short messages and details, joined. */
  readonly text: string;
  /** The raw `Retry-After` header value, if a response carried one. */
  readonly retryAfter: string | undefined;
  /** The first response headers in the chain, for a 429's rate-limit reset headers when it has no `Retry-After`. */
  readonly headers?: unknown;
}

const MAX_DEPTH = 12;
const DOM_NAMES: ReadonlySet<string> = new Set(['AbortError', 'TimeoutError']);

export function gatherEvidence(error: unknown): ErrorEvidence {
  let status: number | undefined;
  let code: number | undefined;
  let retryAfter: string | undefined;
  let headers: unknown;
  const names = new Set<string>();
  const sysCodes = new Set<string>();
  const texts: string[] = [];
  const seen = new Set<unknown>();
  let e: unknown = error;
  for (let depth = 0; depth < MAX_DEPTH && typeof e === 'object' && e !== null && !seen.has(e); depth++) {
    seen.add(e);
    const r = e as Record<string, unknown>;
    if (typeof r['name'] === 'string') names.add(r['name']);
    // A WebSocket's failure reaches viem as an event, not an Error: `ErrorEvent` (the `ws`
    // package's on Node 20, the runtime's own on Node 22+, Bun, Deno) or a bare `Event` (browsers).
    // Node 22+'s says nothing more (an empty message, an empty TypeError), Bun's and Deno's use
    // words of their own; that it is a socket's error event is the evidence. Its `error` is read
    // as a cause.
    const kind = typeof r['type'] === 'string' ? (e as { constructor?: { name?: unknown } }).constructor?.name : undefined;
    const event = typeof kind === 'string' && kind.endsWith('Event');
    if (event) names.add(`${r['type'] as string} event`);
    if (status === undefined && typeof r['status'] === 'number' && r['status'] >= 100 && r['status'] <= 599) status = r['status'];
    // A DOMException's numeric `code` (20 for AbortError) is not a JSON-RPC code.
    if (typeof r['code'] === 'number' && !DOM_NAMES.has(r['name'] as string)) code ??= r['code'];
    else if (typeof r['code'] === 'string') sysCodes.add(r['code'].toUpperCase());
    if (retryAfter === undefined) retryAfter = headerOf(r['headers'], 'retry-after');
    if (headers === undefined && typeof r['headers'] === 'object' && r['headers'] !== null) headers = r['headers'];
    const short = r['shortMessage'];
    const details = r['details'];
    if (typeof short === 'string') texts.push(short);
    if (typeof details === 'string') texts.push(details);
    // Plain errors (and RPC error objects) have only `message`; viem's carry URL and body there.
    if (typeof short !== 'string' && typeof r['message'] === 'string') texts.push(r['message']);
    e = r['cause'] ?? (event ? r['error'] : undefined);
  }
  return { status, code, names, sysCodes, text: texts.join(' | ').toLowerCase(), retryAfter, headers };
}

function headerOf(headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  const get = (headers as { get?: unknown }).get;
  if (typeof get !== 'function') return undefined;
  try {
    const v = (get as (n: string) => unknown).call(headers, name);
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

const REVERT = /execution reverted|\breverted\b|vm exception while processing transaction: revert/;
/** A send the node will not take again, nor another node: a duplicate (see `DUPLICATE_SEND`), or a replacement priced too low. */
const UNDERPRICED = /replacement transaction underpriced/;
/**
 * A send this node's transaction pool has no room for (geth "txpool is full", Erigon "pending
 * sub-pool is full", "baseFee …", "queued …"): it did not take the transaction, another
 * node's pool may.
 */
export const POOL_FULL = /txpool is full|sub-pool is full/;
const REJECTED = /user rejected|user denied/;
const NARROWER =
  /query returned more than|block range|range (is )?too (large|wide|big)|range exceeds|response (size|is too large|too large|body too large)|exceeds? (the )?(max(imum)? )?(response size|block range|range|results)|too many (results|blocks|logs)|log response size exceeded|limit the query|query timeout exceeded/;
const UNSUPPORTED = /method not found|does not exist\/is not available|not supported|unsupported method|method not (available|allowed|enabled)|not whitelisted|is not available on/;
const RATE = /rate limit|ratelimit|too many requests|request limit|exceeded .*capacity|compute units|throughput|daily request count|quota|requests per second|credits/;
/**
 * The node has not caught up, or lacks the state asked for, where another node may have it:
 * geth's "header not found", "missing trie node", "block not found: 0x…" (eth_estimateGas),
 * and while its transaction index is being built (1.13+, a receipt or a transaction by hash)
 * "transaction indexing is in progress"; Nethermind's "<number> could not be found" for a
 * block past its head and "No state available for block 0x…" (nethermind#11205, #11214).
 * Not viem's own "Block at number \"7\" could not be found" or "Transaction with hash … could
 * not be found" (thrown by its actions, as in a `withEndpoint` operation: they stay as they were).
 */
const LAGGING =
  /header not found|missing trie node|unknown block|block not found|\b\d+ could not be found|no state available|not (yet )?synced|syncing|is not ready|temporarily unavailable|try again later|timed? ?out|indexing is in progress/;
/** A node on its way down still answers, with errors about itself (ganache: -32700 "Database is not open"). */
const SHUTTING_DOWN = /database (is )?not open|database (is )?closed|shutting down|server is closing|service unavailable/;
const NETWORK = /fetch failed|econnrefused|econnreset|socket hang up|other side closed|network (error|request failed)|connection (refused|reset|closed)|terminated|socket closed/;
/**
 * A `fetch` that failed on the network, in a runtime's own words on its `TypeError` (no code,
 * no cause): Chromium's "Failed to fetch", Firefox's "NetworkError when attempting to fetch
 * resource.", Safari's "Load failed" and "The network connection was lost.", Deno's "error
 * reading a body from connection" (a reset mid-answer; Node says "terminated").
 */
const FETCH_TYPE_ERROR = /failed to fetch|networkerror when attempting to fetch|(?:^|\| )load failed(?: \||$)|network connection was lost|error reading a body from connection/;
/** SyntaxError: an answer that is not JSON (over a WebSocket viem reports it as UnknownRpcError). */
const NETWORK_NAMES = ['TimeoutError', 'SocketClosedError', 'WebSocketRequestError', 'AbortError', 'SyntaxError', 'error event'];
const SYS_CODES = ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'];

export interface ViemClassifyOptions {
  /** Longest `Retry-After` honoured, in milliseconds. @default 60000 */
  readonly maxRetryAfterMs?: number;
  /** For `Retry-After` given as a date. @default the system clock */
  readonly nowMs?: number;
}

/** The answer says this method is not served here (not the key, the origin or the quota): -32601, -32004, 4200, HTTP 405 or such words. */
export function saysMethodUnsupported(ev: ErrorEvidence): boolean {
  const { code } = ev;
  return code === -32601 || code === -32004 || code === 4200 || ev.status === 405 || UNSUPPORTED.test(ev.text);
}

/** The default classifier for viem errors (see the table above). */
export function classifyViemError(error: unknown, options: ViemClassifyOptions = {}): ClassifyResult {
  const ev = gatherEvidence(error);
  // A send's duplicate answer whose check by hash failed: it may have landed (rpc/landed-check.ts).
  if (ev.names.has('LandedCheckError')) return 'transient';
  const { status, code, text } = ev;
  if (code === 3 || REVERT.test(text)) return 'permanent';
  if (DUPLICATE_SEND.test(text) || UNDERPRICED.test(text)) return 'permanent';
  if (code === 4001 || REJECTED.test(text)) return 'permanent';
  if (status === 413 || ev.names.has('ResponseBodyTooLargeError') || NARROWER.test(text)) return 'retry-narrower';
  if (saysMethodUnsupported(ev)) return 'unsupported';
  // A 503 that says when to come back (`Retry-After`) is a server out of room for now, as in the
  // fetch table: the endpoint cools down that long, unblamed, instead of counting against its breaker.
  if (status === 429 || status === 408 || code === -32005 || code === 429 || code === -32007 || RATE.test(text) || (status === 503 && ev.retryAfter !== undefined)) {
    const retryAfterMs = waitAskedMs((name) => (name === 'retry-after' ? ev.retryAfter : headerOf(ev.headers, name)), status, options.nowMs ?? wallNow(systemClock), options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS);
    return retryAfterMs === undefined ? 'rate-limited' : { class: 'rate-limited', retryAfterMs };
  }
  // A key or an origin the endpoint refuses, for every method, a plan out of credit (402
  // Payment Required: dRPC's free tier), or no JSON-RPC endpoint at that URL (404, 410: a
  // wrong path, a project deleted; a JSON-RPC request names no resource of its own to miss).
  // A refusal worded as a quota is a rate limit, above.
  if (status === 401 || status === 402 || status === 403 || status === 404 || status === 410) return 'unsupported';
  if ((status !== undefined && status >= 500) || code === -32603 || code === -32002 || LAGGING.test(text) || SHUTTING_DOWN.test(text) || POOL_FULL.test(text)) return 'transient';
  // -1 is viem's UnknownRpcError, its wrapper for a failure it could not read (a WebSocket
  // that could not connect: an error event, with "connect ECONNREFUSED" from `ws`, with nothing
  // from the runtime's own WebSocket; an answer that is not JSON: a SyntaxError), not a node's code.
  if (status === undefined && (code === undefined || code === -1)) {
    if (ev.names.has('HttpRequestError') || NETWORK_NAMES.some((n) => ev.names.has(n)) || SYS_CODES.some((c) => ev.sysCodes.has(c)) || NETWORK.test(text)) {
      return 'transient';
    }
    if (ev.names.has('TypeError') && FETCH_TYPE_ERROR.test(text)) return 'transient';
  }
  return 'permanent';
}
