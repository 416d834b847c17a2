/**
 * Head-aware routing decides a read's exclusions when the read starts; an attempt that starts
 * later (a retry after a hung first attempt) asks again, so a node that fell behind meanwhile,
 * or one `setEndpoints` put under a name the read had not left out, is refused before anything
 * is sent to it (swaps generator, seed 42621: a read waited 1.6 s on a node's chain question,
 * and its retry went to a node 5 blocks behind that had replaced another after the read began).
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import type { PoolEvent } from '../src/index.js';

const hex = (n: number): string => `0x${n.toString(16)}`;
const ZERO = '0x0000000000000000000000000000000000000000';

/** A node whose head is `heads[key]`; `a`'s balances never come back. Logs who was asked for a balance. */
function node(key: string, heads: Record<string, number>, log: string[]) {
  return custom({
    request: ({ method }: { method: string }) => {
      if (method === 'eth_blockNumber') return Promise.resolve(hex(heads[key]!));
      if (method === 'eth_chainId') return Promise.resolve('0x1');
      if (method === 'eth_getBalance') {
        log.push(key);
        return key === 'a' ? new Promise<never>(() => {}) : Promise.resolve(hex(heads[key]!));
      }
      return Promise.reject(new Error(`unexpected ${method}`));
    },
  });
}

async function setup(more: { maxAttempts?: number } = {}) {
  const clock = new FakeClock(1_000_000);
  const heads: Record<string, number> = { a: 100, b: 100, c: 100, late: 90 };
  const log: string[] = [];
  const events: PoolEvent[] = [];
  const conns: Record<string, ReturnType<typeof node>> = { a: node('a', heads, log), b: node('b', heads, log), c: node('c', heads, log) };
  const t = poolTransport({
    endpoints: ['a', 'b', 'c'].map((name) => ({ name, transport: conns[name]! })),
    heads: { maxLagBlocks: 2, blockTimeMs: 250, pollMs: 250 },
    strategy: 'ordered',
    attemptTimeoutMs: 1000,
    deadlineMs: 5000,
    clock,
    onEvent: (e) => events.push(e),
    ...more,
  });
  const client = createClient({ transport: t });
  await clock.advance(1); // the first poll: every head known
  expect(t.heads()!.endpoints.map((e) => [e.name, e.lagging])).toEqual([['a', undefined], ['b', undefined], ['c', undefined]]);
  return { clock, heads, log, events, t, client, conns };
}

/** Moves the chain on by `n` blocks at every node but those in `stays`, a poll after each. */
async function blocks(s: Awaited<ReturnType<typeof setup>>, n: number, stays: string[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    for (const k of ['a', 'b', 'c']) if (!stays.includes(k)) s.heads[k]! += 1;
    await s.clock.advance(250);
  }
}

const refusals = (events: PoolEvent[]) =>
  events.flatMap((e) => (e.type === 'attempt-failure' && (e.error as Error).name === 'NodeBehindError' ? [[e.endpoint, (e.error as Error).message]] : []));

