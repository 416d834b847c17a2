/**
 * Head-aware routing across `setEndpoints`: the heads of endpoints that left the pool are
 * forgotten (a removed endpoint's name in `exclude` is an error), and a lagging endpoint comes
 * back once it has caught up, with no poll.
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport, type HeadOptions, type PoolTransportOptions } from '../src/viem/index.js';

const hex = (n: number): string => `0x${n.toString(16)}`;

/** A node whose head is `heads[name]`; logs who was asked what. */
function nodes(heads: Record<string, number>, log: string[]) {
  return (name: string) =>
    custom({
      request: async ({ method }: { method: string }) => {
        log.push(`${name}:${method}`);
        if (method === 'eth_blockNumber') return hex(heads[name]!);
        if (method === 'eth_getBalance') return '0x1';
        if (method === 'eth_chainId') return '0x1';
        throw new Error(`unexpected ${method}`);
      },
    });
}


/**
 * Nodes a, b, c at `heads` (d too when given) under a viem transport with head routing and the
 * fake clock, a client on it, and the head learned from each (three reads of eth_blockNumber).
 */
async function started(heads: Record<string, number>, heading: HeadOptions, more: Partial<PoolTransportOptions> = {}) {
  const clock = new FakeClock(1_000_000);
  const log: string[] = [];
  const node = nodes(heads, log);
  const t = poolTransport({ endpoints: ['a', 'b', 'c'].map((name) => ({ name, transport: node(name) })), heads: heading, strategy: 'round-robin', clock, ...more });
  const client = createClient({ transport: t });
  for (let i = 0; i < 3; i++) await client.request({ method: 'eth_blockNumber' });
  return { clock, log, node, t, client };
}

describe('a head far off', () => {
  test("one wrong head in an answer (far ahead of every other node's) holds the reads of latest only until that node answers again, and goes with the node when setEndpoints takes it out", async () => {
    const heads: Record<string, number> = { a: 100, b: 100, c: 100 };
    const { log, node, t, client } = await started(heads, { maxLagBlocks: 2, blockTimeMs: 1000 });
    const balances = async (n: number) => {
      log.length = 0;
      for (let i = 0; i < n; i++) await client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] });
      return [...new Set(log.filter((x) => x.endsWith('eth_getBalance')).map((x) => x.split(':')[0]))].sort();
    };
    expect(await balances(6)).toEqual(['a', 'b', 'c']);
    // c answers once with a head 2^40 blocks on (an overflow, another chain behind its load balancer).
    heads['c'] = 2 ** 40;
    for (let i = 0; i < 3 && t.heads()!.best !== 2 ** 40; i++) await client.request({ method: 'eth_blockNumber' });
    heads['c'] = 100;
    expect(await balances(3)).toEqual(['c']);
    // Its next answer with a head puts it back among the others: before the forty-second session c kept
    // the wrong head, and every read of latest went to c for good.
    for (let i = 0; i < 3 && t.heads()!.best !== 100; i++) await client.request({ method: 'eth_blockNumber' });
    expect(t.heads()!.best).toBe(100);
    expect(await balances(6)).toEqual(['a', 'b', 'c']);
    // And a wrong head goes with its node.
    heads['c'] = 2 ** 40;
    for (let i = 0; i < 3 && t.heads()!.best !== 2 ** 40; i++) await client.request({ method: 'eth_blockNumber' });
    expect(t.heads()!.best).toBe(2 ** 40);
    heads['c'] = 100;
    t.pool.setEndpoints(['a', 'b'].map((name) => ({ name, conn: node(name) })) as never);
    expect(await balances(4)).toEqual(['a', 'b']);
    expect(t.heads()!.best).toBe(100);
    await t.pool.close();
  });
});

describe('a head far off, with reads that reveal none', () => {
  test('the node that gave it is asked again once a stall time while the others look behind: with no poll, and reads of balances only, its wrong head held every read of latest for good', async () => {
    const heads: Record<string, number> = { a: 100, b: 100, c: 2 ** 40 };
    const { clock, log, t, client } = await started(heads, { maxLagBlocks: 2, blockTimeMs: 1000, stallBlocks: 3 });
    heads['c'] = 100;
    expect(t.heads()!.best).toBe(2 ** 40);
    const served = new Set<string>();
    for (let ms = 0; ms < 5_000; ms += 250) {
      log.length = 0;
      await client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] });
      if (ms >= 4_000) for (const x of log) if (x.endsWith('eth_getBalance')) served.add(x.split(':')[0]!);
      await clock.advance(250);
    }
    expect(t.heads()!.best).toBe(100);
    expect([...served].sort()).toEqual(['a', 'b', 'c']);
    await t.pool.close();
  });
});

