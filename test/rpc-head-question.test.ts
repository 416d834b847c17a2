/**
 * Head-aware routing asks each endpoint one head question at a time. In a pool with no deadline
 * and no attempt timeout, a question whose transport never settled kept that endpoint's head
 * unknown for good (its next poll and every recheck were skipped as "still out"). Since the
 * forty-first session such a question carries a deadline of its own (30 s) when the pool has none.
 */
import { custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';

describe('a head question that never settles, in a pool with no bound', () => {
  test('the endpoint is asked again after the question deadline, and its head is learned', async () => {
    const clock = new FakeClock(1_000_000);
    let bAsked = 0;
    const node = (name: string) =>
      custom({
        request: async ({ method }: { method: string }) => {
          if (method !== 'eth_blockNumber') return '0x1';
          // b's first answer never comes (a transport with no timeout of its own, ignoring the signal).
          if (name === 'b' && bAsked++ === 0) return new Promise(() => undefined);
          return '0x64';
        },
      });
    const t = poolTransport({
      endpoints: [{ name: 'a', transport: node('a') }, { name: 'b', transport: node('b') }],
      heads: { maxLagBlocks: 2, pollMs: 1_000 },
      attemptTimeoutMs: Infinity,
      deadlineMs: Infinity,
      clock,
    });
    try {
      await clock.advance(1);
      expect(t.heads()!.endpoints.map((e) => [e.name, e.head])).toEqual([['a', 100]]); // b not heard from
      await clock.advance(20_000);
      expect(bAsked).toBe(1); // still out: not asked again meanwhile
      await clock.advance(11_000);
      expect(bAsked).toBeGreaterThan(1);
      expect(t.heads()!.endpoints.map((e) => [e.name, e.head])).toEqual([['a', 100], ['b', 100]]);
    } finally {
      void t.pool.close();
    }
  });
});

describe('a head question out when the pool closes', () => {
  // The poll's own questions serve no caller: a plain close() waited for one until its attempt
  // timed out (swaps generator, seed 42760: a question to a new node held by its slow chain question).
  test.each(['transport.close()', 'pool.close()'] as const)('%s resolves once the callers are done, the question aborted', async (how) => {
    const clock = new FakeClock(1_000_000);
    const node = (name: string) =>
      custom({
        request: async ({ method }: { method: string }) => {
          if (method !== 'eth_blockNumber') return '0x1';
          // b's answer to its head question takes ten seconds.
          if (name === 'b') await new Promise<void>((r) => clock.setTimeout(r, 10_000));
          return '0x64';
        },
      });
    const t = poolTransport({
      endpoints: [{ name: 'a', transport: node('a') }, { name: 'b', transport: node('b') }],
      heads: { maxLagBlocks: 2, pollMs: 1_000 },
      attemptTimeoutMs: 20_000,
      clock,
    });
    await clock.advance(1);
    expect(t.pool.stats().find((s) => s.name === 'b')!.inFlight).toBe(1); // b's question is out
    let closed = false;
    void (how === 'pool.close()' ? t.pool.close() : t.close()).then(() => (closed = true));
    await clock.advance(0);
    expect(closed).toBe(true);
    expect(t.pool.stats().find((s) => s.name === 'b')!.inFlight).toBe(0);
  });
});
