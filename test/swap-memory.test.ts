/**
 * What an adapter keeps about an endpoint goes when `setEndpoints` takes the endpoint out:
 * a pool whose nodes a Refresher swaps for days must not keep every one it ever had.
 *
 * Found by a churn run (thirty-sixth session: 15,000 swaps of two fresh `custom` nodes each):
 * the viem transport's heap grew by about 1 KB per swap (12 MB → 27 MB), each client keeping
 * the instance of every transport it had ever built in a `Map` keyed by the transport. Checked
 * here with weak references and a full collection (`gc` exposed for this file), so what is
 * checked is that nothing holds a replaced transport, not a heap figure.
 */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { createClient, custom, type Transport } from 'viem';
import { describe, expect, test } from 'vitest';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider, type RpcConnection } from '../src/ethers/index.js';
import { createPooledFetch } from '../src/fetch/index.js';
import { connectionOf } from '../src/rpc/connections.js';
import { Pool, type ClassifyResult, type EndpointConfig, type RateLimitOptions } from '../src/index.js';
import { loopbackScope } from './helpers/loopback.js';
import { seeded } from './helpers/prng.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const { server, made } = loopbackScope();

/** Collects until every reference in `refs` is cleared, or gives up after a few rounds (a turn of the event loop apart: V8 keeps a `WeakRef` target alive until the task that read it ends). */
async function collected(refs: readonly WeakRef<object>[]): Promise<number> {
  for (let i = 0; i < 10 && refs.some((r) => r.deref() !== undefined); i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
  }
  return refs.filter((r) => r.deref() !== undefined).length;
}

/** A node answering every method with its block number. */
function node(block: number): Transport {
  return custom({ request: async ({ method }: { method: string }) => (method === 'eth_chainId' ? '0x1' : `0x${block.toString(16)}`) });
}

/** A fresh endpoint whose transport `refs` watches (made here, so that no test scope holds it). */
function swapped(r: number, refs: WeakRef<object>[]): { name: string; conn: Transport } {
  const conn = node(100 + r);
  refs.push(new WeakRef(conn));
  return { name: `n${r}`, conn };
}