describe('a read whose later attempt lands on a node behind', () => {
  test('a node that fell behind while the first attempt hung is passed over: the retry goes to one at the tip, and nothing is refused', async () => {
    const s = await setup();
    const read = s.client.request({ method: 'eth_getBalance', params: [ZERO, 'latest'] });
    // While a's attempt hangs, b stops at 100 and a, c go on to 104: b is 4 blocks behind.
    await blocks(s, 4, ['b']);
    expect(s.t.heads()!.endpoints.find((e) => e.name === 'b')!.lagging).toBe('behind');
    await s.clock.advance(1000);
    expect(Number(await read)).toBe(s.heads['c']);
    expect(s.log).toEqual(['a', 'c']);
    // Before the forty-ninth session the retry picked b and refused it, spending an attempt.
    expect(refusals(s.events)).toEqual([]);
    await s.t.close();
  });

  test('a node put under a name by setEndpoints after the read began, once known behind, is passed over too', async () => {
    const s = await setup();
    const read = s.client.request({ method: 'eth_getBalance', params: [ZERO, 'latest'] });
    s.t.pool.setEndpoints([
      { name: 'a', conn: s.conns['a']! },
      { name: 'b', conn: node('late', s.heads, s.log) },
      { name: 'c', conn: s.conns['c']! },
    ]);
    await blocks(s, 2, []);
    expect(s.t.heads()!.endpoints.find((e) => e.name === 'b')).toMatchObject({ head: 90, lagging: 'behind' });
    await s.clock.advance(1000);
    expect(Number(await read)).toBe(s.heads['c']);
    expect(s.log).toEqual(['a', 'c']);
    expect(refusals(s.events)).toEqual([]);
    await s.t.close();
  });

  test("the call's last attempt goes to the node at the tip too (maxAttempts: 2, the first hung): before the forty-ninth session the node behind served it, stale", async () => {
    const s = await setup({ maxAttempts: 2 });
    const read = s.client.request({ method: 'eth_getBalance', params: [ZERO, 'latest'] });
    await blocks(s, 4, ['b']);
    await s.clock.advance(1000);
    expect(Number(await read)).toBe(104);
    expect(s.log).toEqual(['a', 'c']);
    expect(refusals(s.events)).toEqual([]);
    await s.t.close();
  });

  test('a method that needs no head (eth_chainId) goes to a node behind as to any, first in order', async () => {
    const s = await setup();
    await blocks(s, 4, ['a']);
    expect(s.t.heads()!.endpoints.find((e) => e.name === 'a')!.lagging).toBe('behind');
    s.events.length = 0;
    expect(await s.client.request({ method: 'eth_chainId' })).toBe('0x1');
    // Only a is asked: the request, and routing's own head question to a lagging node.
    expect([...new Set(s.events.flatMap((e) => (e.type === 'attempt-start' ? [e.endpoint] : [])))]).toEqual(['a']);
    await s.t.close();
  });

  test('with no other node able to serve, the node behind still serves (as when the read was routed)', async () => {
    const s = await setup();
    const read = s.client.request({ method: 'eth_getBalance', params: [ZERO, 'latest'] });
    // b and c both stop: only a (hung) is at the tip.
    await blocks(s, 4, ['b', 'c']);
    await s.clock.advance(1000);
    expect(Number(await read)).toBe(100);
    expect(s.log).toEqual(['a', 'b']);
    expect(refusals(s.events)).toEqual([]);
    await s.t.close();
  });
});

describe('the same through the ethers provider (per-call retry counts)', () => {
  const urls = { a: 'https://a.example/rpc', b: 'https://b.example/rpc', c: 'https://c.example/rpc' } as const;
  function ethersSetup() {
    const clock = new FakeClock(1_000_000);
    const heads: Record<string, number> = { a: 100, b: 100, c: 100 };
    const log: string[] = [];
    const events: PoolEvent[] = [];
    const fetch = (url: string, init: { body: string }) => {
      const key = Object.entries(urls).find(([, u]) => u === url)![0];
      const body = JSON.parse(init.body) as { id: unknown; method: string };
      const answer = (result: string) => Promise.resolve({ status: 200, ok: true, headers: new Headers(), text: async () => JSON.stringify({ jsonrpc: '2.0', id: body.id, result }) });
      if (body.method === 'eth_getBalance') {
        log.push(key);
        if (key === 'a') return new Promise<never>(() => {});
      }
      return answer(hex(heads[key]!));
    };
    const provider = new PooledJsonRpcProvider({
      network: 1,
      fetch,
      clock,
      strategy: 'ordered',
      attemptTimeoutMs: 1000,
      deadlineMs: 5000,
      heads: { maxLagBlocks: 2, blockTimeMs: 250, pollMs: 250 },
      onEvent: (e) => events.push(e),
      endpoints: Object.entries(urls).map(([name, url]) => ({ name, url })),
    });
    return { clock, heads, log, events, provider };
  }

  // Before the forty-ninth session the first retried on c after refusing b, the second took b's stale answer.
  for (const [retry, served, refused] of [[undefined, 'c', []], [{ maxAttempts: 2 }, 'c', []]] as const) {
    test(`retry ${JSON.stringify(retry)}: the retry goes to ${served}`, async () => {
      const s = ethersSetup();
      try {
        await s.clock.advance(1);
        const read = s.provider.sendWith('eth_getBalance', [ZERO, 'latest'], retry === undefined ? {} : { retry });
        for (let i = 0; i < 4; i++) {
          s.heads['a']! += 1;
          s.heads['c']! += 1;
          await s.clock.advance(250);
        }
        await s.clock.advance(1000);
        expect(Number(await read)).toBe(s.heads[served]);
        expect(s.log).toEqual(['a', served]);
        expect(refusals(s.events).map(([name]) => name)).toEqual(refused);
      } finally {
        await s.provider.close();
      }
    });
  }

  test('an endpoint the caller excluded is no reason to refuse: with it the only other at the tip, the node behind serves', async () => {
    const s = ethersSetup();
    try {
      await s.clock.advance(1);
      const read = s.provider.sendWith('eth_getBalance', [ZERO, 'latest'], { exclude: ['c'] });
      for (let i = 0; i < 4; i++) {
        s.heads['a']! += 1;
        s.heads['c']! += 1;
        await s.clock.advance(250);
      }
      await s.clock.advance(1000);
      expect(Number(await read)).toBe(100);
      expect(s.log).toEqual(['a', 'b']);
      expect(refusals(s.events)).toEqual([]);
    } finally {
      await s.provider.close();
    }
  });
});

