/**
 * Regressions found by the sixth round's generators (test/faults/generated6.test.ts):
 * filters through the RPC adapters (src/rpc/filters.ts).
 *
 * F1: a filter's eth_getFilterChanges went wherever the strategy sent it: under round-robin
 *     (or after one failed attempt under `ordered`) another node answered, with "filter not
 *     found", or with a filter of its own that has the same id (nodes numbering 0x1, 0x2...).
 * F2: a node that restarted and handed a filter's id to a new filter: the old id got the
 *     new filter's changes; now "filter not found" (viem: InvalidInputRpcError).
 * F3: the filter's endpoint left the pool: "filter not found", never another node.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { createPublicClient, custom, InvalidInputRpcError } from 'viem';
import { mainnet } from 'viem/chains';
import { poolTransport } from '../../src/viem/index.js';
import { PooledJsonRpcProvider } from '../../src/ethers/index.js';
import { FilterNode, nodeFetch, nodeProvider, type NodePlan } from './filters.js';

const HEALTHY: NodePlan = { ids: 'sequential', faultRate: 0, faults: ['transient'] };
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

function viemOver(nodes: FilterNode[], options: Record<string, unknown> = {}) {
  const transports = nodes.map((n) => custom(nodeProvider(n), { retryCount: 0 }));
  const t = poolTransport({ endpoints: nodes.map((n, i) => ({ name: n.name, transport: transports[i]! })), custom, backoff: { initialMs: 1, maxMs: 2 }, ...options });
  closers.push(() => t.close());
  const client = createPublicClient({ chain: mainnet, transport: t, pollingInterval: 5 });
  return { t, client, transports, request: (method: string, params: unknown[] = []) => client.request({ method, params } as never) as Promise<unknown> };
}

function ethersOver(nodes: FilterNode[], options: Record<string, unknown> = {}) {
  const fetch = nodeFetch(nodes);
  const p = new PooledJsonRpcProvider({ endpoints: nodes.map((n) => ({ name: n.name, url: `http://node.test/${n.name}` })), network: 1, fetch, backoff: { initialMs: 1, maxMs: 2 }, ...options });
  closers.push(() => p.close());
  return p;
}

/** Two healthy nodes numbering their filters from 0x1, each already holding a filter 0x1 of someone else's. */
function twoNodes(): FilterNode[] {
  const nodes = [new FilterNode('a', HEALTHY, Math.random), new FilterNode('b', HEALTHY, Math.random)];
  return nodes;
}