describe('heads and setEndpoints', () => {
  test('a lagging endpoint removed from the pool is no longer named: the next read succeeds and heads() lists the endpoints of the pool', async () => {
    const { node, t, client } = await started({ a: 100, b: 100, c: 90 }, { maxLagBlocks: 2 });
    expect(t.heads()!.endpoints.map((e) => [e.name, e.lagging])).toEqual([['a', undefined], ['b', undefined], ['c', 'behind']]);
    t.pool.setEndpoints(['a', 'b'].map((name) => ({ name, conn: node(name) })) as never);
    await expect(client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] })).resolves.toBe('0x1');
    expect(t.heads()!.endpoints.map((e) => e.name)).toEqual(['a', 'b']);
    await t.pool.close();
  });

  test('the set changing while the head check asks an endpoint (a listener of attempt-start removing one, synchronously): the read goes on, never INVALID_OPTIONS (fortieth session: found by the swaps generator acting from inside requests)', async () => {
    let removeOn: string | undefined;
    const { clock, node, t, client } = await started({ a: 100, b: 100, c: 90, d: 100 }, { maxLagBlocks: 2, blockTimeMs: 1000 }, {
      onEvent: (e) => {
        // A dashboard that takes an endpoint out when it is asked anything (say, its key was revoked meanwhile).
        if (e.type === 'attempt-start' && e.endpoint === removeOn) {
          removeOn = undefined;
          t.pool.setEndpoints(['a', 'b', 'd'].map((name) => ({ name, conn: node(name) })) as never);
        }
      },
    });
    expect(t.heads()!.endpoints.find((e) => e.name === 'c')!.lagging).toBe('behind');
    // c is behind (excluded from reads of latest) and is asked for its head again after a stall time;
    // that ask removes c from the pool, synchronously, while the read is being routed.
    await clock.advance(3_000);
    removeOn = 'c';
    await expect(client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] })).resolves.toBe('0x1');
    expect(removeOn).toBeUndefined();
    expect(t.pool.endpointNames).toEqual(['a', 'b', 'd']);
    await t.pool.close();
  });

  test('an endpoint the "unsupported" memory leaves out of a method, removed while the head check asks another: the request goes on, never INVALID_OPTIONS', async () => {
    const clock = new FakeClock(1_000_000);
    const heads: Record<string, number> = { a: 100, b: 100, c: 90 };
    const asked: string[] = [];
    const node = (name: string) =>
      custom({
        request: async ({ method }: { method: string }) => {
          asked.push(`${name}:${method}`);
          if (method === 'eth_blockNumber') return hex(heads[name]!);
          if (method === 'eth_foo') {
            if (name === 'b') throw Object.assign(new Error('the method eth_foo does not exist/is not available'), { code: -32601 });
            return '0xf00';
          }
          throw new Error(`unexpected ${method}`);
        },
      });
    let removeOn: string | undefined;
    const t = poolTransport({
      endpoints: ['b', 'a', 'c'].map((name) => ({ name, transport: node(name) })),
      heads: { maxLagBlocks: 2, blockTimeMs: 1000 },
      strategy: 'ordered',
      clock,
      onEvent: (e) => {
        if (e.type === 'attempt-start' && e.endpoint === removeOn) {
          removeOn = undefined;
          t.pool.setEndpoints(['a', 'c'].map((name) => ({ name, conn: node(name) })) as never);
        }
      },
    });
    const client = createClient({ transport: t });
    for (let i = 0; i < 3; i++) await client.request({ method: 'eth_blockNumber' });
    // b (first in order) refuses eth_foo: remembered, and the next eth_foo leaves b out.
    await client.request({ method: 'eth_foo' as never, params: [] as never }, { retryCount: 0 }).catch(() => undefined);
    expect(asked).toContain('b:eth_foo');
    asked.length = 0;
    await client.request({ method: 'eth_foo' as never, params: [] as never }, { retryCount: 0 });
    expect(asked).not.toContain('b:eth_foo');
    // c is behind and asked for its head again after a stall time; that ask removes b while eth_foo is routed.
    await clock.advance(3_000);
    removeOn = 'c';
    await expect(client.request({ method: 'eth_foo' as never, params: [] as never }, { retryCount: 0 })).resolves.toBe('0xf00');
    expect(removeOn).toBeUndefined();
    expect(t.pool.endpointNames).toEqual(['a', 'c']);
    await t.pool.close();
  });

  test.each([[1000], [undefined]])('with no poll, a lagging endpoint that caught up comes back: asked for its head once a stall time while the front stands still, 10 s while the block time is unknown (block time %s ms given)', async (blockTimeMs) => {
    const heads: Record<string, number> = { a: 100, b: 100, c: 90 };
    const { clock, log, t, client } = await started(heads, { maxLagBlocks: 2, ...(blockTimeMs !== undefined ? { blockTimeMs } : {}) });
    expect(t.heads()!.endpoints.find((e) => e.name === 'c')!.lagging).toBe('behind');
    // The front stands still (no head advances): asked once a stall time, 3 block times (10 s
    // before the block time is known: its stall time then, 30 s, is a guess).
    const every = blockTimeMs !== undefined ? 3 * blockTimeMs : 10_000;
    const askedAt: number[] = [];
    let firstRead: number | undefined;
    for (let ms = 0; ms < 3.5 * every; ms += every / 10) {
      if (ms === 1.5 * every) heads.c = 100;
      const before = log.length;
      await client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] });
      await clock.advance(every / 10);
      for (const entry of log.slice(before)) {
        if (entry === 'c:eth_blockNumber') askedAt.push(ms);
        if (entry === 'c:eth_getBalance') firstRead ??= ms;
      }
    }
    // Asked before the loop (its head unknown once a's was known: 90), then at 1 and 2 stall
    // times (90, then 100 since 1.5); not again once it is no longer lagging.
    expect(askedAt).toEqual([every, 2 * every]);
    expect(firstRead).toBeGreaterThan(2 * every);
    expect(firstRead).toBeLessThan(2.5 * every);
    expect(t.heads()!.endpoints.map((e) => [e.name, e.head, e.lagging])).toEqual([['a', 100, undefined], ['b', 100, undefined], ['c', 100, undefined]]);
    await t.pool.close();
  });

  test('with a poll and nothing lagging, nothing is asked beyond the poll; a lagging endpoint is asked once a stall time besides while the front stands still', async () => {
    for (const lagging of [false, true]) {
      const clock = new FakeClock(1_000_000);
      const heads: Record<string, number> = { a: 100, b: 100, c: lagging ? 90 : 100 };
      const log: string[] = [];
      const node = nodes(heads, log);
      const t = poolTransport({ endpoints: ['a', 'b', 'c'].map((name) => ({ name, transport: node(name) })), heads: { maxLagBlocks: 2, pollMs: 5000, blockTimeMs: 1000 }, strategy: 'round-robin', clock });
      const client = createClient({ transport: t });
      await clock.advance(0);
      for (let ms = 0; ms < 4000; ms += 100) {
        await client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] });
        await clock.advance(100);
      }
      // The poll at 0; then, when lagging (and heard from since the front last moved), the
      // questions at 0 and at 3 s, a stall time later.
      expect(log.filter((e) => e === 'c:eth_blockNumber')).toHaveLength(lagging ? 3 : 1);
      expect(log.filter((e) => e === 'a:eth_blockNumber')).toHaveLength(1);
      expect(log.filter((e) => e === 'c:eth_getBalance').length > 0).toBe(!lagging);
      await t.pool.close();
    }
  });
});

