import { describe, expect, test } from 'vitest';
import { classifyApiKeyMessage } from '../src/keys/index.js';
import { classifyFetchError, HttpStatusError } from '../src/fetch/index.js';

describe('classifyApiKeyMessage', () => {
  test.each<[string, unknown]>([
    ['Max calls per sec rate limit reached (5/sec)', { class: 'rate-limited', ceilingPerSecond: 5 }],
    ['Max calls per sec rate limit reached (2/sec)', { class: 'rate-limited', ceilingPerSecond: 2 }],
    ['max calls per sec rate limit reached (0.5 / sec)', { class: 'rate-limited', ceilingPerSecond: 0.5 }],
    ['Rate limit exceeded: 10 calls per second', { class: 'rate-limited', ceilingPerSecond: 10 }],
    ['You have exceeded the rate limit of 3 requests/sec', { class: 'rate-limited', ceilingPerSecond: 3 }],
    ['Too many requests (limit: 25 rps)', { class: 'rate-limited', ceilingPerSecond: 25 }],
    ['Max rate limit reached', { class: 'rate-limited' }],
    ['Max rate limit reached, please use API Key for higher rate limit', { class: 'rate-limited' }],
    ['Too Many Requests', { class: 'rate-limited' }],
    ['Max daily rate limit reached', { class: 'rate-limited', dailyQuotaExhausted: true }],
    ['Max daily rate limit reached. 110000 (100%) of 100000 day/limit', { class: 'rate-limited', dailyQuotaExhausted: true }],
    ['Daily limit exceeded', { class: 'rate-limited', dailyQuotaExhausted: true }],
    ['You have reached your daily quota', { class: 'rate-limited', dailyQuotaExhausted: true }],
    ['Invalid API Key', { class: 'permanent', disableEndpoint: true }],
    ['Invalid API Key (#err2)|x', { class: 'permanent', disableEndpoint: true }],
    ['Missing/Invalid API Key', { class: 'permanent', disableEndpoint: true }],
    ['API key not found', { class: 'permanent', disableEndpoint: true }],
    ['The API key is banned', { class: 'permanent', disableEndpoint: true }],
    ['execution reverted', undefined],
    ['No transactions found', undefined],
    ['', undefined],
  ])('%j', (message, expected) => {
    expect(classifyApiKeyMessage(message)).toEqual(expected);
  });

  // Messages nobody picked (NOTES-newuser.md, finding 12): limits that are not on calls, a
  // contract's revert, a `limit` parameter, and a per-second limit that mentions the plan's daily one.
  test.each([
    ['execution reverted: ERC20: transfer amount exceeds balance', undefined],
    ['execution reverted: Daily withdrawal limit exceeded', undefined],
    ['Daily withdrawal limit exceeded', undefined],
    ['limit must be between 1 and 100', undefined],
    ['Invalid limit parameter', undefined],
    ['exceeds block gas limit', undefined],
    ['Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range', undefined],
    ['block range limit exceeded', undefined],
    ['Request entity too large, limit is 1MB', undefined],
    ['Offset exceeds maximum allowed', undefined],
    ['Invalid key "sort" in query', undefined],
    ['Invalid key in request body', undefined],
    ['Invalid key', { class: 'permanent', disableEndpoint: true }],
    ['Invalid key provided.', { class: 'permanent', disableEndpoint: true }],
    ['Max rate limit reached (5/sec); your plan allows 100,000 calls per day', { class: 'rate-limited', ceilingPerSecond: 5 }],
    ['You have exceeded the rate limit of 5 requests per second. Upgrade for more than 100000 requests/day', { class: 'rate-limited', ceilingPerSecond: 5 }],
    ['This endpoint is limited to 5 requests per second', { class: 'rate-limited', ceilingPerSecond: 5 }],
    ['Request limit reached', { class: 'rate-limited' }],
    ['You have used your 100000 calls per day', undefined],
    ['Limit of 100000 calls per day exceeded', { class: 'rate-limited', dailyQuotaExhausted: true }],
    ['Your API key has exceeded its daily limit', { class: 'rate-limited', dailyQuotaExhausted: true }],
  ])('%j (not picked for it)', (message, expected) => {
    expect(classifyApiKeyMessage(message)).toEqual(expected);
  });

  test('reads an Error, a JSON body (Etherscan: result over "NOTOK"), and nothing else', () => {
    expect(classifyApiKeyMessage(new Error('Max calls per sec rate limit reached (5/sec)'))).toEqual({ class: 'rate-limited', ceilingPerSecond: 5 });
    expect(classifyApiKeyMessage({ status: '0', message: 'NOTOK', result: 'Invalid API Key' })).toEqual({ class: 'permanent', disableEndpoint: true });
    expect(classifyApiKeyMessage({ error: { message: 'Max daily rate limit reached' } })).toEqual({ class: 'rate-limited', dailyQuotaExhausted: true });
    expect(classifyApiKeyMessage(42)).toBeUndefined();
    expect(classifyApiKeyMessage(null)).toBeUndefined();
  });

  test('composes in front of the fetch adapter\'s classifier', () => {
    const classify = (e: unknown) => classifyApiKeyMessage(e) ?? classifyFetchError(e);
    expect(classify(new HttpStatusError(503))).toBe('transient');
    expect(classify(new Error('Max rate limit reached'))).toEqual({ class: 'rate-limited' });
  });
});
