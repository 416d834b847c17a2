/**
 * viem's default classifier (src/viem/classify.ts) on error shapes built by hand: each row of
 * its table, where the twenty-eighth session's first mutation run of it found most of them
 * held by no test (the codes and statuses that mean "not this endpoint", "slow down", "try
 * again"; which field of a nested error wins; the separator network texts are matched on).
 */
import { describe, expect, test } from 'vitest';
import { classifyViemError, gatherEvidence } from '../../src/viem/index.js';

const headers = (h: Record<string, string>) => new Headers(h);

describe('classifyViemError: one row per rule', () => {
  test.each([
    ['a landed check that failed', { name: 'LandedCheckError', message: 'execution reverted' }, 'transient'],
    // A node behind: another node may have it. viem's own "not found" errors (thrown by its
    // actions, above the transport) are not a node's answer and stay as they were.
    ['Nethermind, a block past its head', { code: -32000, message: '4294967295 could not be found' }, 'transient'],
    ["viem's BlockNotFoundError", { name: 'BlockNotFoundError', shortMessage: 'Block at number "4294967295" could not be found.', message: 'x' }, 'permanent'],
    ["viem's TransactionReceiptNotFoundError", { name: 'TransactionReceiptNotFoundError', shortMessage: 'Transaction receipt with hash "0xab" could not be found. The Transaction may not be processed on a block yet.', message: 'x' }, 'permanent'],
    ['code 3 (a revert with data)', { code: 3, message: 'x' }, 'permanent'],
    ['a revert in words', { message: 'execution reverted: not owner' }, 'permanent'],
    ['a nonce already used', { message: 'nonce too low' }, 'permanent'],
    ['a user rejection by code', { code: 4001, message: 'x' }, 'permanent'],
    ['a user rejection in words', { message: 'User rejected the request.' }, 'permanent'],
    ['413', { status: 413, message: 'x' }, 'retry-narrower'],
    ['a body too large', { name: 'ResponseBodyTooLargeError', message: 'x' }, 'retry-narrower'],
    ['a range too wide', { message: 'query returned more than 10000 results' }, 'retry-narrower'],
    ['-32601', { code: -32601, message: 'x' }, 'unsupported'],
    ['-32004', { code: -32004, message: 'x' }, 'unsupported'],
    ['4200', { code: 4200, message: 'x' }, 'unsupported'],
    ['401', { status: 401, message: 'x' }, 'unsupported'],
    ['403', { status: 403, message: 'x' }, 'unsupported'],
    ['402', { status: 402, message: 'x' }, 'unsupported'],
    ['404', { status: 404, message: 'x' }, 'unsupported'],
    ['410', { status: 410, message: 'x' }, 'unsupported'],
    ['400', { status: 400, message: 'x' }, 'permanent'],
    ['409', { status: 409, message: 'x' }, 'permanent'],
    ['405', { status: 405, message: 'x' }, 'unsupported'],
    ['a method in words', { message: 'the method eth_foo does not exist/is not available' }, 'unsupported'],
    ['429', { status: 429, message: 'x' }, 'rate-limited'],
    ['408', { status: 408, message: 'x' }, 'rate-limited'],
    ['-32005', { code: -32005, message: 'x' }, 'rate-limited'],
    ['code 429', { code: 429, message: 'x' }, 'rate-limited'],
    ['-32007', { code: -32007, message: 'x' }, 'rate-limited'],
    ['a rate in words', { message: 'Your app has exceeded its compute units per second capacity' }, 'rate-limited'],
    ['500', { status: 500, message: 'x' }, 'transient'],
    ['599', { status: 599, message: 'x' }, 'transient'],
    ['-32603', { code: -32603, message: 'x' }, 'transient'],
    ['-32002', { code: -32002, message: 'x' }, 'transient'],
    ['a lagging node', { message: 'header not found' }, 'transient'],
    ['a node shutting down', { code: -32700, message: 'Database is not open' }, 'transient'],
    ['HttpRequestError', { name: 'HttpRequestError', message: 'x' }, 'transient'],
    ['a WebSocket error event wrapped as code -1', { code: -1, message: 'x', cause: new (class ErrorEvent { type = 'error'; message = ''; })() }, 'transient'],
    ['a system code in lower case', { message: 'x', cause: { code: 'econnreset' } }, 'transient'],
    ['fetch failed', { message: 'fetch failed' }, 'transient'],
    ["Safari's TypeError, after the short message", { name: 'TypeError', shortMessage: 'request failed', details: 'Load failed' }, 'transient'],
    ['a TypeError of another kind', { name: 'TypeError', message: 'x is not a function' }, 'permanent'],
    ['a status out of range is no status (99)', { status: 99, name: 'HttpRequestError', message: 'x' }, 'transient'],
    ['a status out of range is no status (600)', { status: 600, name: 'HttpRequestError', message: 'x' }, 'transient'],
    ['a status in range (100) keeps it from being read as the network', { status: 100, name: 'HttpRequestError', message: 'x' }, 'permanent'],
    ['an AbortError whose code is a DOMException code', { name: 'AbortError', code: 20, message: 'x' }, 'transient'],
    ['nothing known', { message: 'something else' }, 'permanent'],
    ['rules apply in order: code 3 on a 500', { code: 3, status: 500, message: 'x' }, 'permanent'],
    ['a revert that mentions a rate limit', { message: 'execution reverted: rate limit reached' }, 'permanent'],
    ['a nonce already used, on a 503', { status: 503, message: 'nonce too low' }, 'permanent'],
    ['code 4001 on a 429', { code: 4001, status: 429, message: 'x' }, 'permanent'],
    ['a user rejection that mentions a timeout', { message: 'User denied: timed out' }, 'permanent'],
    ['a status of 100 from a WebSocket-less error', { status: 100, message: 'fetch failed' }, 'permanent'],
  ] as [string, object, unknown][])('%s', (_name, error, want) => {
    expect(classifyViemError(error)).toEqual(want);
  });

  test.each(['TimeoutError', 'SocketClosedError', 'WebSocketRequestError', 'AbortError', 'SyntaxError'])('%s is the network', (name) => {
    expect(classifyViemError({ name, message: 'x' })).toBe('transient');
  });

  test.each(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])('%s is the network', (code) => {
    expect(classifyViemError({ message: 'x', cause: { code } })).toBe('transient');
  });
});

