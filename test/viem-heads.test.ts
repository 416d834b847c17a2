import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http } from 'viem';
import { poolTransport } from '../src/viem/index.js';
import { startNode, type Node } from './helpers/ganache.js';

let a: Node; let b: Node;
beforeAll(async () => { a = await startNode(); b = await startNode(); });
afterAll(async () => { await a?.kill(); await b?.kill(); });

async function raw(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  return ((await r.json()) as { result: unknown }).result;
}

async function scenario(heads: boolean): Promise<{ bad: number; total: number }> {
  const t = poolTransport({ endpoints: [{ url: a.url, name: 'a' }, { url: b.url, name: 'b' }], http, strategy: 'round-robin', ...(heads ? { heads: { maxLagBlocks: 1 } } : {}) })({});
  for (let i = 0; i < 4; i++) await t.request({ method: 'eth_blockNumber' }); // learn both heads
  const head = (await raw(a.url, 'eth_blockNumber')) as string;
  let bad = 0; const total = 40;
  for (let i = 0; i < total; i++) {
    try {
      const blk = await t.request({ method: 'eth_getBlockByNumber', params: [head, false] });
      if (blk === null) bad++;
    } catch { bad++; }
  }
  await (t.value as { pool: { close(): Promise<void> } }).pool.close();
  return { bad, total };
}

describe('head-aware routing on ganache (one node lags)', () => {
  it('reads of a new block never miss with heads on, and do without', async () => {
    for (let i = 0; i < 5; i++) await raw(a.url, 'evm_mine');
    const off = await scenario(false);
    const on = await scenario(true);
    console.log(`heads off: ${off.bad}/${off.total} missing; heads on: ${on.bad}/${on.total}`);
    expect(off.bad).toBeGreaterThan(0);
    expect(on.bad).toBe(0);
  }, 30_000);
});
