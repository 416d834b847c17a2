/**
 * A request `fetch` refuses before sending anything is the request's fault: the call ends at
 * once, no endpoint is blamed (repro-client-error-breaker.mjs, repro-init-errors.mjs), and a
 * network failure still fails over.
 */
import { describe, expect, test } from 'vitest';
import { createPooledFetch, type PooledFetchOptions, type PooledRequestInit } from '../src/fetch/index.js';
import { refusedByFetch } from '../src/fetch/refused.js';
import { isPoolError } from '../src/index.js';
import { loopbackScope, refusedUrl } from './helpers/loopback.js';

const scope = loopbackScope();

async function twoServers(extra: Partial<PooledFetchOptions> = {}): Promise<{ f: ReturnType<typeof createPooledFetch>; hits: () => number[] }> {
  const a = await scope.server((_req, res) => res.end('a'));
  const b = await scope.server((_req, res) => res.end('b'));
  const f = createPooledFetch({ endpoints: [{ name: 'a', url: a.url }, { name: 'b', url: b.url }], attemptTimeoutMs: 5_000, backoff: { initialMs: 1, maxMs: 2 }, ...extra });
  scope.made.push(f);
  return { f, hits: () => [a.hits, b.hits] };
}

describe('3. a request fetch refuses fails at once, counted against no endpoint', () => {
  test.each([
    ['GET with a body', { method: 'GET', body: '{"q":1}' }, 'Request with GET/HEAD method cannot have body.'],
    ['POST with a ReadableStream and no duplex', { method: 'POST', body: new ReadableStream({ start: (c) => c.close() }) }, 'duplex'],
    ['POST with redirect: "bogus"', { method: 'POST', body: 'x', redirect: 'bogus' }, 'bogus'],
    ['method CONNECT', { method: 'CONNECT' }, "'CONNECT' HTTP method is unsupported."],
  ] as const)('%s: PERMANENT after one attempt, nothing sent, no "may have reached"', async (_, init, words) => {
    const { f, hits } = await twoServers();
    const error = await f('/x', init as unknown as PooledRequestInit & { parse?: undefined }).catch((e: unknown) => e);
    expect(isPoolError(error) && [error.code, error.attempts]).toEqual(['PERMANENT', 1]);
    const message = (error as Error).message;
    expect(message).toMatch(/^fetch refused the request before sending it \(the request's fault: nothing was sent, no endpoint is blamed\): /);
    expect(message).toContain(words);
    expect(message).not.toMatch(/may have reached/);
    expect(((error as Error).cause as Error).name).toBe('TypeError');
    expect(hits()).toEqual([0, 0]);
    expect([f.pool.breakerState('a'), f.pool.breakerState('b')]).toEqual(['closed', 'closed']);
  });

  test('bad calls in a row open no breaker: a good call after them is served (repro-client-error-breaker.mjs)', async () => {
    const { f, hits } = await twoServers({ breaker: { threshold: 2 } });
    for (let i = 0; i < 4; i++) await expect(f('/search', { method: 'GET', body: JSON.stringify({ q: i }) })).rejects.toMatchObject({ code: 'PERMANENT' });
    const res = await f('/health');
    expect([res.status, await res.text(), hits()]).toEqual([200, 'a', [1, 0]]);
    expect(f.pool.breakerState('a')).toBe('closed');
    expect(f.pool.breakerState('b')).toBe('closed');
  });

  test('a network failure still fails over, a POST too', async () => {
    const good = await scope.server((_req, res) => res.end('good'));
    const f = createPooledFetch({ endpoints: [{ name: 'down', url: await refusedUrl() }, { name: 'good', url: good.url }], backoff: { initialMs: 1, maxMs: 2 } });
    scope.made.push(f);
    expect(await (await f('/x')).text()).toBe('good');
    expect(await (await f('/x', { method: 'POST', body: 'p' })).text()).toBe('good');
  });

  test.each([
    ["Node/undici's network failure", new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }), false],
    ["Chromium's network failure", new TypeError('Failed to fetch'), false],
    ["Firefox's network failure", new TypeError('NetworkError when attempting to fetch resource.'), false],
    ["Safari's network failure", new TypeError('Load failed'), false],
    ["older Safari's", new TypeError('The network connection was lost.'), false],
    ["a polyfill's (whatwg-fetch, React Native)", new TypeError('Network request failed'), false],
    ["Deno's network failure", new TypeError('error sending request for url (http://h/): client error (Connect)', { cause: new Error('tcp connect error') }), false],
    ['a TypeError with a code', Object.assign(new TypeError('something'), { code: 'ConnectionRefused' }), false],
    ['not a TypeError', new Error('Request with GET/HEAD method cannot have body.'), false],
    ["undici's GET with a body", new TypeError('Request with GET/HEAD method cannot have body.'), true],
    ["undici's CONNECT", new TypeError("'CONNECT' HTTP method is unsupported."), true],
    ["undici's signal check", new TypeError("Failed to construct 'Request': member signal is not of type AbortSignal."), true],
    ["Chromium's GET with a body", new TypeError("Failed to execute 'fetch' on 'Window': Request with GET/HEAD method cannot have body."), true],
    ["Chromium's redirect", new TypeError("Failed to execute 'fetch' on 'Window': The provided value 'bogus' is not a valid enum value of type RequestRedirect."), true],
    ["Firefox's GET with a body", new TypeError('Window.fetch: HEAD or GET Request cannot have a body.'), true],
  ] as const)('by shape: %s', (_, error, refused) => {
    expect(refusedByFetch(error)).toBe(refused);
  });
});