describe('which part of a nested error counts', () => {
  test('the outermost status and code win', () => {
    expect(classifyViemError({ status: 429, message: 'x', cause: { status: 500 } })).toBe('rate-limited');
    expect(classifyViemError({ code: -32601, message: 'x', cause: { code: -32603 } })).toBe('unsupported');
  });

  test('Retry-After: the first one found, parsed against nowMs and clamped to maxRetryAfterMs', () => {
    const nowMs = Date.parse('2025-01-01T00:00:00Z');
    expect(classifyViemError({ status: 429, headers: headers({ 'retry-after': '2' }), cause: { headers: headers({ 'retry-after': '9' }) } })).toEqual({ class: 'rate-limited', retryAfterMs: 2_000 });
    expect(classifyViemError({ status: 429, headers: headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:03 GMT' }) }, { nowMs })).toEqual({ class: 'rate-limited', retryAfterMs: 3_000 });
    expect(classifyViemError({ status: 429, headers: headers({ 'retry-after': '120' }) }, { maxRetryAfterMs: 5_000 })).toEqual({ class: 'rate-limited', retryAfterMs: 5_000 });
  });

  test('headers that cannot be read are no header', () => {
    const throwing = { get: () => { throw new Error('no'); } };
    expect(classifyViemError({ status: 429, headers: throwing })).toBe('rate-limited');
    expect(classifyViemError({ status: 429, headers: { get: 5 } })).toBe('rate-limited');
    expect(classifyViemError({ status: 429, headers: { get: () => 7 } })).toBe('rate-limited');
  });

  test('a short message hides the long one (viem puts the URL and the body there); details are read', () => {
    expect(classifyViemError({ shortMessage: 'HTTP request failed.', message: 'rate limit exceeded' })).toBe('permanent');
    expect(classifyViemError({ shortMessage: 'HTTP request failed.', details: 'header not found' })).toBe('transient');
  });

  test("an error event's error is read as its cause; a loop or a null cause ends the walk", () => {
    const event = new (class ErrorEvent { type = 'error'; error = { code: 'ECONNREFUSED' }; })();
    expect([...gatherEvidence(event).sysCodes]).toEqual(['ECONNREFUSED']);
    expect([...gatherEvidence(event).names]).toContain('error event');
    const plain = { type: 'error', error: { code: 'ECONNREFUSED' } };
    expect([...gatherEvidence(plain).sysCodes]).toEqual([]);
    const loop: Record<string, unknown> = { message: 'a' };
    loop['cause'] = loop;
    expect(gatherEvidence(loop).text).toBe('a');
    expect(gatherEvidence({ message: 'a', cause: null }).text).toBe('a');
  });

  test('texts are joined with " | ", lower-cased, outermost first', () => {
    expect(gatherEvidence({ shortMessage: 'A', details: 'B', cause: { message: 'C' } }).text).toBe('a | b | c');
  });
});
