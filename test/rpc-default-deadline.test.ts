/**
 * A quorum read through the viem adapter on the pool's default deadline (no `deadlineMs` of
 * its own): the adapter hands the pool to its read layer, so the read as a whole ends by that
 * deadline, however late its last leg started (bench/notes/fuzz2.md R3, bench/notes/gaps.md fix 1).
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';

describe("quorum reads on the pool's default deadline, through poolTransport", () => {
  test('every node hangs: legs stall at 50 ms and a third starts, and the read still fails at 100 ms', async () => {
    const clock = new FakeClock(1_000_000);
    const hanging = { request: () => new Promise<never>(() => undefined) };
    const t = poolTransport({
      endpoints: ['a', 'b', 'c'].map((name) => ({ name, transport: custom(hanging) })),
      quorum: { methods: { eth_blockNumber: 2 }, stallMs: 50 },
      deadlineMs: 100,
      attemptTimeoutMs: 1000,
      maxAttempts: 1,
      clock,
    });
    let settled: number | undefined;
    let error: unknown;
    void createClient({ transport: t })
      .request({ method: 'eth_blockNumber' })
      .catch((e: unknown) => {
        error = e;
        settled = clock.now();
      });
    await clock.advance(99);
    expect(settled).toBeUndefined();
    await clock.advance(1);
    expect(settled).toBe(1_000_100);
    expect(error).toMatchObject({ code: 'QUORUM_NOT_MET' });
    expect(t.readStats().quorumReads).toBe(1);
    await t.pool.close();
  });
});
