/**
 * `classifyEthersError`: ethers v6's own errors (built with ethers' `makeError`, as ethers
 * builds them) and the adapter's errors, table-driven.
 */
import { makeError } from 'ethers';
import { describe, expect, test } from 'vitest';
import { classifyEthersError } from '../src/ethers/classify.js';
import { BadResponseError, RpcAnswerError } from '../src/ethers/http.js';
import { HttpStatusError } from '../src/fetch/classify.js';
import { EndpointTakenError } from '../src/rpc/quorum.js';

const headers = (h: Record<string, string>) => ({ get: (n: string) => h[n.toLowerCase()] ?? null });
const response = (statusCode: number, h: Record<string, string> = {}) => ({ statusCode, headers: h });
const answer = (code: number, message: string, status = 200, h: Record<string, string> = {}) => new RpcAnswerError({ code, message }, status, headers(h), 'e');

describe('classifyEthersError', () => {
  test.each([
    ['CALL_EXCEPTION', makeError('execution reverted', 'CALL_EXCEPTION', { action: 'call', data: '0x', reason: null, transaction: { to: null, data: '0x' }, invocation: null, revert: null }), 'permanent'],
    ['INSUFFICIENT_FUNDS', makeError('insufficient funds', 'INSUFFICIENT_FUNDS', { transaction: {} as never }), 'permanent'],
    ['NONCE_EXPIRED', makeError('nonce too low', 'NONCE_EXPIRED', { transaction: {} as never }), 'permanent'],
    ['INVALID_ARGUMENT', makeError('bad', 'INVALID_ARGUMENT', { argument: 'x', value: 1 }), 'permanent'],
    ['TIMEOUT', makeError('timeout', 'TIMEOUT', { operation: 'request', reason: 'timeout' }), 'transient'],
    ['NETWORK_ERROR', makeError('network', 'NETWORK_ERROR', { event: 'x' }), 'transient'],
    ['BAD_DATA', makeError('bad data', 'BAD_DATA', { value: 'x' }), 'transient'],
    ['SERVER_ERROR 429', makeError('server response 429', 'SERVER_ERROR', { request: {} as never, response: response(429) as never }), 'rate-limited'],
    ['SERVER_ERROR 502', makeError('server response 502', 'SERVER_ERROR', { request: {} as never, response: response(502) as never }), 'transient'],
    ['SERVER_ERROR 401', makeError('server response 401', 'SERVER_ERROR', { request: {} as never, response: response(401) as never }), 'unsupported'],
    ['SERVER_ERROR 404', makeError('server response 404', 'SERVER_ERROR', { request: {} as never, response: response(404) as never }), 'unsupported'],
    ['UNSUPPORTED_OPERATION -32601', makeError('no such method', 'UNSUPPORTED_OPERATION', { operation: 'foo', info: { error: { code: -32601, message: 'the method foo does not exist/is not available' } } }), 'unsupported'],
    ['UNKNOWN_ERROR rate limit', makeError('could not coalesce error', 'UNKNOWN_ERROR', { error: { code: -32005, message: 'limit exceeded' } }), 'rate-limited'],
    ['UNKNOWN_ERROR header not found', makeError('could not coalesce error', 'UNKNOWN_ERROR', { error: { code: -32000, message: 'header not found' } }), 'transient'],
    ['answer: execution reverted', answer(3, 'execution reverted'), 'permanent'],
    ['answer: header not found', answer(-32000, 'header not found'), 'transient'],
    ['answer: transaction indexing is in progress (geth 1.13+)', answer(-32000, 'transaction indexing is in progress'), 'transient'],
    ['answer: Nethermind, a block past its head', answer(-32000, '4294967295 could not be found'), 'transient'],
    ['UNKNOWN_ERROR transaction indexing', makeError('could not coalesce error', 'UNKNOWN_ERROR', { error: { code: -32000, message: 'transaction indexing is in progress' } }), 'transient'],
    ['answer: method not found', answer(-32601, 'Method not found'), 'unsupported'],
    ["answer: geth's txpool is full (another node's may not be)", answer(-32000, 'txpool is full'), 'transient'],
    ['UNKNOWN_ERROR Erigon sub-pool full', makeError('could not coalesce error', 'UNKNOWN_ERROR', { error: { code: -32000, message: 'baseFee sub-pool is full' } }), 'transient'],
    ['answer: 429 body with code', answer(-32005, 'rate limited', 429), 'rate-limited'],
    ['answer: invalid params', answer(-32602, 'invalid argument 0'), 'permanent'],
    ['HTTP 503 with no body', new HttpStatusError(503), 'transient'],
    ['HTTP 403 with no body', new HttpStatusError(403), 'unsupported'],
    ['HTTP 401 with no body', new HttpStatusError(401), 'unsupported'],
    ['HTTP 404 with no body (no JSON-RPC endpoint at that URL)', new HttpStatusError(404), 'unsupported'],
    ['HTTP 410 with no body', new HttpStatusError(410), 'unsupported'],
    ['HTTP 400 with no body', new HttpStatusError(400), 'permanent'],
    ['2xx that is not JSON-RPC', new BadResponseError('e', 200), 'transient'],
    ['fetch failed', new TypeError('fetch failed'), 'transient'],
    // A reset mid-answer on Deno (the suite run on Deno: the call ended while another node was healthy), a network failure in Chromium.
    ["Deno: a body's read reset", new TypeError('error reading a body from connection'), 'transient'],
    ['Chromium: Failed to fetch', new TypeError('Failed to fetch'), 'transient'],
    ['a quorum leg collision', new EndpointTakenError('e'), 'unsupported'],
  ] as const)('%s', (_label, error, expected) => {
    const c = classifyEthersError(error, { nowMs: 0 });
    expect(typeof c === 'string' ? c : c.class).toBe(expected);
  });

  test('Retry-After is read from an ethers SERVER_ERROR response and from an HTTP answer', () => {
    const e = makeError('server response 429', 'SERVER_ERROR', { request: {} as never, response: response(429, { 'retry-after': '7' }) as never });
    expect(classifyEthersError(e, { nowMs: 0 })).toEqual({ class: 'rate-limited', retryAfterMs: 7000 });
    expect(classifyEthersError(new HttpStatusError(429, { retryAfterMs: 3000 }))).toEqual({ class: 'rate-limited', retryAfterMs: 3000 });
    expect(classifyEthersError(answer(-32005, 'slow down', 429, { 'retry-after': '2' }), { nowMs: 0 })).toEqual({ class: 'rate-limited', retryAfterMs: 2000 });
  });

  test("a 429 without Retry-After: the API's reset header, from an ethers SERVER_ERROR and from an HTTP answer", () => {
    const e = makeError('server response 429', 'SERVER_ERROR', { request: {} as never, response: response(429, { 'x-ratelimit-reset-after': '6' }) as never });
    expect(classifyEthersError(e, { nowMs: 0 })).toEqual({ class: 'rate-limited', retryAfterMs: 6000 });
    expect(classifyEthersError(answer(-32005, 'slow down', 429, { 'ratelimit-reset': '4' }), { nowMs: 0 })).toEqual({ class: 'rate-limited', retryAfterMs: 4000 });
    // Not on another status.
    expect(classifyEthersError(answer(-32005, 'slow down', 503, { 'ratelimit-reset': '4' }), { nowMs: 0 })).toBe('rate-limited');
  });

  test('a 503 with Retry-After is rate-limited for that long, as in the fetch table, whether its body is JSON-RPC or not; without it, transient', () => {
    expect(classifyEthersError(answer(-32603, 'internal error', 503, { 'retry-after': '5' }), { nowMs: 0 })).toEqual({ class: 'rate-limited', retryAfterMs: 5000 });
    expect(classifyEthersError(new HttpStatusError(503, { retryAfterMs: 5000 }), { nowMs: 0 })).toEqual({ class: 'rate-limited', retryAfterMs: 5000 });
    expect(classifyEthersError(answer(-32603, 'internal error', 503), { nowMs: 0 })).toBe('transient');
  });
});