describe('a refusal sends nothing, so it tells nothing of the node', () => {
  for (const [maxAttempts, refused, after] of [[undefined, ['b'], 'half-open'], [2, [], 'closed']] as const) test(maxAttempts === undefined ? "a half-open probe refused stays a probe to make: the node's breaker is not closed by it" : "a half-open probe on the call's last attempt is not refused: the node behind serves, and its breaker closes", async () => {
    const clock = new FakeClock(1_000_000);
    const heads: Record<string, number> = { a: 100, b: 100, c: 100 };
    const log: string[] = [];
    let bFails = false;
    let cLimited = false;
    const events: PoolEvent[] = [];
    const conn = (key: string) =>
      custom({
        request: ({ method }: { method: string }) => {
          if (method === 'eth_blockNumber') return Promise.resolve(hex(heads[key]!));
          log.push(`${key}:${method}`);
          if (key === 'b' && bFails) return Promise.reject(Object.assign(new Error('internal error'), { code: -32603 }));
          if (key === 'c' && cLimited) return Promise.reject(Object.assign(new Error('limit exceeded'), { code: -32005 }));
          if (key === 'a') return new Promise<never>(() => {});
          return Promise.resolve(hex(heads[key]!));
        },
      });
    const t = poolTransport({
      endpoints: ['a', 'b', 'c'].map((name) => ({ name, transport: conn(name) })),
      heads: { maxLagBlocks: 2, blockTimeMs: 250 },
      strategy: 'ordered',
      attemptTimeoutMs: 1000,
      breaker: { threshold: 1, cooldownMs: 500 },
      // c cools past the read's deadline: a read waits for a fit node's turn only when it comes in time (patient avoid).
      rateLimitCooldownMs: 500,
      deadlineMs: 1_200,
      backoff: { initialMs: 100, jitter: 'none' },
      clock,
      onEvent: (e) => events.push(e),
      ...(maxAttempts === undefined ? {} : { maxAttempts }),
    });
    const pinned = (name: string) => createClient({ transport: t.pin(name) });
    for (const name of ['a', 'b', 'c']) await pinned(name).request({ method: 'eth_blockNumber' });
    // The read is routed with every node fit; its first attempt (a) hangs.
    const read = createClient({ transport: t }).request({ method: 'eth_getBalance', params: [ZERO, 'latest'] });
    await clock.advance(10);
    // Meanwhile a and c go on to 104 (b 4 behind), and b's breaker opens (one failure) ...
    heads['a'] = 104;
    heads['c'] = 104;
    for (const name of ['a', 'c']) await pinned(name).request({ method: 'eth_blockNumber' });
    expect(t.heads()!.endpoints.find((e) => e.name === 'b')!.lagging).toBe('behind');
    bFails = true;
    await expect(pinned('b').request({ method: 'eth_getBalance', params: [ZERO, 'latest'] })).rejects.toThrow();
    bFails = false;
    expect(t.pool.breakerState('b')).toMatchObject({ state: 'open' });
    // ... and is half-open when the read's retry lands on it, after a's attempt timed out: c, at
    // the tip, is cooling after a rate-limited answer then, so the retry has nowhere else to go
    // at once (the read would otherwise pass b over: it cannot serve), and c could serve.
    await clock.advance(980);
    cLimited = true;
    // A pinned call waits out the cooldown and asks c again (served then, at 1,040 ms).
    const limited = pinned('c').request({ method: 'eth_getBalance', params: [ZERO, 'latest'] });
    await clock.advance(0);
    cLimited = false;
    expect(t.pool.stats().find((e) => e.name === 'c')!.status).toBe('cooling');
    await clock.advance(600);
    expect(Number(await limited)).toBe(104);
    // Refused on b, the read has no node left that serves before its deadline (c cools until 1,480 ms).
    const answer = await read.then(Number, (e: unknown) => (e as { code?: string }).code);
    expect(answer).toBe(refused.length > 0 ? 'RATE_LIMITED' : 100);
    expect(refusals(events).map(([name]) => name)).toEqual(refused);
    expect(events.some((e) => e.type === 'attempt-start' && e.endpoint === 'b' && e.probe)).toBe(true);
    expect(log.filter((x) => x.startsWith('b:'))).toEqual(refused.length > 0 ? ['b:eth_getBalance'] : ['b:eth_getBalance', 'b:eth_getBalance']);
    // Refused, nothing reached b: its breaker waits for a probe that does.
    expect(t.pool.breakerState('b')).toBe(after);
    expect(events.some((e) => e.type === 'breaker-closed' && e.endpoint === 'b')).toBe(after === 'closed');
    await t.close();
  });
});

