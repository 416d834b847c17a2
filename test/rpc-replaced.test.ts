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
import { connectionWatch } from '../src/rpc/connections.js';
import { HeadRouting } from '../src/rpc/head-poll.js';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';

const hex = (n: number): string => `0x${n.toString(16)}`;
const BALANCE = { method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] } as const;

/** A node at head `head.n`, logging `label:method` for each request; `refuses` answers -32601; answers after `slow.ms` on `slow.clock`. */
function node(label: string, head: { n: number }, log: string[], refuses: readonly string[] = [], slow?: { clock: FakeClock; ms: number }) {
  return custom({
    request: async ({ method }: { method: string }) => {
      log.push(`${label}:${method}`);
      if (slow !== undefined) await new Promise<void>((r) => slow.clock.setTimeout(r, slow.ms));
      if (refuses.includes(method)) throw Object.assign(new Error(`the method ${method} does not exist/is not available`), { code: -32601 });
      if (method === 'eth_blockNumber') return hex(head.n);
      if (method === 'eth_getBalance') return '0x1';
      if (method === 'eth_chainId') return '0x1';
      return '0x2';
    },
  });
}

describe('connectionWatch', () => {
  test('names the endpoints removed or given another connection, once; nothing while the set is unchanged', () => {
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'A' }, { name: 'b', conn: 'B' }, { name: 'c', conn: 'C' }], classify: () => 'transient', clock: new FakeClock(0) });
    const changed = connectionWatch(pool);
    expect(changed()).toBeUndefined();
    // Same connections under other settings: nothing; an endpoint removed: named.
    pool.setEndpoints([{ name: 'a', conn: 'A', weight: 2 }, { name: 'b', conn: 'B' }]);
    expect(changed()).toEqual(['c']);
    expect(changed()).toBeUndefined();
    // Added back (even with its old connection), and another replaced: only the replaced one is named now, `c` was before.
    pool.setEndpoints([{ name: 'a', conn: 'A2' }, { name: 'b', conn: 'B' }, { name: 'c', conn: 'C' }]);
    expect(changed()).toEqual(['a']);
    expect(changed()).toBeUndefined();
    // Two changes between looks: both named.
    pool.setEndpoints([{ name: 'a', conn: 'A3' }, { name: 'b', conn: 'B' }, { name: 'c', conn: 'C' }]);
    pool.setEndpoints([{ name: 'a', conn: 'A3' }, { name: 'b', conn: 'B2' }, { name: 'c', conn: 'C' }]);
    expect(changed()).toEqual(['a', 'b']);
  });
});

