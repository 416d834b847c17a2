/**
 * A default `classify` for the ethers adapter and for ethers v6 errors in general.
 *
 * It adds only what is particular to ethers and hands the rest to what the library
 * already knows: HTTP statuses go through `endpoint-pool/fetch`'s table
 * (`classifyStatus`), JSON-RPC codes and node wording through the viem classifier's
 * table (`classifyViemError`), which reads any error shaped `{ code, message, status,
 * cause }`.
 *
 * | evidence                                                          | class |
 * |--------------------------------------------------------------------|-------|
 * | `EndpointTakenError` (a quorum leg's collision)                    | `unsupported` |
 * | `HttpStatusError` (non-2xx, no JSON-RPC body)                      | 401/402/403/404/405/410 `unsupported` (as viem's), else by status (fetch table) |
 * | `BadResponseError` (2xx that is not JSON-RPC)                      | `transient` |
 * | ethers `CALL_EXCEPTION`, `INSUFFICIENT_FUNDS`, `NONCE_EXPIRED`, `REPLACEMENT_UNDERPRICED`, `TRANSACTION_REPLACED`, `ACTION_REJECTED`, argument errors | `permanent` |
 * | ethers `TIMEOUT`, `NETWORK_ERROR`, `BAD_DATA`, `CANCELLED`         | `transient` |
 * | ethers `SERVER_ERROR` with an HTTP status                           | the same |
 * | anything else (`RpcAnswerError`, ethers `UNKNOWN_ERROR` / `UNSUPPORTED_OPERATION` wrapping a JSON-RPC error, `fetch`'s `TypeError`) | the viem table, on the JSON-RPC error inside |
 */
import type { ClassifyResult } from '../base/classify.js';
import { classifyFetchError, classifyStatus, isHttpStatusError } from '../fetch/classify.js';
import { DEFAULT_MAX_RETRY_AFTER_MS, waitAskedMs } from '../fetch/retry-after.js';
import { isEndpointTaken, TAKEN_CLASS } from '../rpc/quorum.js';
import { classifyViemError } from '../viem/classify.js';
import { systemClock, wallNow } from '../base/clock.js';

const PERMANENT: ReadonlySet<string> = new Set([
  'CALL_EXCEPTION',
  'INSUFFICIENT_FUNDS',
  'NONCE_EXPIRED',
  'REPLACEMENT_UNDERPRICED',
  'TRANSACTION_REPLACED',
  'ACTION_REJECTED',
  'INVALID_ARGUMENT',
  'MISSING_ARGUMENT',
  'UNEXPECTED_ARGUMENT',
  'VALUE_MISMATCH',
  'NUMERIC_FAULT',
  'BUFFER_OVERRUN',
  'UNCONFIGURED_NAME',
  'NOT_IMPLEMENTED',
]);
const TRANSIENT: ReadonlySet<string> = new Set(['TIMEOUT', 'NETWORK_ERROR', 'BAD_DATA', 'CANCELLED']);
/**
 * 401, 402, 403, 405: about the endpoint (its key, its plan, its credit), not the request, as
 * in the viem and fetch tables; 404 and 410 too, unlike the fetch table's (a JSON-RPC request
 * names no resource to miss: there is no endpoint at that URL). `unsupported`, so another
 * endpoint serves it.
 */
const KEY_STATUSES: ReadonlySet<number> = new Set([401, 402, 403, 404, 405, 410]);

export interface EthersClassifyOptions {
  /** Longest `Retry-After` honoured, in milliseconds. @default 60000 */
  readonly maxRetryAfterMs?: number;
  /** For `Retry-After` given as a date. @default the system clock */
  readonly nowMs?: number;
}

/** The default classifier for the ethers adapter's and ethers' own errors (see the table above). */
export function classifyEthersError(error: unknown, options: EthersClassifyOptions = {}): ClassifyResult {
  if (isEndpointTaken(error)) return TAKEN_CLASS;
  if (isHttpStatusError(error)) return KEY_STATUSES.has(error.status) ? 'unsupported' : classifyFetchError(error);
  if (typeof error !== 'object' || error === null) return 'permanent';
  const r = error as Record<string, unknown>;
  if (r['name'] === 'BadResponseError') return 'transient';
  const code = r['code'];
  if (typeof code === 'string' && typeof r['shortMessage'] === 'string') {
    if (PERMANENT.has(code)) return 'permanent';
    if (TRANSIENT.has(code)) return 'transient';
    if (code === 'SERVER_ERROR') {
      const status = responseStatus(r);
      if (status !== undefined && status >= 400) {
        const nowMs = options.nowMs ?? wallNow(systemClock);
        const retryAfterMs = waitAskedMs((name) => responseHeader(r, name), status, nowMs, options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS);
        if (KEY_STATUSES.has(status)) return 'unsupported';
        const c = classifyStatus(status, retryAfterMs);
        return c === 'ok' ? 'transient' : c;
      }
    }
    // ethers keeps the node's JSON-RPC error in `error` or `info.error`: classify that.
    const inner = rpcErrorOf(r);
    if (inner !== undefined) return classifyViemError(inner, options);
    if (code === 'SERVER_ERROR') return 'transient';
  }
  return classifyViemError(error, options);
}

function rpcErrorOf(r: Record<string, unknown>): { code: number; message: string } | undefined {
  const info = r['info'] as Record<string, unknown> | undefined;
  for (const c of [r['error'], info?.['error']]) {
    if (typeof c === 'object' && c !== null && typeof (c as { code?: unknown }).code === 'number') {
      const m = (c as { message?: unknown }).message;
      return { code: (c as { code: number }).code, message: typeof m === 'string' ? m : '' };
    }
  }
  return undefined;
}

function responseOf(r: Record<string, unknown>): Record<string, unknown> | undefined {
  const info = r['info'] as Record<string, unknown> | undefined;
  const res = r['response'] ?? info?.['response'];
  return typeof res === 'object' && res !== null ? (res as Record<string, unknown>) : undefined;
}

function responseStatus(r: Record<string, unknown>): number | undefined {
  const s = responseOf(r)?.['statusCode'];
  return typeof s === 'number' ? s : undefined;
}

function responseHeader(r: Record<string, unknown>, name: string): string | undefined {
  const headers = responseOf(r)?.['headers'];
  if (typeof headers !== 'object' || headers === null) return undefined;
  const v = (headers as Record<string, unknown>)[name];
  return typeof v === 'string' ? v : undefined;
}
