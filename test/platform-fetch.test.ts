/**
 * A runtime's own `fetch` checks its receiver: workerd and browsers throw "Illegal invocation"
 * when it is called as a method of another object (`options.fetch(url)`). Both adapters that
 * call a `fetch` (the global one or one handed in) must call it as a plain function. Found by
 * the ethers adapter's smoke in workerd (scripts/runtimes/workerd.mjs --rpc), where every
 * request failed with that TypeError, classed permanent.
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { createPooledFetch } from '../src/fetch/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';

/** A `fetch` that accepts only the receivers a platform's does: none, or the global object. */
function platformFetch(answer: (body: string) => unknown) {
  const calls: unknown[] = [];
  const f = function (this: unknown, _url: unknown, init?: RequestInit): Promise<Response> {
    calls.push(this);
    if (this !== undefined && this !== globalThis) return Promise.reject(new TypeError('Illegal invocation: function called with incorrect `this` reference.'));
    return Promise.resolve(new Response(JSON.stringify(answer(String(init?.body ?? ''))), { headers: { 'content-type': 'application/json' } }));
  };
  return { fetch: f as unknown as typeof fetch, calls };
}

const rpcAnswer = (body: string) => {
  const msg = JSON.parse(body) as { id: number } | { id: number }[];
  const one = (m: { id: number }) => ({ jsonrpc: '2.0', id: m.id, result: '0x10' });
  return Array.isArray(msg) ? msg.map(one) : one(msg);
};

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("a platform's fetch, which refuses another receiver", () => {
  /** One `eth_blockNumber` through a provider made with `fetch` (undefined: the global one), after `before` ran. */
  async function blockNumber(fetch: typeof globalThis.fetch | undefined, before: () => void = () => undefined): Promise<void> {
    const p = new PooledJsonRpcProvider({ endpoints: [{ name: 'a', url: 'http://a.test' }], network: 1, maxAttempts: 1, ...(fetch === undefined ? {} : { fetch }) });
    before();
    try {
      await expect(p.send('eth_blockNumber', [])).resolves.toBe('0x10');
    } finally {
      await p.close();
    }
  }

  test('ethers: a fetch handed in is called as a plain function', async () => {
    const f = platformFetch(rpcAnswer);
    await blockNumber(f.fetch);
    expect(f.calls.length).toBeGreaterThan(0);
  });

  test('ethers: the global fetch is looked up per request (a stub installed after construction is used) and called with an accepted receiver', async () => {
    const f = platformFetch(rpcAnswer);
    await blockNumber(undefined, () => vi.stubGlobal('fetch', f.fetch));
    expect(f.calls.length).toBeGreaterThan(0);
  });

  test('pooled fetch: a fetch handed in, and the global one, are called with an accepted receiver', async () => {
    const given = platformFetch(() => 'ok');
    const a = createPooledFetch({ endpoints: ['http://a.test'], fetch: given.fetch, maxAttempts: 1 });
    expect(await (await a('/x')).json()).toBe('ok');
    const global = platformFetch(() => 'ok');
    vi.stubGlobal('fetch', global.fetch);
    const b = createPooledFetch({ endpoints: ['http://b.test'], maxAttempts: 1 });
    expect(await (await b('/x')).json()).toBe('ok');
    expect(given.calls.length + global.calls.length).toBe(2);
    await a.pool.close();
    await b.pool.close();
  });
});
