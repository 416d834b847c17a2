/**
 * `pool.close()` ends what extras keep running beside the pool, at once: the RPC adapters' head
 * poll (viem and ethers, closed through the adapter or on its `pool` directly). Before the
 * forty-first session the poll went on until its next tick was refused with `CLOSED`: a
 * background timer left pending for up to `pollMs` after close.
 * The Refresher's part is in refresher.test.ts.
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';

const POLL_MS = 60_000;

function viemSetup(clock: FakeClock) {
  const node = custom({ request: async ({ method }: { method: string }) => (method === 'eth_blockNumber' ? '0x64' : '0x1') });
  return poolTransport({ endpoints: [{ name: 'a', transport: node }, { name: 'b', transport: node }], heads: { maxLagBlocks: 2, pollMs: POLL_MS }, clock });
}

function ethersSetup(clock: FakeClock) {
  const fetch = async (_url: string, init: { body: string }) => {
    const body = JSON.parse(init.body) as { id: unknown; method: string };
    const result = body.method === 'eth_blockNumber' ? '0x64' : '0x1';
    return { status: 200, ok: true, headers: new Headers(), text: async () => JSON.stringify({ jsonrpc: '2.0', id: body.id, result }) };
  };
  return new PooledJsonRpcProvider({ network: 1, fetch, clock, heads: { maxLagBlocks: 2, pollMs: POLL_MS }, endpoints: [{ url: 'https://a.example/rpc', name: 'a' }, { url: 'https://b.example/rpc', name: 'b' }] });
}

describe("pool.close() ends the head poll at once (it used to wait for the poll's next tick)", () => {
  test('viem: closing transport.pool directly leaves no timer, and no poll is sent after', async () => {
    const clock = new FakeClock(1_000_000);
    const t = viemSetup(clock);
    const client = createClient({ transport: t });
    await client.request({ method: 'eth_chainId' });
    await clock.advance(1); // the first poll
    expect(t.heads()!.endpoints.map((e) => e.head)).toEqual([100, 100]);
    // The poll's timer, and the pool's own (its attempt timeouts, stopped once close() has no call left).
    const before = clock.pendingTimers;
    const closing = t.pool.close();
    expect(clock.pendingTimers).toBe(before - 1);
    await closing;
    expect(clock.pendingTimers).toBe(0);
    const polled = t.pool.stats().map((s) => s.successes);
    await clock.advance(3 * POLL_MS);
    expect(t.pool.stats().map((s) => s.successes)).toEqual(polled);
  });

  test('ethers: closing provider.pool directly leaves no timer of the poll', async () => {
    const clock = new FakeClock(1_000_000);
    const p = ethersSetup(clock);
    try {
      await expect(p.sendWith('eth_chainId', [])).resolves.toBe('0x1');
      await clock.advance(1);
      expect(p.heads()!.endpoints.map((e) => e.head)).toEqual([100, 100]);
      const before = clock.pendingTimers;
      const closing = p.pool.close();
      // The poll's timer goes at once; the pool's own once close() has no call left (ethers' own polling is not on this clock).
      expect(clock.pendingTimers).toBe(before - 1);
      await closing;
      expect(clock.pendingTimers).toBe(0);
    } finally {
      p.destroy();
    }
  });

  test('a transport built on a closed pool arms no poll', async () => {
    const clock = new FakeClock(1_000_000);
    const t = viemSetup(clock);
    await t.pool.close();
    expect(clock.pendingTimers).toBe(0);
    const again = viemSetup(clock);
    await again.close();
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('requests after close()', () => {
  test("ethers: sendWith fails CLOSED; the provider's ethers methods fail as ethers fails a destroyed provider's", async () => {
    const clock = new FakeClock(1_000_000);
    const p = ethersSetup(clock);
    expect(await p.sendWith('eth_chainId', [])).toBe('0x1');
    await p.close();
    await expect(p.sendWith('eth_chainId', [])).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(p.send('eth_chainId', [])).rejects.toMatchObject({ code: 'UNSUPPORTED_OPERATION' });
    await expect(p.getBlockNumber()).rejects.toMatchObject({ code: 'UNSUPPORTED_OPERATION' });
  });

  test('viem: every request fails CLOSED, on the plain path and through quorum(2)', async () => {
    const clock = new FakeClock(1_000_000);
    const t = viemSetup(clock);
    await t.close();
    for (const transport of [t, t.quorum(2), t.pin('a')]) {
      await expect(createClient({ transport }).request({ method: 'eth_chainId' })).rejects.toMatchObject({ code: 'CLOSED' });
    }
  });
});