describe('F1: a filter stays on the node that made it', () => {
  test('viem, round-robin: every getFilterChanges of the filter is its own node\'s answer', async () => {
    const nodes = twoNodes();
    nodes[1]!.handle('eth_newBlockFilter', []); // another client's 0x1 on b
    const { client } = viemOver(nodes, { strategy: 'round-robin' });
    const filter = await client.createBlockFilter();
    const serial = nodes[0]!.created.at(-1)!.serial;
    for (let i = 0; i < 4; i++) expect(await client.getFilterChanges({ filter })).toEqual([`serial:${serial}`]);
    await client.uninstallFilter({ filter });
    expect(nodes[1]!.uninstalled).toEqual([]); // b's own filter 0x1 is still there
    expect(nodes[1]!.requests.filter((r) => r.method !== 'eth_newBlockFilter')).toEqual([]);
  });

  test('viem, ordered, one failed attempt: the retry stays on the filter\'s node', async () => {
    let fail = 0;
    const a = new FilterNode('a', HEALTHY, Math.random);
    const b = new FilterNode('b', HEALTHY, Math.random);
    b.handle('eth_newBlockFilter', []);
    const flaky = { handle: (m: string, p: readonly unknown[]) => (m === 'eth_getFilterChanges' && fail-- > 0 ? (() => { throw Object.assign(new Error('internal error'), { code: -32603 }); })() : a.handle(m, p)) };
    const { request } = viemOver([Object.assign(Object.create(a), flaky) as FilterNode, b]);
    const id = await request('eth_newBlockFilter');
    fail = 1;
    expect(await request('eth_getFilterChanges', [id])).toEqual([`serial:${a.created.at(-1)!.serial}`]);
    expect(b.requests.map((r) => r.method)).toEqual(['eth_newBlockFilter']);
  });

  test('viem watchPendingTransactions under round-robin hears its filter every poll', async () => {
    const nodes = twoNodes();
    nodes[1]!.handle('eth_newPendingTransactionFilter', []);
    const { client } = viemOver(nodes, { strategy: 'round-robin' });
    const heard: string[] = [];
    const errors: unknown[] = [];
    await new Promise<void>((resolve) => {
      const stop = client.watchPendingTransactions({
        poll: true,
        pollingInterval: 5,
        onTransactions: (hashes) => {
          heard.push(...hashes);
          if (heard.length >= 4) (stop(), resolve());
        },
        onError: (e) => void errors.push(e),
      });
    });
    const own = `serial:${nodes[0]!.created.at(-1)!.serial}`;
    expect(new Set(heard)).toEqual(new Set([own]));
    expect(errors).toEqual([]);
  });

  test('ethers, round-robin: send(eth_getFilterChanges) reaches the filter\'s node only', async () => {
    const nodes = twoNodes();
    nodes[1]!.handle('eth_newFilter', [{}]);
    const p = ethersOver(nodes, { strategy: 'round-robin' });
    const id = await p.send('eth_newFilter', [{}]);
    const serial = nodes[0]!.created.at(-1)!.serial;
    for (let i = 0; i < 4; i++) expect(await p.send('eth_getFilterChanges', [id])).toEqual([`serial:${serial}`]);
    expect(await p.send('eth_uninstallFilter', [id])).toBe(true);
    // A use after the uninstall is still its node's to answer (not b's filter 0x1).
    await expect(p.send('eth_getFilterChanges', [id])).rejects.toThrow(/filter not found \(node a\)/);
    expect(nodes[1]!.uninstalled).toEqual([]);
  });

  test('two nodes hand out the same id: the second filter gets the pool\'s own id, both answer', async () => {
    const nodes = twoNodes();
    const { request } = viemOver(nodes, { strategy: 'round-robin' });
    const first = await request('eth_newBlockFilter');
    const second = await request('eth_newBlockFilter');
    expect(first).toBe('0x1');
    expect(second).not.toBe('0x1');
    expect(await request('eth_getFilterChanges', [first])).toEqual([`serial:${nodes[0]!.created[0]!.serial}`]);
    expect(await request('eth_getFilterChanges', [second])).toEqual([`serial:${nodes[1]!.created[0]!.serial}`]);
    expect(nodes[1]!.requests.filter((r) => r.method === 'eth_getFilterChanges').map((r) => r.id)).toEqual(['0x1']);
  });
});

describe('F2, F3: a filter that is gone is answered "filter not found"', () => {
  test('F2: the node restarted and gave the id to a new filter (viem: InvalidInputRpcError)', async () => {
    const a = new FilterNode('a', HEALTHY, Math.random);
    const { request } = viemOver([a]);
    const old = await request('eth_newBlockFilter');
    (a as unknown as { plan: NodePlan }).plan = { ids: 'sequential', faultRate: 1, faults: ['restart'] };
    const fresh = await request('eth_newBlockFilter'); // the node restarted, then made 0x1 again
    (a as unknown as { plan: NodePlan }).plan = HEALTHY;
    expect(fresh).not.toBe(old);
    await expect(request('eth_getFilterChanges', [old])).rejects.toBeInstanceOf(InvalidInputRpcError);
    expect(await request('eth_getFilterChanges', [fresh])).toEqual([`serial:${a.created.at(-1)!.serial}`]);
  });

  test('F3: its endpoint left the pool (viem: InvalidInputRpcError; ethers: code -32000), no other node asked, and back again', async () => {
    const nodes = twoNodes();
    const v = viemOver(nodes);
    const id = await v.request('eth_newBlockFilter');
    v.t.pool.setEndpoints([{ name: 'b', conn: v.transports[1]! }]);
    await expect(v.request('eth_getFilterChanges', [id])).rejects.toBeInstanceOf(InvalidInputRpcError);
    expect(nodes[1]!.requests).toEqual([]);
    v.t.pool.setEndpoints([{ name: 'a', conn: v.transports[0]! }, { name: 'b', conn: v.transports[1]! }]);
    expect(await v.request('eth_getFilterChanges', [id])).toEqual([`serial:${nodes[0]!.created.at(-1)!.serial}`]);

    const e = twoNodes();
    const p = ethersOver(e);
    const eid = await p.send('eth_newBlockFilter', []);
    p.pool.setEndpoints([{ name: 'b', conn: { url: 'http://node.test/b' } }]);
    const err = await p.send('eth_getFilterChanges', [eid]).catch((x: unknown) => x);
    expect((err as { error?: { code?: number } }).error?.code).toBe(-32000);
    expect(e[1]!.requests).toEqual([]);
  });
});