/**
 * Nodes named `names` (in the pool's order), each at the head `heads[name]` (100 to begin with),
 * under a viem transport with head routing and a quorum on balances: a balance from a node in
 * `hung` never comes back, from the others it is `balance(name)`. `log` lists who was asked.
 */
function quorumSetup(names: string[], hung: string[], balance: (key: string, heads: Record<string, number>) => string, options: Partial<Parameters<typeof poolTransport>[0]>) {
  const clock = new FakeClock(1_000_000);
  const heads: Record<string, number> = Object.fromEntries(names.map((n) => [n, 100]));
  const log: string[] = [];
  const events: PoolEvent[] = [];
  const conn = (key: string) =>
    custom({
      request: ({ method }: { method: string }) => {
        if (method === 'eth_blockNumber') return Promise.resolve(hex(heads[key]!));
        log.push(key);
        return hung.includes(key) ? new Promise<never>(() => {}) : Promise.resolve(balance(key, heads));
      },
    });
  const transports = new Map(names.map((name) => [name, conn(name)]));
  const t = poolTransport({
    endpoints: names.map((name) => ({ name, transport: transports.get(name)! })),
    strategy: 'ordered',
    attemptTimeoutMs: 1000,
    deadlineMs: 5000,
    clock,
    onEvent: (e) => events.push(e),
    ...options,
  });
  const read = () => createClient({ transport: t }).request({ method: 'eth_getBalance', params: [ZERO, 'latest'] });
  /** Moves the chain on by a block at each node in `moving`, a poll after each, `n` times. */
  const blocksAt = async (moving: string[], n: number) => {
    for (let i = 0; i < n; i++) {
      for (const k of moving) heads[k]! += 1;
      await clock.advance(250);
    }
  };
  /** Puts `added` (new nodes, heads given) before the endpoints there were, which keep their transports. */
  const add = (added: Record<string, number>) => {
    Object.assign(heads, added);
    t.setEndpoints([...Object.keys(added).map((name) => ({ name, transport: conn(name) })), ...names.map((name) => ({ name, transport: transports.get(name)! }))]);
  };
  return { clock, heads, log, events, t, read, blocksAt, add };
}

