/**
 * `provider.setEndpoints`: the ethers provider's set given as its options give it. An endpoint
 * whose URL and headers equal one the pool has (a new object or not) keeps its state; other
 * headers or a URL that left and came back make a new endpoint.
 */
import { describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import { FakeClock } from '../src/testing/index.js';

const A = 'https://a.example/rpc';
const B = 'https://b.example/rpc';
const C = 'https://c.example/rpc';

function setup() {
  const up: Record<string, boolean> = { [A]: false, [B]: true, [C]: true };
  const calls: string[] = [];
  const fetch = async (url: string, init: { body: string }) => {
    calls.push(url);
    if (!up[url]) throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    const body = JSON.parse(init.body) as { id: unknown };
    return { status: 200, ok: true, headers: new Headers(), text: async () => JSON.stringify({ jsonrpc: '2.0', id: body.id, result: '0x1' }) };
  };
  const provider = new PooledJsonRpcProvider({
    network: 1,
    fetch,
    clock: new FakeClock(1_000_000),
    strategy: 'ordered',
    breaker: { threshold: 1, cooldownMs: 60_000 },
    endpoints: [{ url: A, name: 'a' }, { url: B, name: 'b' }],
  });
  const stat = (name: string) => provider.pool.stats().find((s) => s.name === name)!;
  return { provider, calls, stat };
}

describe('PooledJsonRpcProvider.setEndpoints', () => {
  test('a list made anew keeps the state of every URL it had; a new one is a new endpoint', async () => {
    const { provider, calls, stat } = setup();
    try {
      await expect(provider.sendWith('eth_chainId', [])).resolves.toBe('0x1');
      expect(stat('a').breaker.state).toBe('open');
      provider.setEndpoints([{ url: A, name: 'a' }, { url: B, name: 'b' }, { url: C, name: 'c' }]);
      expect(stat('a').breaker.state).toBe('open');
      expect(stat('a').failures).toBe(1);
      expect(stat('b').successes).toBe(1);
      calls.length = 0;
      await provider.sendWith('eth_chainId', []);
      expect(calls).toEqual([B]);
      // Other headers: another endpoint, its breaker fresh.
      provider.setEndpoints([{ url: A, name: 'a', headers: { authorization: 'Bearer k2' } }, { url: B, name: 'b' }]);
      expect(stat('a').breaker.state).toBe('closed');
      expect(stat('b').successes).toBe(2);
    } finally {
      await provider.close();
    }
  });

  test('a bad entry is refused naming it, and the set is left as it was', async () => {
    const { provider } = setup();
    try {
      let error: unknown;
      try {
        provider.setEndpoints([{ url: B, name: 'b' }, { url: 'not a url', name: 'x' }]);
      } catch (e) {
        error = e;
      }
      expect(isPoolError(error) && error.code === 'INVALID_OPTIONS').toBe(true);
      expect((error as Error).message).toContain('endpoints[1].url');
      expect(provider.pool.endpointNames).toEqual(['a', 'b']);
      provider.setEndpoints([{ url: B }], undefined);
      expect(provider.pool.endpointNames).toEqual(['b.example']);
    } finally {
      await provider.close();
    }
  });
});
