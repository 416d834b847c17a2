/**
 * An endpoint `setEndpoints` gives another connection under the same name (a Refresher swapping
 * a provider's URL, a key rotated into a new transport) is a new node: what the RPC layer had
 * learned of the old one (its head, the methods it refused) is forgotten, as the pool forgets
 * its breaker. A node behind used to inherit its predecessor's head and serve reads of latest
 * (its lower answers ignored) until it stalled; a node that serves a method its predecessor
 * refused stayed left out of that method for ten minutes.
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { Pool } from '../src/index.js';
import { connectionWatch } from '../src/pool.js';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';

const hex = (n: number): string => `0x${n.toString(16)}`;
const BALANCE = { method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] } as const;

/** A node at head `head.n`, logging `label:method` for each request; `refuses` answers -32601. */
function node(label: string, head: { n: number }, log: string[], refuses: readonly string[] = []) {
  return custom({
    request: async ({ method }: { method: string }) => {
      log.push(`${label}:${method}`);
      if (refuses.includes(method)) throw Object.assign(new Error(`the method ${method} does not exist/is not available`), { code: -32601 });
      if (method === 'eth_blockNumber') return hex(head.n);
      if (method === 'eth_getBalance') return '0x1';
      if (method === 'eth_chainId') return '0x1';
      return '0x2';
    },
  });
}

describe('connectionWatch', () => {
  test('names only the endpoints given another connection, once; nothing while the set is unchanged', () => {
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'A' }, { name: 'b', conn: 'B' }, { name: 'c', conn: 'C' }], classify: () => 'transient', clock: new FakeClock(0) });
    const changed = connectionWatch(pool);
    expect(changed()).toBeUndefined();
    // Same connections, other settings and an endpoint removed: nothing replaced.
    pool.setEndpoints([{ name: 'a', conn: 'A', weight: 2 }, { name: 'b', conn: 'B' }]);
    expect(changed()).toBeUndefined();
    pool.setEndpoints([{ name: 'a', conn: 'A2' }, { name: 'b', conn: 'B' }, { name: 'c', conn: 'C' }]);
    expect(changed()).toEqual(['a']);
    expect(changed()).toBeUndefined();
    // Two changes between looks: both named.
    pool.setEndpoints([{ name: 'a', conn: 'A3' }, { name: 'b', conn: 'B' }, { name: 'c', conn: 'C' }]);
    pool.setEndpoints([{ name: 'a', conn: 'A3' }, { name: 'b', conn: 'B2' }, { name: 'c', conn: 'C' }]);
    expect(changed()).toEqual(['a', 'b']);
  });
});

describe('heads: a replaced endpoint starts unknown, is asked for its head and left out of reads of latest until it answers', () => {
  test.each([[undefined], [1000]])('a node far behind under a known name is left out of reads of latest after one question (block time %s)', async (blockTimeMs) => {
    const clock = new FakeClock(1_000_000);
    const front = { n: 5000 };
    const behind = { n: 10 };
    const log: string[] = [];
    const b = node('b', front, log);
    const t = poolTransport({
      endpoints: [{ name: 'a', transport: node('a', front, log) }, { name: 'b', transport: b }],
      heads: { maxLagBlocks: 2, ...(blockTimeMs !== undefined ? { blockTimeMs } : {}) },
      strategy: 'round-robin',
      clock,
    });
    const client = createClient({ transport: t });
    for (let i = 0; i < 2; i++) await client.request({ method: 'eth_blockNumber' });
    expect(t.heads()!.endpoints.map((e) => [e.name, e.head])).toEqual([['a', 5000], ['b', 5000]]);
    // `a` becomes a node still syncing.
    t.pool.setEndpoints([{ name: 'a', conn: node('a2', behind, log) }, { name: 'b', conn: b }]);
    expect(t.heads()!.endpoints.map((e) => e.name)).toEqual(['b']);
    log.length = 0;
    await client.request(BALANCE as never);
    await clock.advance(0);
    // The read asked the new node for its head (once) and did not go to it: its head unknown,
    // it is left out of reads of latest until it answers; it is behind now.
    expect(log.filter((l) => l === 'a2:eth_blockNumber')).toHaveLength(1);
    expect(log).not.toContain('a2:eth_getBalance');
    expect(t.heads()!.endpoints.find((e) => e.name === 'a')).toEqual({ name: 'a', head: 10, lagging: 'behind' });
    log.length = 0;
    for (let i = 0; i < 10; i++) await client.request(BALANCE as never);
    expect(log.filter((l) => l === 'a2:eth_getBalance')).toEqual([]);
    expect(log.filter((l) => l === 'b:eth_getBalance')).toHaveLength(10);
    await t.close();
  });

  test('once a head is known, an endpoint whose head is not is asked once a block time at most, until it answers', async () => {
    const clock = new FakeClock(1_000_000);
    const head = { n: 100 };
    const log: string[] = [];
    const t = poolTransport({
      endpoints: [{ name: 'a', transport: node('a', head, log) }, { name: 'b', transport: node('b', head, log) }],
      heads: { blockTimeMs: 1000 },
      strategy: 'ordered',
      clock,
    });
    const client = createClient({ transport: t });
    await client.request({ method: 'eth_blockNumber' });
    // `a` answered; `b` is unknown: the next read asks it.
    await client.request(BALANCE as never);
    await clock.advance(0);
    expect(log.filter((l) => l === 'b:eth_blockNumber')).toHaveLength(1);
    expect(t.heads()!.endpoints.map((e) => e.name)).toEqual(['a', 'b']);
    // Known now: reads ask nothing more.
    for (let i = 0; i < 5; i++) await client.request(BALANCE as never);
    await clock.advance(0);
    expect(log.filter((l) => l.endsWith(':eth_blockNumber'))).toHaveLength(2);
    await t.close();
  });
});

describe('unsupported: what a replaced endpoint refused is forgotten', () => {
  test('the new node under the name is asked for the method its predecessor refused', async () => {
    const clock = new FakeClock(1_000_000);
    const head = { n: 1 };
    const log: string[] = [];
    const t = poolTransport({ endpoints: [{ name: 'a', transport: node('a', head, log, ['eth_foo']) }], clock });
    const client = createClient({ transport: t });
    await expect(client.request({ method: 'eth_foo' } as never)).rejects.toThrow(/does not exist/);
    // Remembered: refused again unsent.
    await expect(client.request({ method: 'eth_foo' } as never)).rejects.toThrow(/does not exist/);
    expect(log).toEqual(['a:eth_foo']);
    t.pool.setEndpoints([{ name: 'a', conn: node('a2', head, log) }]);
    await expect(client.request({ method: 'eth_foo' } as never)).resolves.toBe('0x2');
    expect(log).toEqual(['a:eth_foo', 'a2:eth_foo']);
    await t.close();
  });

  test('the same connection under new settings keeps the memory', async () => {
    const clock = new FakeClock(1_000_000);
    const log: string[] = [];
    const conn = node('a', { n: 1 }, log, ['eth_foo']);
    const t = poolTransport({ endpoints: [{ name: 'a', transport: conn }], clock });
    const client = createClient({ transport: t });
    await expect(client.request({ method: 'eth_foo' } as never)).rejects.toThrow(/does not exist/);
    t.pool.setEndpoints([{ name: 'a', conn, weight: 3 }]);
    await expect(client.request({ method: 'eth_foo' } as never)).rejects.toThrow(/does not exist/);
    expect(log).toEqual(['a:eth_foo']);
    await t.close();
  });
});