describe("a quorum read's leg whose later attempt lands on a node behind", () => {
  test('is refused like a single read, counting endpoints other legs hold as tried', async () => {
    // The balance does not move with the chain: every node that answers agrees.
    const s = quorumSetup(['a', 'b', 'c', 'd'], ['a'], () => '0x7', { heads: { maxLagBlocks: 2, blockTimeMs: 250, pollMs: 250 }, quorum: { methods: { eth_getBalance: 2 }, stallMs: Infinity } });
    try {
      await s.clock.advance(1);
      const read = s.read();
      // Legs on a (hangs) and b (answers). While a hangs, c stops at 100 and the others reach 104.
      await s.blocksAt(['a', 'b', 'd'], 4);
      expect(s.t.heads()!.endpoints.find((e) => e.name === 'c')!.lagging).toBe('behind');
      await s.clock.advance(1000);
      expect(await read).toBe('0x7');
      // a's leg retries: b is the other leg's, c is behind and refused, d serves.
      expect(s.log).toEqual(['a', 'b', 'd']);
      expect(refusals(s.events).map(([name]) => name)).toEqual(['c']);
    } finally {
      await s.t.close();
    }
  });

  test("a leg's last attempt is refused too: the quorum asks the node at the tip with a leg of its own (maxAttempts: 2)", async () => {
    // The balance says how far behind the node is: nodes equally far behind agree.
    const s = quorumSetup(['a', 'b', 'c', 'd', 'e', 'f'], ['a', 'b'], (key, heads) => hex(heads['e']! - heads[key]!), {
      heads: { maxLagBlocks: 0, blockTimeMs: 250, pollMs: 250 },
      quorum: { methods: { eth_getBalance: 2 }, stallMs: Infinity },
      maxAttempts: 2,
    });
    try {
      await s.clock.advance(1);
      const read = s.read();
      // Legs on a and b, both hung. Meanwhile c and d stop at 100, e and f go on to 104.
      await s.blocksAt(['a', 'b', 'e', 'f'], 4);
      await s.clock.advance(1000);
      // Both legs' second (last) attempts: a's goes to b (held), b's to c, refused; new legs ask e and f.
      expect(await read).toBe('0x0');
      expect(s.log.filter((k) => k === 'c' || k === 'd')).toEqual([]);
      expect(s.log).toContain('e');
      expect(s.log).toContain('f');
      expect(refusals(s.events).map(([name]) => name)).toContain('c');
    } finally {
      await s.t.close();
    }
  });

  test("a node held by another leg is no reason to refuse the last the leg can use (need 1, a stalled leg's node hangs too)", async () => {
    // In this order: a's leg, retrying, meets c (behind) before b (the stalled leg's).
    const s = quorumSetup(['a', 'c', 'b'], ['a', 'b'], () => '0x7', { heads: { maxLagBlocks: 1, blockTimeMs: 250, pollMs: 250 }, quorum: { methods: { eth_getBalance: 1 }, stallMs: 600 } });
    try {
      await s.clock.advance(1);
      const read = s.read();
      read.catch(() => {});
      await s.blocksAt(['a', 'b'], 3);
      // a's leg stalled at 600 ms with c known behind (2 blocks): the second leg went to b, which hangs too.
      expect(s.log).toEqual(['a', 'b']);
      await s.clock.advance(1000);
      // a's leg retries as its attempt times out: b is the other leg's, so c is the last it can use, and serves.
      expect(await read).toBe('0x7');
      expect(s.log).toEqual(['a', 'b', 'c']);
      expect(refusals(s.events)).toEqual([]);
    } finally {
      await s.t.close();
    }
  });
});

describe('a quorum read just after setEndpoints added nodes whose heads are not known yet', () => {
  test('its legs ask the nodes known at the tip first: two new nodes equally behind do not make the quorum (quorum generator with swaps, seed 42706)', async () => {
    // The balance says how far behind a's head the node is.
    const s = quorumSetup(['a', 'b'], [], (key, heads) => hex(heads['a']! - heads[key]!), {
      heads: { maxLagBlocks: 1, blockTimeMs: 250, pollMs: 250 },
      quorum: { methods: { eth_getBalance: 2 }, stallMs: 500 },
    });
    try {
      await s.clock.advance(1); // the first poll: a and b at 100
      // x and y, first in order, are 5 blocks behind; nothing has asked them yet.
      s.add({ x: 95, y: 95 });
      expect(s.t.heads()!.endpoints.map((e) => e.name)).toEqual(['a', 'b']); // routing knows only a and b
      expect(await s.read()).toBe('0x0');
      expect(s.log).toEqual(['a', 'b']);
    } finally {
      await s.t.close();
    }
  });

  test('a method that needs no head (eth_chainId) asks them in order, as any endpoint', async () => {
    const s = quorumSetup(['a', 'b'], [], () => '0x1', {
      heads: { maxLagBlocks: 1, blockTimeMs: 250, pollMs: 250 },
      quorum: { methods: { eth_chainId: 2 }, stallMs: 500 },
    });
    try {
      await s.clock.advance(1);
      s.add({ x: 95, y: 95 });
      expect(await createClient({ transport: s.t }).request({ method: 'eth_chainId' })).toBe('0x1');
      expect(s.log).toEqual(['x', 'y']);
    } finally {
      await s.t.close();
    }
  });

  test('they are asked once the nodes known run out: a new node at the tip makes the quorum with a', async () => {
    const s = quorumSetup(['a', 'b'], ['b'], (key, heads) => hex(heads['a']! - heads[key]!), {
      heads: { maxLagBlocks: 1, blockTimeMs: 250, pollMs: 250 },
      quorum: { methods: { eth_getBalance: 2 }, stallMs: 100 },
    });
    try {
      await s.clock.advance(1);
      s.add({ x: 100 });
      const read = s.read();
      await s.clock.advance(150); // b hangs; its leg stalls at 100 ms, and the next goes to x
      expect(await read).toBe('0x0');
      expect(s.log).toEqual(['a', 'b', 'x']);
    } finally {
      await s.t.close();
    }
  });
});