describe('viem: a transport setEndpoints replaced is not kept', () => {
  test.each([
    ['the pool builds the direct path itself', {}],
    ['with viem custom handed in', { custom }],
    ['with head-aware routing (its poll builds instances of its own)', { heads: { maxLagBlocks: 1, pollMs: 5 } }],
  ])('%s', async (_, extra) => {
    const stable = node(1);
    const t = poolTransport({ endpoints: [{ name: 'stable', transport: stable }], strategy: 'round-robin', ...extra });
    try {
      const client = createClient({ transport: t });
      const refs: WeakRef<object>[] = [];
      for (let r = 0; r < 20; r++) {
        t.pool.setEndpoints([{ name: 'stable', conn: stable }, swapped(r, refs)]);
        // Both endpoints serve (round-robin), so the client builds an instance of each.
        for (let i = 0; i < 4; i++) await client.request({ method: 'eth_blockNumber' });
        if ('heads' in extra) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      t.pool.setEndpoints([{ name: 'stable', conn: stable }]);
      for (let i = 0; i < 4; i++) await client.request({ method: 'eth_blockNumber' });
      const left = await collected(refs);
      expect(left).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe('viem: transports transport.setEndpoints built from URLs are not kept once their URL leaves', () => {
  test('twenty fresh URLs beside a stable one: the stable one built once, the others collected', async () => {
    const refs: WeakRef<object>[] = [];
    const builds: string[] = [];
    const http = (url: string) => {
      builds.push(url);
      const t = node(url.length);
      if (url !== 'http://stable.test/') refs.push(new WeakRef(t));
      return t;
    };
    const t = poolTransport({ endpoints: [{ url: 'http://stable.test/' }], http, strategy: 'round-robin' });
    try {
      const client = createClient({ transport: t });
      for (let r = 0; r < 20; r++) {
        t.setEndpoints([{ url: 'http://stable.test/' }, { url: `http://n${r}.test/` }]);
        for (let i = 0; i < 4; i++) await client.request({ method: 'eth_blockNumber' });
      }
      t.setEndpoints([{ url: 'http://stable.test/' }]);
      for (let i = 0; i < 4; i++) await client.request({ method: 'eth_blockNumber' });
      expect(builds.filter((u) => u === 'http://stable.test/')).toHaveLength(1);
      expect(refs).toHaveLength(20);
      expect(await collected(refs)).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe('ethers: a connection setEndpoints replaced is not kept', () => {
  test('twenty swaps of a node under new headers, each served', async () => {
    const s = await server((_req, res, body) => {
      const r = JSON.parse(body) as { id: number; method: string };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: r.id, result: r.method === 'eth_chainId' ? '0x1' : '0x2a' }));
    });
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: s.url, name: 'stable' }], network: 1, strategy: 'round-robin', attemptTimeoutMs: 5_000 });
    made.push(p);
    const stable = connectionOf(p.pool, 'stable')!;
    const refs: WeakRef<object>[] = [];
    for (let r = 0; r < 20; r++) {
      p.pool.setEndpoints([{ name: 'stable', conn: stable }, swappedRpc(r, s.url, refs)]);
      for (let i = 0; i < 4; i++) expect(await p.sendWith('eth_blockNumber', [])).toBe('0x2a');
    }
    p.pool.setEndpoints([{ name: 'stable', conn: stable }]);
    expect(await p.sendWith('eth_blockNumber', [])).toBe('0x2a');
    expect(await collected(refs)).toBe(0);
  });
});

/** A fresh connection (headers of its own, so not the one already held) that `refs` watches. */
function swappedRpc(r: number, url: string, refs: WeakRef<object>[]): { name: string; conn: RpcConnection } {
  const conn = { url, headers: { 'x-round': String(r) } };
  refs.push(new WeakRef(conn));
  return { name: `n${r}`, conn };
}

describe('fetch: the bearer token of an endpoint setEndpoints removed is forgotten', () => {
  test('a name that comes back asks getToken again; one that stayed keeps its token', async () => {
    const s = await server((_req, res) => res.end('ok'));
    const asked: string[] = [];
    const f = createPooledFetch({ endpoints: [{ url: s.url, name: 'a' }, { url: `${s.url}/b`, name: 'b' }], getToken: async (endpoint) => (asked.push(endpoint), `t-${endpoint}`), strategy: 'round-robin', attemptTimeoutMs: 5_000 });
    made.push(f);
    for (let i = 0; i < 4; i++) expect(await (await f('/x')).text()).toBe('ok');
    expect(asked.sort()).toEqual(['a', 'b']);
    f.pool.setEndpoints([{ name: 'b', conn: `${s.url}/b` }]);
    await f('/x');
    f.pool.setEndpoints([{ name: 'a', conn: s.url }, { name: 'b', conn: `${s.url}/b` }]);
    for (let i = 0; i < 4; i++) await f('/x');
    // Before, the token of `a` outlived its removal (one map entry per name ever seen).
    expect(asked.sort()).toEqual(['a', 'a', 'b']);
  });
});

/**
 * The core, over generated option sets (every strategy; bucket, paced, daily and adaptive
 * limits, alone and in a group; hedging, retry budgets, failure-rate breakers, in-flight
 * limits, credential refresh, events and metrics; answers of every class with every hint):
 * twenty swaps of fresh connections under fresh and reused names, calls in between, then a
 * last swap to the one stable endpoint. No connection the pool was handed may outlive it.
 */
describe('the core: a connection setEndpoints took out is not kept, whatever the options', () => {
  const RUNS = Number(process.env['FC_SWAP_MEMORY_RUNS'] ?? 24);
  test(`generated option sets (${RUNS} runs)`, async () => {
    const seed = Number(process.env['FC_SEED'] ?? 2026120636);
    const rnd = seeded(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    for (let run = 0; run < RUNS; run++) {
      const limit = (): RateLimitOptions | undefined =>
        pick([undefined, { perSecond: 1_000 }, { perSecond: 500, mode: 'paced' as const, marginMs: 0 }, { perDay: 1_000_000 }, { perSecond: 800, adaptive: true }]);
      const grouped = rnd() < 0.3;
      // A group's members share one quota: the same settings, and some.
      const shared = limit() ?? { perSecond: 1_000 };
      const groupLimit = (): RateLimitOptions => shared;
      const options = {
        strategy: pick(['ordered', 'round-robin', 'random', 'health', 'latency'] as const),
        attemptTimeoutMs: 200,
        deadlineMs: 1_000,
        backoff: { initialMs: 0, maxMs: 1 },
        rateLimitCooldownMs: 1,
        breaker: pick([{ threshold: 2, cooldownMs: 1 }, { mode: 'failure-rate' as const, minThroughput: 2, windowMs: 50, cooldownMs: 1 }]),
        ...(rnd() < 0.4 ? { hedge: { afterMs: 0 } } : {}),
        ...(rnd() < 0.4 ? { retryBudget: { ratio: 0.5, minPerSecond: 1_000 } } : {}),
        ...(rnd() < 0.4 ? { refreshAuth: async () => {} } : {}),
        ...(rnd() < 0.5 ? { onEvent: () => {}, metrics: { increment() {}, observe() {} } } : {}),
      };
      const answers: ClassifyResult[] = [
        'transient',
        'unsupported',
        'unauthorized',
        { class: 'rate-limited', retryAfterMs: 1 },
        { class: 'rate-limited', retryAfterMs: 1, ceilingPerSecond: 300 },
        { class: 'rate-limited', retryAfterMs: 1, ceilingPerSecond: 200, ceilingScope: 'group' },
        { class: 'rate-limited', dailyQuotaExhausted: true },
        { class: 'permanent', disableEndpoint: true },
      ];
      const stable: Conn = { fails: 0 };
      const pool = new Pool<Conn>({
        ...options,
        endpoints: [{ name: 'stable', conn: stable }],
        classify: (e) => (e as { answer: ClassifyResult }).answer,
      });
      const refs: WeakRef<object>[] = [];
      try {
        for (let r = 0; r < 20; r++) {
          swap(pool, stable, freshEndpoints(r, rnd, grouped ? groupLimit : limit, refs), grouped);
          await Promise.all(
            Array.from({ length: 6 }, () =>
              pool
                .execute(async (conn: Conn) => {
                  if (conn !== stable && rnd() < 0.5) throw Object.assign(new Error('no'), { answer: pick(answers) });
                  return 1;
                }, { idempotent: true, ...(rnd() < 0.3 ? { hedge: true } : {}) })
                .catch(() => 0),
            ),
          );
        }
        pool.setEndpoints([{ name: 'stable', conn: stable }]);
        for (let i = 0; i < 3; i++) await pool.execute(async () => 1);
        const left = await collected(refs);
        expect(left, `run ${run} (FC_SEED=${seed}): ${left} of ${refs.length} connections kept, options ${JSON.stringify(options)}, grouped ${grouped}`).toBe(0);
      } finally {
        await pool.close();
      }
    }
  }, 120_000);
});

interface Conn {
  fails: number;
}

/** `setEndpoints` to the stable endpoint and `fresh` (in a function of its own: no test scope keeps `fresh`). */
function swap(pool: Pool<Conn>, stable: Conn, fresh: EndpointConfig<Conn>[], grouped: boolean): void {
  pool.setEndpoints([{ name: 'stable', conn: stable }, ...fresh], grouped && fresh.length >= 2 ? [[fresh[0]!.name, fresh[1]!.name]] : []);
}

/** One or two endpoints of fresh connections that `refs` watches, under a name new this round or one used before. */
function freshEndpoints(r: number, rnd: () => number, limit: () => RateLimitOptions | undefined, refs: WeakRef<object>[]): EndpointConfig<Conn>[] {
  const out: EndpointConfig<Conn>[] = [];
  const count = 1 + Math.floor(rnd() * 2);
  for (let i = 0; i < count; i++) {
    const conn: Conn = { fails: 0 };
    refs.push(new WeakRef(conn));
    const rateLimit = limit();
    out.push({ name: rnd() < 0.5 ? `n${r}-${i}` : `again-${i}`, conn, ...(rateLimit === undefined ? {} : { rateLimit }), ...(rnd() < 0.3 ? { maxInFlight: 2 } : {}) });
  }
  return out;
}

/**
 * What is kept by endpoint name (heads, epochs, remembered refusals, tokens, per-name state of
 * the core) goes with the name: names are strings, out of reach of weak references, so each
 * round here uses names of 16 KB of their own, and the heap after a full collection may not
 * grow by what keeping them would cost (150 rounds × 2 names × 16 KB = 4.8 MB; the limit is
 * 1.5 MB). The head poll kept one entry per name it ever saw replaced or removed until the
 * thirty-sixth session.
 */
describe('names setEndpoints took out are not kept', () => {
  const ROUNDS = 150;
  /** A name of 16 KB, its own memory (not a slice or a rope of a shared string). */
  const bigName = (tag: string, r: number): string => `${tag}${r}-${Buffer.alloc(16_384, `${tag}${r}`).toString('latin1')}`;

  async function heapAfter(): Promise<number> {
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      gc();
    }
    return process.memoryUsage().heapUsed;
  }

  test('viem: head-aware routing with its poll, remembered refusals, coalesced reads', async () => {
    const stable = node(1);
    const refusing = custom({ request: async ({ method }: { method: string }) => { if (method === 'eth_foo') throw Object.assign(new Error('the method eth_foo does not exist/is not available'), { code: -32601 }); return '0x5'; } });
    const t = poolTransport({ endpoints: [{ name: 'stable', transport: stable }], strategy: 'round-robin', heads: { maxLagBlocks: 1, pollMs: 1 }, coalesce: ['eth_blockNumber'] });
    try {
      const client = createClient({ transport: t });
      const round = async (r: number): Promise<void> => {
        t.pool.setEndpoints([{ name: 'stable', conn: stable }, { name: bigName('a', r), conn: node(100 + r) }, { name: bigName('b', r), conn: refusing }]);
        for (let i = 0; i < 3; i++) await client.request({ method: 'eth_blockNumber' });
        await client.request({ method: 'eth_foo' as 'eth_blockNumber' }).catch(() => 0);
        await new Promise((resolve) => setTimeout(resolve, 2)); // a poll
      };
      for (let r = 0; r < 20; r++) await round(r); // warm
      const before = await heapAfter();
      for (let r = 20; r < 20 + ROUNDS; r++) await round(r);
      t.pool.setEndpoints([{ name: 'stable', conn: stable }]);
      await client.request({ method: 'eth_blockNumber' });
      expect((await heapAfter()) - before).toBeLessThan(1.5 * 2 ** 20);
    } finally {
      await t.close();
    }
  }, 60_000);

  test('fetch: bearer tokens of endpoints under names that left', async () => {
    const s = await server((_req, res) => res.end('ok'));
    const f = createPooledFetch({ endpoints: [{ url: s.url, name: 'stable' }], getToken: async (endpoint) => `t-${endpoint.length}`, strategy: 'round-robin', attemptTimeoutMs: 5_000 });
    made.push(f);
    const round = async (r: number): Promise<void> => {
      f.pool.setEndpoints([{ name: 'stable', conn: s.url }, { name: bigName('a', r), conn: `${s.url}/a` }, { name: bigName('b', r), conn: `${s.url}/b` }]);
      for (let i = 0; i < 3; i++) await (await f('/x')).text();
    };
    for (let r = 0; r < 20; r++) await round(r);
    const before = await heapAfter();
    for (let r = 20; r < 20 + ROUNDS; r++) await round(r);
    f.pool.setEndpoints([{ name: 'stable', conn: s.url }]);
    await (await f('/x')).text();
    expect((await heapAfter()) - before).toBeLessThan(1.5 * 2 ** 20);
  }, 60_000);

  test('ethers: head-aware routing with its poll, quorum reads, coalesced reads', async () => {
    const s = await server((_req, res, body) => {
      const r = JSON.parse(body) as { id: number; method: string };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: r.id, result: r.method === 'eth_chainId' ? '0x1' : r.method === 'eth_call' ? '0x01' : '0x2a' }));
    });
    const p = new PooledJsonRpcProvider({ endpoints: [{ url: s.url, name: 'stable' }], network: 1, strategy: 'round-robin', attemptTimeoutMs: 5_000, heads: { maxLagBlocks: 1, pollMs: 1 }, quorum: { methods: { eth_call: 2 } }, coalesce: ['eth_blockNumber'] });
    made.push(p);
    const stable = connectionOf(p.pool, 'stable')!;
    const round = async (r: number): Promise<void> => {
      p.pool.setEndpoints([{ name: 'stable', conn: stable }, { name: bigName('a', r), conn: { url: s.url, headers: { 'x-r': `a${r}` } } }, { name: bigName('b', r), conn: { url: s.url, headers: { 'x-r': `b${r}` } } }]);
      for (let i = 0; i < 3; i++) await p.sendWith('eth_blockNumber', []);
      await p.sendWith('eth_call', [{ to: '0x0000000000000000000000000000000000000001', data: '0x' }, 'latest']);
      await new Promise((resolve) => setTimeout(resolve, 2)); // a poll
    };
    for (let r = 0; r < 20; r++) await round(r);
    const before = await heapAfter();
    for (let r = 20; r < 20 + ROUNDS; r++) await round(r);
    p.pool.setEndpoints([{ name: 'stable', conn: stable }]);
    await p.sendWith('eth_blockNumber', []);
    expect((await heapAfter()) - before).toBeLessThan(1.5 * 2 ** 20);
  }, 60_000);

  test('the core with every per-endpoint feature on (health ranking, hedging, latency, daily and adaptive limits in a group, budgets)', async () => {
    const pool = new Pool<number>({
      endpoints: [{ name: 'stable', conn: 0 }],
      strategy: 'health',
      classify: () => ({ class: 'rate-limited', retryAfterMs: 1, ceilingPerSecond: 300, ceilingScope: 'group' }),
      attemptTimeoutMs: 200,
      backoff: { initialMs: 0, maxMs: 1 },
      hedge: { afterMs: 0, percentile: 0.5 },
      retryBudget: { ratio: 0.5, minPerSecond: 1_000 },
      onEvent: () => {},
      metrics: { increment() {}, observe() {} },
    });
    const limit = { perSecond: 800, perDay: 1_000_000, adaptive: true } as const;
    const round = async (r: number): Promise<void> => {
      const a = bigName('a', r);
      const b = bigName('b', r);
      pool.setEndpoints([{ name: 'stable', conn: 0 }, { name: a, conn: 1, rateLimit: limit }, { name: b, conn: 2, rateLimit: limit }], [[a, b]]);
      await Promise.all(Array.from({ length: 6 }, (_, i) => pool.execute(async (conn) => { if (conn !== 0 && i % 2 === 0) throw new Error('429'); return conn; }, { idempotent: true }).catch(() => 0)));
    };
    try {
      for (let r = 0; r < 20; r++) await round(r);
      const before = await heapAfter();
      for (let r = 20; r < 20 + ROUNDS; r++) await round(r);
      pool.setEndpoints([{ name: 'stable', conn: 0 }]);
      await pool.execute(async () => 1);
      expect((await heapAfter()) - before).toBeLessThan(1.5 * 2 ** 20);
    } finally {
      await pool.close();
    }
  }, 60_000);
});
