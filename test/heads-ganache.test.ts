/**
 * Head-aware routing on real ganache nodes (127.0.0.1), through both RPC adapters.
 *
 * Four independent chains driven block by block by the test: A leads, B follows in
 * lockstep, L lags (kept 5 blocks behind A: blocks are mined on the others first) and S
 * stalls (mines in lockstep, then stops). Reads of `latest` and of the newest block must
 * never come back "not found" (null) or further behind than `maxLagBlocks`, and once S has
 * stalled for `stallBlocks` block times it must be left out even while it is within
 * `maxLagBlocks`. Real time is scaled from the measured timer lag; every loop is bounded.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { http } from 'viem';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import type { HeadSnapshot } from '../src/rpc/heads.js';
import { startNode, type Node } from './helpers/ganache.js';
import { timerLag } from './helpers/lag.js';

const SLOW = 180_000;
let A: Node; let B: Node; let L: Node; let S: Node;
/** The block time of the scenario and the poll period, from the measured timer lag. */
let T = 0; let POLL = 0;

beforeAll(async () => {
  [A, B, L, S] = await Promise.all([startNode(), startNode(), startNode(), startNode()]);
  const lag = await timerLag();
  T = Math.max(200, Math.ceil(40 * lag));
  POLL = Math.ceil(T / 5);
}, SLOW);
afterAll(async () => { await Promise.all([A, B, L, S].map((n) => n?.kill())); }, SLOW);