/**
 * A `fetch` for the ethers provider over nodes named by their URL's host (`http://a.test/`: a):
 * chain 1, each node's head `head(key)` (as the answer to any other read too); `log` lists the
 * nodes asked anything but their head.
 */
function nodesFetch(head: (key: string) => number, log: string[]) {
  return async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const key = new URL(String(url)).hostname.split('.')[0]!;
    const body = JSON.parse(String(init!.body)) as { id: number; method: string };
    if (body.method === 'eth_chainId') return Response.json({ jsonrpc: '2.0', id: body.id, result: '0x1' });
    if (body.method !== 'eth_blockNumber') log.push(key);
    return Response.json({ jsonrpc: '2.0', id: body.id, result: hex(head(key)) });
  };
}

describe('a single read just after setEndpoints added a node whose head is not known yet', () => {
  const opts = { heads: { maxLagBlocks: 1, blockTimeMs: 250, pollMs: 250 } };

  test('goes to a node known at the tip, though the new one is first in order', async () => {
    const s = quorumSetup(['a', 'b'], [], (key, heads) => hex(heads['a']! - heads[key]!), opts);
    try {
      await s.clock.advance(1); // the first poll: a and b at 100
      s.add({ x: 95 });
      expect(await s.read()).toBe('0x0');
      expect(s.log).toEqual(['a']);
    } finally {
      await s.t.close();
    }
  });

  test('goes to the new node when the known ones fail, before any retry on them', async () => {
    const s = quorumSetup(['a'], ['a'], (key, heads) => hex(heads[key]!), { ...opts, attemptTimeoutMs: 100 });
    try {
      await s.clock.advance(1);
      s.add({ x: 100 });
      const read = s.read();
      await s.clock.advance(150); // a hangs past its attempt timeout; the retry goes to x
      expect(await read).toBe(hex(100));
      expect(s.log).toEqual(['a', 'x']);
    } finally {
      await s.t.close();
    }
  });

  test('through the ethers provider too', async () => {
    const clock = new FakeClock(1_000_000);
    const heads: Record<string, number> = { a: 100, x: 95 };
    const log: string[] = [];
    const fetch = nodesFetch((key) => heads[key]!, log);
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: 'http://a.test/', name: 'a' }], fetch, network: 1, clock, strategy: 'ordered', heads: { maxLagBlocks: 1, blockTimeMs: 250, pollMs: 250 } });
    try {
      await clock.advance(1);
      p.setEndpoints([{ url: 'http://x.test/', name: 'x' }, { url: 'http://a.test/', name: 'a' }]);
      expect(await p.sendWith('eth_getBalance', [ZERO, 'latest'])).toBe(hex(100));
      expect(log).toEqual(['a']);
    } finally {
      p.destroy();
    }
  });
});

describe("a caller's own avoid through the ethers provider's sendWith", () => {
  test('is kept beside head routing, and such a request joins no identical one (coalescing)', async () => {
    const clock = new FakeClock(1_000_000);
    const log: string[] = [];
    const fetch = nodesFetch(() => 100, log);
    const endpoints = ['a', 'b', 'c'].map((name) => ({ url: `http://${name}.test/`, name }));
    const p = new PooledJsonRpcProvider({ endpoints, fetch, network: 1, clock, strategy: 'ordered', coalesce: ['eth_getBalance'], heads: { maxLagBlocks: 1, blockTimeMs: 250, pollMs: 250 } });
    try {
      await clock.advance(1);
      const reads = [p.sendWith('eth_getBalance', [ZERO, 'latest'], { avoid: (n) => n === 'a' }), p.sendWith('eth_getBalance', [ZERO, 'latest'], { avoid: (n) => n !== 'c' })];
      expect(await Promise.all(reads)).toEqual([hex(100), hex(100)]);
      expect(log).toEqual(['b', 'c']);
    } finally {
      p.destroy();
    }
  });
});
