/**
 * What an adapter keeps about an endpoint goes when `setEndpoints` takes the endpoint out:
 * a pool whose nodes a Refresher swaps for days must not keep every one it ever had.
 *
 * Found by a churn run (thirty-sixth session: 15,000 swaps of two fresh `custom` nodes each):
 * the viem transport's heap grew by about 1 KB per swap (12 MB → 27 MB), each client keeping
 * the instance of every transport it had ever built in a `Map` keyed by the transport. Checked
 * here with weak references and a full collection (`gc` exposed for this file), so what is
 * checked is that nothing holds a replaced transport, not a heap figure.
 */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { createClient, custom, type Transport } from 'viem';
import { describe, expect, test } from 'vitest';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider, type RpcConnection } from '../src/ethers/index.js';
import { createPooledFetch } from '../src/fetch/index.js';
import { connectionOf } from '../src/rpc/connections.js';
import { loopbackScope } from './helpers/loopback.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const { server, made } = loopbackScope();

/** Collects until every reference in `refs` is cleared, or gives up after a few rounds (a turn of the event loop apart: V8 keeps a `WeakRef` target alive until the task that read it ends). */
async function collected(refs: readonly WeakRef<object>[]): Promise<number> {
  for (let i = 0; i < 10 && refs.some((r) => r.deref() !== undefined); i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
  }
  return refs.filter((r) => r.deref() !== undefined).length;
}

/** A node answering every method with its block number. */
function node(block: number): Transport {
  return custom({ request: async ({ method }: { method: string }) => (method === 'eth_chainId' ? '0x1' : `0x${block.toString(16)}`) });
}

/** A fresh endpoint whose transport `refs` watches (made here, so that no test scope holds it). */
function swapped(r: number, refs: WeakRef<object>[]): { name: string; conn: Transport } {
  const conn = node(100 + r);
  refs.push(new WeakRef(conn));
  return { name: `n${r}`, conn };
}

describe('viem: a transport setEndpoints replaced is not kept', () => {
  test.each([
    ['the pool builds the direct path itself', {}],
    ['with viem custom handed in', { custom }],
    ['with head-aware routing (its poll builds instances of its own)', { heads: { maxLagBlocks: 1, pollMs: 5 } }],
  ])('%s', async (_, extra) => {
    const stable = node(1);
    const t = poolTransport({ endpoints: [{ name: 'stable', transport: stable }], strategy: 'round-robin', ...extra });
    try {
      const client = createClient({ transport: t });
      const refs: WeakRef<object>[] = [];
      for (let r = 0; r < 20; r++) {
        t.pool.setEndpoints([{ name: 'stable', conn: stable }, swapped(r, refs)]);
        // Both endpoints serve (round-robin), so the client builds an instance of each.
        for (let i = 0; i < 4; i++) await client.request({ method: 'eth_blockNumber' });
        if ('heads' in extra) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      t.pool.setEndpoints([{ name: 'stable', conn: stable }]);
      for (let i = 0; i < 4; i++) await client.request({ method: 'eth_blockNumber' });
      const left = await collected(refs);
      expect(left).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe('ethers: a connection setEndpoints replaced is not kept', () => {
  test('twenty swaps of a node under new headers, each served', async () => {
    const s = await server((_req, res, body) => {
      const r = JSON.parse(body) as { id: number; method: string };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: r.id, result: r.method === 'eth_chainId' ? '0x1' : '0x2a' }));
    });
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: s.url, name: 'stable' }], network: 1, strategy: 'round-robin', attemptTimeoutMs: 5_000 });
    made.push(p);
    const stable = connectionOf(p.pool, 'stable')!;
    const refs: WeakRef<object>[] = [];
    for (let r = 0; r < 20; r++) {
      p.pool.setEndpoints([{ name: 'stable', conn: stable }, swappedRpc(r, s.url, refs)]);
      for (let i = 0; i < 4; i++) expect(await p.sendWith('eth_blockNumber', [])).toBe('0x2a');
    }
    p.pool.setEndpoints([{ name: 'stable', conn: stable }]);
    expect(await p.sendWith('eth_blockNumber', [])).toBe('0x2a');
    expect(await collected(refs)).toBe(0);
  });
});

/** A fresh connection (headers of its own, so not the one already held) that `refs` watches. */
function swappedRpc(r: number, url: string, refs: WeakRef<object>[]): { name: string; conn: RpcConnection } {
  const conn = { url, headers: { 'x-round': String(r) } };
  refs.push(new WeakRef(conn));
  return { name: `n${r}`, conn };
}

describe('fetch: the bearer token of an endpoint setEndpoints removed is forgotten', () => {
  test('a name that comes back asks getToken again; one that stayed keeps its token', async () => {
    const s = await server((_req, res) => res.end('ok'));
    const asked: string[] = [];
    const f = createPooledFetch({ endpoints: [{ url: s.url, name: 'a' }, { url: `${s.url}/b`, name: 'b' }], getToken: async (endpoint) => (asked.push(endpoint), `t-${endpoint}`), strategy: 'round-robin', attemptTimeoutMs: 5_000 });
    made.push(f);
    for (let i = 0; i < 4; i++) expect(await (await f('/x')).text()).toBe('ok');
    expect(asked.sort()).toEqual(['a', 'b']);
    f.pool.setEndpoints([{ name: 'b', conn: `${s.url}/b` }]);
    await f('/x');
    f.pool.setEndpoints([{ name: 'a', conn: s.url }, { name: 'b', conn: `${s.url}/b` }]);
    for (let i = 0; i < 4; i++) await f('/x');
    // Before, the token of `a` outlived its removal (one map entry per name ever seen).
    expect(asked.sort()).toEqual(['a', 'a', 'b']);
  });
});