async function raw(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  return ((await r.json()) as { result: unknown }).result;
}
const num = async (url: string) => Number.parseInt((await raw(url, 'eth_blockNumber')) as string, 16);
const hex = (n: number) => `0x${n.toString(16)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Mines on A, B (and S unless stalled), then on L until it is `lagBy` behind A. */
async function step(stalled: boolean, lagBy = 5): Promise<number> {
  await Promise.all([A, B, ...(stalled ? [] : [S])].map((n) => raw(n.url, 'evm_mine')));
  const head = await num(A.url);
  while ((await num(L.url)) < head - lagBy) await raw(L.url, 'evm_mine');
  return head;
}

/** Brings every chain to the same start: A, B, S at `base`, L at `base - 5`. */
async function reset(): Promise<void> {
  const target = Math.max(6, ...(await Promise.all([A, B, S].map((n) => num(n.url))))) + 1;
  for (const n of [A, B, S]) while ((await num(n.url)) < target) await raw(n.url, 'evm_mine');
  while ((await num(L.url)) < target - 5) await raw(L.url, 'evm_mine');
}

interface Client {
  rpc(method: string, params: unknown[]): Promise<unknown>;
  heads(): HeadSnapshot | undefined;
  close(): Promise<void>;
}

const endpoints = () => [{ name: 'A', url: A.url }, { name: 'B', url: B.url }, { name: 'L', url: L.url }, { name: 'S', url: S.url }];

function viemClient(heads: object | undefined): Client {
  const t = poolTransport({ endpoints: endpoints(), http, strategy: 'round-robin', ...(heads === undefined ? {} : { heads }) });
  const i = t({});
  return { rpc: (method, params) => i.request({ method, params }), heads: () => t.heads(), close: () => t.close() };
}

function ethersClient(heads: object | undefined): Client {
  const p = new PooledJsonRpcProvider({ endpoints: endpoints(), network: 1337, strategy: 'round-robin', ...(heads === undefined ? {} : { heads }) });
  return { rpc: (method, params) => p.send(method, params), heads: () => p.heads(), close: () => p.close() };
}

const MAKERS = { viem: viemClient, ethers: ethersClient } as const;

/** Waits (bounded) until `ok()` holds; false if it never did. */
async function until(ok: () => boolean, maxMs: number): Promise<boolean> {
  const end = performance.now() + maxMs;
  while (!ok()) {
    if (performance.now() > end) return false;
    await sleep(Math.max(5, POLL / 4));
  }
  return true;
}

describe.each(Object.keys(MAKERS) as (keyof typeof MAKERS)[])('%s: head poll', (kind) => {
  const make = MAKERS[kind];

  test('knows every head before any caller request, so the first reads of the newest block never miss', async () => {
    await reset();
    const head = await num(A.url);
    const run = async (pollMs: number) => {
      const c = make({ maxLagBlocks: 2, pollMs });
      if (pollMs > 0) expect(await until(() => (c.heads()?.endpoints.length ?? 0) === 4, 50 * POLL)).toBe(true);
      let missing = 0;
      for (let i = 0; i < 12; i++) if ((await c.rpc('eth_getBlockByNumber', [hex(head), false])) === null) missing++;
      const snap = c.heads();
      await c.close();
      return { missing, snap };
    };
    const answersOnly = await run(0);
    const polled = await run(POLL);
    console.log(`${kind}: first 12 reads of block ${head}: answers only ${answersOnly.missing} null, with the poll ${polled.missing}`);
    expect(answersOnly.missing).toBeGreaterThan(0);
    expect(polled.missing).toBe(0);
    expect(polled.snap?.endpoints.find((e) => e.name === 'L')?.lagging).toBe('behind');
  }, SLOW);

  test('one lags, one stalls: no "not found", nothing staler than maxLagBlocks, the stalled one left out within maxLagBlocks', async () => {
    const scenario = async (stallBlocks: number) => {
      await reset();
      const maxLagBlocks = 3;
      const c = make({ maxLagBlocks, stallBlocks, pollMs: POLL });
      expect(await until(() => (c.heads()?.endpoints.length ?? 0) === 4, 50 * POLL)).toBe(true);
      const out = { reads: 0, missing: 0, errors: 0, tooStale: 0, staleInWindow: 0, flaggedAtLag: undefined as number | undefined };
      const STOP = 3;
      for (let s = 1; s <= 8; s++) {
        const started = performance.now();
        const head = await step(s >= STOP);
        expect(await until(() => c.heads()?.best === head, 50 * POLL)).toBe(true);
        const sLag = head - (await num(S.url));
        // S has stopped long enough to count as stalled (stallBlocks block times) but is within maxLagBlocks.
        const window = sLag >= 2 && sLag <= maxLagBlocks;
        if (window && stallBlocks < 100) {
          await until(() => c.heads()?.endpoints.find((e) => e.name === 'S')?.lagging !== undefined, 3 * T);
        }
        const reason = c.heads()?.endpoints.find((e) => e.name === 'S')?.lagging;
        if (reason !== undefined && out.flaggedAtLag === undefined) out.flaggedAtLag = sLag;
        for (let i = 0; i < 6; i++) {
          try {
            out.reads += 3;
            if ((await c.rpc('eth_getBlockByNumber', [hex(head), false])) === null) out.missing++;
            for (const n of [
              Number.parseInt((await c.rpc('eth_blockNumber', [])) as string, 16),
              Number.parseInt(((await c.rpc('eth_getBlockByNumber', ['latest', false])) as { number: string }).number, 16),
            ]) {
              if (n < head - maxLagBlocks) out.tooStale++;
              if (window && n < head) out.staleInWindow++;
            }
          } catch {
            out.errors++;
          }
        }
        await sleep(Math.max(0, T - (performance.now() - started)));
      }
      await c.close();
      return out;
    };
    const on = await scenario(1.5);
    const off = await scenario(1e6);
    console.log(`${kind}: stall detection on ${JSON.stringify(on)}; off ${JSON.stringify(off)} (T ${T} ms, poll ${POLL} ms)`);
    for (const r of [on, off]) {
      expect(r.missing).toBe(0);
      expect(r.errors).toBe(0);
      expect(r.tooStale).toBe(0);
    }
    expect(on.flaggedAtLag).toBeLessThanOrEqual(3);
    expect(on.staleInWindow).toBe(0);
    expect(off.staleInWindow).toBeGreaterThan(0);
  }, SLOW);
});