describe('a lagging endpoint while the front moves', () => {
  test('asked once a block time while what is known of it predates the front; back within a block time of catching up', async () => {
    const clock = new FakeClock(1_000_000);
    const start = clock.now();
    const heads: Record<string, number> = { a: 100, b: 100, c: 90 };
    const log: string[] = [];
    const node = nodes(heads, log);
    const t = poolTransport({ endpoints: ['a', 'b', 'c'].map((name) => ({ name, transport: node(name) })), heads: { maxLagBlocks: 2, blockTimeMs: 1000 }, strategy: 'round-robin', clock });
    const client = createClient({ transport: t });
    const askedAt: number[] = [];
    let back: number | undefined;
    for (let ms = 0; ms < 6000; ms += 100) {
      // The front advances a block a second; c, 10 behind, catches up at 3.5 s.
      const tip = 100 + Math.floor(ms / 1000);
      heads.a = tip;
      heads.b = tip;
      heads.c = ms >= 3500 ? tip : tip - 10;
      const before = log.length;
      await client.request({ method: 'eth_blockNumber' });
      await clock.advance(100);
      for (const entry of log.slice(before)) if (entry === 'c:eth_blockNumber') askedAt.push(ms);
      if (back === undefined && t.heads()!.endpoints.find((e) => e.name === 'c')?.lagging === undefined && ms >= 3500) back = ms;
    }
    expect(clock.now() - start).toBe(6000);
    // Asked at 100 ms, its head unknown once a's was known (10 behind: never served a read of
    // latest), then once a block time while the front moves on, until it has caught up (3.5 s):
    // back at 4.1 s.
    expect(askedAt.filter((ms) => ms < 4300)).toEqual([100, 1100, 2100, 3100, 4100]);
    expect(back).toBe(4100);
    await t.pool.close();
  });
});

