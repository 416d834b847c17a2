/**
 * A bearer token belongs to the endpoint it was fetched for: when `setEndpoints` gives a name
 * a new base URL, the token fetched for the old one is not sent to the new host (it was: the
 * cache was keyed by name alone), and `getToken` is asked afresh for that name.
 */
import { describe, expect, test } from 'vitest';
import { createPooledFetch } from '../src/fetch/index.js';

describe('fetch adapter: tokens across setEndpoints', () => {
  test('a name given a new URL gets a token of its own; set again with the same URL, it keeps it', async () => {
    const seen: { url: string; auth: string | null }[] = [];
    const fakeFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      seen.push({ url: String(input), auth: new Headers(init?.headers).get('authorization') });
      return new Response('ok', { status: 200 });
    };
    let issued = 0;
    const tokensAsked: string[] = [];
    const pooled = createPooledFetch({
      endpoints: [{ url: 'https://old.example', name: 'x' }, { url: 'https://kept.example', name: 'y' }],
      fetch: fakeFetch as typeof fetch,
      strategy: 'ordered',
      getToken: async (endpoint) => {
        tokensAsked.push(endpoint);
        return `t${++issued}-${endpoint}`;
      },
    });
    await pooled('/a');
    expect(seen.at(-1)).toEqual({ url: 'https://old.example/a', auth: 'Bearer t1-x' });
    pooled.pool.setEndpoints([
      { name: 'x', conn: 'https://new.example' },
      { name: 'y', conn: 'https://kept.example' },
    ]);
    await pooled('/b');
    expect(seen.filter((s) => s.url.startsWith('https://new.example')).map((s) => s.auth)).toEqual(['Bearer t2-x']);
    expect(tokensAsked).toEqual(['x', 'x']);
    pooled.pool.setEndpoints([
      { name: 'x', conn: 'https://new.example' },
      { name: 'y', conn: 'https://kept.example' },
    ]);
    await pooled('/c');
    expect(seen.at(-1)).toEqual({ url: 'https://new.example/c', auth: 'Bearer t2-x' });
    expect(tokensAsked).toEqual(['x', 'x']);
    await pooled.pool.close();
  });
});

describe('fetch adapter: absolute URLs across setEndpoints', () => {
  test("an absolute URL under a base URL set later is served; one under a base URL set before still is (as a path)", async () => {
    const seen: string[] = [];
    const fakeFetch = async (input: string | URL | Request): Promise<Response> => {
      seen.push(String(input));
      return new Response('ok', { status: 200 });
    };
    const pooled = createPooledFetch({ endpoints: [{ url: 'https://old.example/v1', name: 'x' }], fetch: fakeFetch as typeof fetch });
    await pooled('https://old.example/v1/items?a=1');
    pooled.pool.setEndpoints([{ name: 'x', conn: 'https://new.example/v2' }]);
    await pooled('https://new.example/v2/items?a=2');
    await pooled('https://old.example/v1/items?a=3');
    await expect(pooled('https://elsewhere.example/items')).rejects.toThrow(/matches none/);
    expect(seen).toEqual(['https://old.example/v1/items?a=1', 'https://new.example/v2/items?a=2', 'https://new.example/v2/items?a=3']);
    await pooled.pool.close();
  });
});
