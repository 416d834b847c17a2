/**
 * The ethers adapter's default classifier (src/ethers/classify.ts) on error shapes built by
 * hand, where the twenty-eighth session's first mutation run of it found no test holding:
 * ethers' codes only with its `shortMessage`, a SERVER_ERROR's HTTP status and Retry-After
 * (at the response or under `info`), the node's JSON-RPC error under `error` or
 * `info.error`, and what is not an ethers error.
 */
import { describe, expect, test } from 'vitest';
import { classifyEthersError } from '../../src/ethers/index.js';
import { HttpStatusError } from '../../src/fetch/index.js';

const ethersError = (code: string, more: object = {}) => ({ code, shortMessage: `${code.toLowerCase()} happened`, ...more });

describe('classifyEthersError', () => {
  test.each([
    ['a string', 'boom', 'permanent'],
    ['null', null, 'permanent'],
    ['BadResponseError', { name: 'BadResponseError', message: 'x' }, 'transient'],
    ['CALL_EXCEPTION', ethersError('CALL_EXCEPTION'), 'permanent'],
    ['NOT_IMPLEMENTED', ethersError('NOT_IMPLEMENTED'), 'permanent'],
    ['TIMEOUT', ethersError('TIMEOUT'), 'transient'],
    ['CANCELLED', ethersError('CANCELLED'), 'transient'],
    ['a code without its shortMessage is not read as ethers', { code: 'TIMEOUT', message: 'x' }, 'permanent'],
    ['SERVER_ERROR 429 with Retry-After', ethersError('SERVER_ERROR', { response: { statusCode: 429, headers: { 'retry-after': '3' } } }), { class: 'rate-limited', retryAfterMs: 3_000 }],
    ['SERVER_ERROR 429 under info, Retry-After clamped', ethersError('SERVER_ERROR', { info: { response: { statusCode: 429, headers: { 'retry-after': '300' } } } }), { class: 'rate-limited', retryAfterMs: 60_000 }],
    ['SERVER_ERROR 429, a header that is not a string', ethersError('SERVER_ERROR', { response: { statusCode: 429, headers: { 'retry-after': 3 } } }), 'rate-limited'],
    ['SERVER_ERROR 401', ethersError('SERVER_ERROR', { response: { statusCode: 401, headers: {} } }), 'unsupported'],
    ['SERVER_ERROR 403', ethersError('SERVER_ERROR', { response: { statusCode: 403 } }), 'unsupported'],
    ['SERVER_ERROR 405', ethersError('SERVER_ERROR', { response: { statusCode: 405 } }), 'unsupported'],
    ['SERVER_ERROR 402 (dRPC: a free tier out of credit)', ethersError('SERVER_ERROR', { response: { statusCode: 402 } }), 'unsupported'],
    ['SERVER_ERROR 400', ethersError('SERVER_ERROR', { response: { statusCode: 400 } }), 'permanent'],
    ['SERVER_ERROR 503', ethersError('SERVER_ERROR', { response: { statusCode: 503 } }), 'transient'],
    ['SERVER_ERROR 200 (a status under 400 is not the answer)', ethersError('SERVER_ERROR', { response: { statusCode: 200 } }), 'transient'],
    ['SERVER_ERROR with a status that is not a number', ethersError('SERVER_ERROR', { response: { statusCode: '429' } }), 'transient'],
    ['SERVER_ERROR, no response', ethersError('SERVER_ERROR'), 'transient'],
    ["the node's error under error", ethersError('UNKNOWN_ERROR', { error: { code: -32601, message: 'method not found' } }), 'unsupported'],
    ["the node's error under info.error", ethersError('UNKNOWN_ERROR', { info: { error: { code: -32005, message: 'x' } } }), 'rate-limited'],
    ["the node's error without a message", ethersError('UNKNOWN_ERROR', { error: { code: -32603 } }), 'transient'],
    ["an error field whose code is not a number is not the node's", ethersError('UNKNOWN_ERROR', { error: { code: 'x', message: 'header not found' } }), 'permanent'],
    ["SERVER_ERROR with the node's error: the node's decides", ethersError('SERVER_ERROR', { error: { code: 3, message: 'execution reverted' } }), 'permanent'],
    ['an HttpStatusError 403', new HttpStatusError(403), 'unsupported'],
    ['an HttpStatusError 503', new HttpStatusError(503), 'transient'],
    ['anything else goes to the viem table', { message: 'nonce too low' }, 'permanent'],
    ["a permanent code wins over the node's error", ethersError('CALL_EXCEPTION', { error: { code: -32005, message: 'x' } }), 'permanent'],
    ["a transient code wins over the node's error", ethersError('TIMEOUT', { error: { code: 3, message: 'execution reverted' } }), 'transient'],
    ['the status is read for SERVER_ERROR only', ethersError('UNKNOWN_ERROR', { response: { statusCode: 429 } }), 'permanent'],
    ["SERVER_ERROR 429 wins over the node's error", ethersError('SERVER_ERROR', { response: { statusCode: 429 }, error: { code: 3, message: 'execution reverted' } }), 'rate-limited'],
    ["SERVER_ERROR 401 wins over the node's error", ethersError('SERVER_ERROR', { response: { statusCode: 401 }, error: { code: -32603, message: 'x' } }), 'unsupported'],
    ['SERVER_ERROR with a null response', ethersError('SERVER_ERROR', { response: null }), 'transient'],
    ['SERVER_ERROR 429 with null headers', ethersError('SERVER_ERROR', { response: { statusCode: 429, headers: null } }), 'rate-limited'],
    ["a node's error that is null, then one under info", ethersError('UNKNOWN_ERROR', { error: null, info: { error: { code: -32601, message: 'x' } } }), 'unsupported'],
    ["the node's message is what the viem table reads", ethersError('UNKNOWN_ERROR', { error: { code: -1, message: 'header not found' } }), 'transient'],
    ["a node's message that is not a string is no text", ethersError('UNKNOWN_ERROR', { error: { code: 0, message: 5 } }), 'permanent'],
  ] as [string, unknown, unknown][])('%s', (_name, error, want) => {
    expect(classifyEthersError(error)).toEqual(want);
  });

  test('Retry-After as a date, against nowMs', () => {
    const nowMs = Date.parse('2025-01-01T00:00:00Z');
    const e = ethersError('SERVER_ERROR', { response: { statusCode: 429, headers: { 'retry-after': 'Wed, 01 Jan 2025 00:00:02 GMT' } } });
    expect(classifyEthersError(e, { nowMs })).toEqual({ class: 'rate-limited', retryAfterMs: 2_000 });
    expect(classifyEthersError(e, { nowMs, maxRetryAfterMs: 1_000 })).toEqual({ class: 'rate-limited', retryAfterMs: 1_000 });
  });
});