describe('heads compared at one instant', () => {
  test('with no poll and maxLagBlocks 0, a node one block behind never passes the node at the tip by being asked later: the front is asked with it', async () => {
    const clock = new FakeClock(1_000_000);
    const heads: Record<string, number> = { a: 100, b: 99 };
    const log: string[] = [];
    const node = nodes(heads, log);
    const t = poolTransport({ endpoints: ['a', 'b'].map((name) => ({ name, transport: node(name) })), heads: { maxLagBlocks: 0, blockTimeMs: 1000 }, strategy: 'round-robin', clock });
    const client = createClient({ transport: t });
    const served: string[] = [];
    for (let ms = 0; ms < 30_000; ms += 2000) {
      // a at the tip, b a block behind; a read of latest every two blocks, revealing no head.
      heads.a = 100 + ms / 1000;
      heads.b = heads.a - 1;
      if (ms === 0) await client.request({ method: 'eth_blockNumber' });
      const before = log.length;
      await client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] });
      for (const entry of log.slice(before)) if (entry.endsWith(':eth_getBalance')) served.push(`${ms}:${entry.split(':')[0]}`);
      await clock.advance(2000);
    }
    // Once both heads are known, b is a block behind at every comparison: a serves every read.
    // (Before, b's answer to the question it is asked as a lagging node was compared with a's
    // answer of two blocks earlier, a looked behind, and the two took turns.)
    const late = served.filter((s) => Number(s.split(':')[0]) >= 4000);
    expect(late.length).toBeGreaterThan(10);
    expect(late.filter((s) => s.endsWith(':b'))).toEqual([]);
    expect(t.heads()!.endpoints.map((e) => [e.name, e.lagging])).toEqual([['a', undefined], ['b', 'behind']]);
    await t.pool.close();
  });

  test('the others not lagging are asked with the front: a node a block late is not left out as stalled for want of news', async () => {
    const clock = new FakeClock(1_000_000);
    const heads: Record<string, number> = { a: 100, b: 100, c: 99, d: 97 };
    const log: string[] = [];
    const node = nodes(heads, log);
    const t = poolTransport({ endpoints: ['a', 'b', 'c', 'd'].map((name) => ({ name, transport: node(name) })), heads: { maxLagBlocks: 2, blockTimeMs: 1000 }, strategy: 'round-robin', clock });
    const client = createClient({ transport: t });
    const verdicts: string[] = [];
    for (let ms = 0; ms < 60_000; ms += 2000) {
      // a and b at the tip, c a block late, d three behind (lagging, asked once a block time);
      // a read every two blocks, revealing no head: c's news comes only from questions.
      heads.a = heads.b = 100 + ms / 1000;
      heads.c = heads.a - 1;
      heads.d = heads.a - 3;
      if (ms === 0) await client.request({ method: 'eth_blockNumber' });
      if (ms >= 4000) verdicts.push(String(t.heads()!.endpoints.find((e) => e.name === 'c')!.lagging));
      await client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] });
      await clock.advance(2000);
    }
    // c is never lagging. (Before, the front asked with d moved the best head past c and c's
    // head went stale: it looked behind at 7 of the 28 reads; in seed 2026120708 of the heads
    // property, with a block time of 250 ms, it looked stalled at one read in two.)
    expect(verdicts).toHaveLength(28);
    expect(verdicts.filter((v) => v !== 'undefined')).toEqual([]);
    await t.pool.close();
  });
});