describe('heads: a replaced endpoint starts unknown and is asked for its head', () => {
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
    // The read asked the new node for its head (once); it is behind now.
    expect(log.filter((l) => l === 'a2:eth_blockNumber')).toHaveLength(1);
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

describe('a name added, then given another node before the routing layer looked at the set again', () => {
  // Swaps property, seed 2026120709: `s3` was added, a pinned eth_blockNumber (which consults no
  // routing) recorded its node's head, then `s3` was given a node 5 blocks behind. The next look
  // at the set compared it with the set from before `s3` existed, so nothing was replaced: the
  // new node kept the head of the old one and served reads of latest.
  test("heads: the new node does not keep the head the first one answered", async () => {
    const clock = new FakeClock(1_000_000);
    const front = { n: 5000 };
    const behind = { n: 4995 };
    const log: string[] = [];
    const a = node('a', front, log);
    const t = poolTransport({ endpoints: [{ name: 'a', transport: a }], heads: { maxLagBlocks: 0, blockTimeMs: 1000 }, clock });
    const client = createClient({ transport: t });
    await client.request({ method: 'eth_blockNumber' });
    expect(t.heads()!.endpoints.map((e) => [e.name, e.head])).toEqual([['a', 5000]]);
    t.pool.setEndpoints([{ name: 'a', conn: a }, { name: 'b', conn: node('b1', front, log) }]);
    // Pinned: no routing is consulted, but the answer is recorded.
    await createClient({ transport: t.pin('b') }).request({ method: 'eth_blockNumber' });
    t.pool.setEndpoints([{ name: 'a', conn: a }, { name: 'b', conn: node('b2', behind, log) }]);
    expect(t.heads()!.endpoints.map((e) => [e.name, e.head])).toEqual([['a', 5000]]);
    log.length = 0;
    for (let i = 0; i < 6; i++) await client.request(BALANCE as never);
    await clock.advance(0);
    // b2 was asked for its head once, and is behind: reads of latest stay on a (the first may
    // go to b2 before its answer: a node whose head is unknown is not left out).
    expect(log.filter((l) => l === 'b2:eth_blockNumber')).toHaveLength(1);
    expect(t.heads()!.endpoints.find((e) => e.name === 'b')).toEqual({ name: 'b', head: 4995, lagging: 'behind' });
    expect(log.filter((l) => l === 'b2:eth_getBalance').length).toBeLessThanOrEqual(1);
    await t.close();
  });

  test('unsupported: the new node is asked for the method the first one refused', async () => {
    const clock = new FakeClock(1_000_000);
    const head = { n: 1 };
    const log: string[] = [];
    const a = node('a', head, log);
    const t = poolTransport({ endpoints: [{ name: 'a', transport: a }], strategy: 'ordered', clock });
    const client = createClient({ transport: t });
    await expect(client.request({ method: 'eth_foo' } as never)).resolves.toBe('0x2');
    t.pool.setEndpoints([{ name: 'b', conn: node('b1', head, log, ['eth_foo']) }, { name: 'a', conn: a }]);
    // b1 refuses, a serves; b is remembered as refusing eth_foo.
    await expect(client.request({ method: 'eth_foo' } as never)).resolves.toBe('0x2');
    t.pool.setEndpoints([{ name: 'b', conn: node('b2', head, log) }, { name: 'a', conn: a }]);
    log.length = 0;
    await expect(client.request({ method: 'eth_foo' } as never)).resolves.toBe('0x2');
    expect(log).toEqual(['b2:eth_foo']);
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

  test('a name removed and added back later is a new node: what it refused is forgotten, even with a request between', async () => {
    const clock = new FakeClock(1_000_000);
    const head = { n: 1 };
    const log: string[] = [];
    const a = node('a', head, log, ['eth_foo']);
    const b = node('b', head, log, ['eth_foo']);
    const t = poolTransport({ endpoints: [{ name: 'a', transport: a }, { name: 'b', transport: b }], strategy: 'ordered', clock });
    const client = createClient({ transport: t });
    await expect(client.request({ method: 'eth_foo' } as never)).rejects.toThrow(/does not exist/);
    expect(log).toEqual(['a:eth_foo', 'b:eth_foo']);
    t.pool.setEndpoints([{ name: 'a', conn: a }]);
    // Refused unsent (a is remembered), which looks at the set.
    await expect(client.request({ method: 'eth_foo' } as never)).rejects.toThrow(/does not exist/);
    t.pool.setEndpoints([{ name: 'a', conn: a }, { name: 'b', conn: node('b2', head, log) }]);
    await expect(client.request({ method: 'eth_foo' } as never)).resolves.toBe('0x2');
    expect(log).toEqual(['a:eth_foo', 'b:eth_foo', 'b2:eth_foo']);
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

describe('answers in flight across a replacement count for the node that gave them, not for the name', () => {
  test("heads: a head the old node answered after it lost the name is not taken for the new node's", async () => {
    const clock = new FakeClock(1_000_000);
    const log: string[] = [];
    const tip = { n: 5000 };
    const b = node('b', tip, log);
    const t = poolTransport({
      endpoints: [{ name: 'a', transport: node('a', tip, log, [], { clock, ms: 100 }) }, { name: 'b', transport: b }],
      heads: { maxLagBlocks: 2, blockTimeMs: 1000 },
      strategy: 'ordered',
      clock,
    });
    const client = createClient({ transport: t });
    const inFlight = client.request({ method: 'eth_blockNumber' });
    await clock.advance(50);
    // `a` becomes a node far behind while its predecessor's answer is on the way.
    t.pool.setEndpoints([{ name: 'a', conn: node('a2', { n: 10 }, log) }, { name: 'b', conn: b }]);
    // Looked at since the swap: the name's old head is forgotten before the old answer comes.
    expect(t.heads()!.endpoints).toEqual([]);
    await clock.advance(60);
    await expect(inFlight).resolves.toBe(hex(5000));
    expect(t.heads()!.endpoints.find((e) => e.name === 'a')).toBeUndefined();
    await t.close();
  });

  test('unsupported: a refusal the old node gave after it lost the name is not held against the new node', async () => {
    const clock = new FakeClock(1_000_000);
    const log: string[] = [];
    const head = { n: 1 };
    const c = node('c', head, log, ['eth_foo']);
    const t = poolTransport({ endpoints: [{ name: 'a', transport: node('a', head, log, ['eth_foo'], { clock, ms: 100 }) }, { name: 'c', transport: c }], strategy: 'ordered', clock });
    const client = createClient({ transport: t });
    // c refuses eth_foo: remembered.
    await expect(createClient({ transport: t.pin('c') }).request({ method: 'eth_foo' } as never)).rejects.toThrow(/does not exist/);
    const inFlight = client.request({ method: 'eth_foo' } as never).then(() => 'served', (e: unknown) => String((e as Error).message));
    await clock.advance(50);
    t.pool.setEndpoints([{ name: 'a', conn: node('a2', head, log) }, { name: 'c', conn: c }]);
    // A call after the swap (which looks at the set) goes to the new node.
    await expect(client.request({ method: 'eth_foo' } as never)).resolves.toBe('0x2');
    await clock.advance(60);
    // The call in flight moves on to the node that has the name now (untried by it) ...
    expect(await inFlight).toBe('served');
    // ... and the next call goes there too, not refused unsent for the old node's refusal.
    await expect(client.request({ method: 'eth_foo' } as never)).resolves.toBe('0x2');
    expect(log).toEqual(['c:eth_foo', 'a:eth_foo', 'a2:eth_foo', 'a2:eth_foo', 'a2:eth_foo']);
    await t.close();
  });

  test("HeadRouting: the answer to a question asked before the name lost its node is dropped", async () => {
    const clock = new FakeClock(1_000_000);
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'A' }, { name: 'b', conn: 'B' }], classify: () => 'transient', clock });
    const answers: ((v: unknown) => void)[] = [];
    const routing = new HeadRouting({ maxLagBlocks: 2, blockTimeMs: 1000 }, pool, () => new Promise((r) => answers.push(r)), connectionWatch(pool));
    routing.observe('b', 'eth_blockNumber', [], hex(5000));
    // `a` is unknown: asked now.
    expect(routing.unfit('eth_getBalance', ['0x0', 'latest'])).toEqual([]);
    expect(answers).toHaveLength(1);
    pool.setEndpoints([{ name: 'a', conn: 'A2' }, { name: 'b', conn: 'B' }]);
    answers[0]!(hex(5000));
    await clock.advance(0);
    expect(routing.snapshot().endpoints.map((e) => e.name)).toEqual(['b']);
    // Asked again (the new node), and its answer counts.
    expect(routing.unfit('eth_getBalance', ['0x0', 'latest'])).toEqual([]);
    expect(answers).toHaveLength(2);
    answers[1]!(hex(10));
    await clock.advance(0);
    expect(routing.snapshot().endpoints.find((e) => e.name === 'a')).toEqual({ name: 'a', head: 10, lagging: 'behind' });
    routing.stop();
    await pool.close();
  });
});

describe('filters: a filter lives on the node that made it, not under its name', () => {
  /** A node numbering its filters from 0x1; changes name the node. */
  function filterNode(label: string, log: string[]) {
    let next = 1;
    return custom({
      request: async ({ method, params }: { method: string; params?: unknown[] }) => {
        log.push(`${label}:${method}`);
        if (method === 'eth_newBlockFilter') return hex(next++);
        if (method === 'eth_getFilterChanges') return [`${label}:${String(params?.[0])}`];
        return '0x1';
      },
    });
  }

  test("a name given another node: the filter's requests are answered 'filter not found', never by the new node's filter of that id", async () => {
    const clock = new FakeClock(1_000_000);
    const log: string[] = [];
    const a = filterNode('a', log);
    const t = poolTransport({ endpoints: [{ name: 'a', transport: a }], clock });
    const client = createClient({ transport: t });
    const id = await client.request({ method: 'eth_newBlockFilter' });
    expect(await client.request({ method: 'eth_getFilterChanges', params: [id] } as never)).toEqual(['a:0x1']);
    // The new node has a filter 0x1 of its own (another client's).
    const a2 = filterNode('a2', log);
    t.pool.setEndpoints([{ name: 'a', conn: a2 }]);
    await createClient({ transport: t.pin('a') }).request({ method: 'eth_newBlockFilter' });
    log.length = 0;
    await expect(client.request({ method: 'eth_getFilterChanges', params: [id] } as never)).rejects.toThrow(/filter not found/);
    expect(log).toEqual([]);
    // The old node back under its name, with its connection: its filter is reached again.
    t.pool.setEndpoints([{ name: 'a', conn: a }]);
    expect(await client.request({ method: 'eth_getFilterChanges', params: [id] } as never)).toEqual(['a:0x1']);
    await t.close();
  });
});
