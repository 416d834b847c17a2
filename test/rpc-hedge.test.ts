/**
 * The pool's `hedge` on the RPC adapters: a single read is hedged (a second endpoint asked
 * when the first has not answered after `afterMs`), a send, a filter method, a quorum read and
 * a pinned request never are. Before the forty-fourth session the adapters marked no request
 * idempotent, so `hedge` given to `poolTransport` or the ethers provider did nothing at all.
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';

/** Two nodes: `slow` answers after 1 s, `fast` at once; each logs "name method". */
function nodes(clock: FakeClock) {
  const log: string[] = [];
  const answer = (name: string, delayMs: number) => async (method: string): Promise<unknown> => {
    log.push(`${name} ${method}`);
    if (delayMs > 0) await new Promise<void>((resolve) => clock.setTimeout(resolve, delayMs));
    return method === 'eth_newBlockFilter' ? '0x1' : name === 'slow' ? '0x51' : '0xfa';
  };
  return { log, slow: answer('slow', 1_000), fast: answer('fast', 0) };
}

/** Settles `p` on the fake clock; returns its value and the time it took. */
async function timed(clock: FakeClock, p: Promise<unknown>): Promise<{ value: unknown; ms: number }> {
  const start = clock.now();
  let done: { value: unknown; ms: number } | undefined;
  void p.then((value) => (done = { value, ms: clock.now() - start }), (value: unknown) => (done = { value, ms: clock.now() - start }));
  for (let i = 0; i < 40 && done === undefined; i++) await clock.advance(50);
  return done!;
}

describe('hedged reads through the viem transport', () => {
  const make = (clock: FakeClock, hedge: boolean) => {
    const n = nodes(clock);
    const t = poolTransport({
      endpoints: [{ name: 'slow', transport: custom({ request: ({ method }) => n.slow(method) }) }, { name: 'fast', transport: custom({ request: ({ method }) => n.fast(method) }) }],
      custom,
      clock,
      strategy: 'ordered',
      ...(hedge ? { hedge: { afterMs: 100 } } : {}),
    });
    return { t, log: n.log, client: createClient({ transport: t }) };
  };

  test('a read is hedged after afterMs: the fast endpoint answers', async () => {
    const clock = new FakeClock();
    const { t, log, client } = make(clock, true);
    const hedges: unknown[] = [];
    t.pool.on('hedge', (e) => hedges.push(e));
    expect(await timed(clock, client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] }))).toEqual({ value: '0xfa', ms: 100 });
    expect(log).toEqual(['slow eth_getBalance', 'fast eth_getBalance']);
    expect(hedges).toHaveLength(1);
    await t.close();
  });

  test('without hedge, the same read waits for the slow endpoint', async () => {
    const clock = new FakeClock();
    const { t, client } = make(clock, false);
    expect(await timed(clock, client.request({ method: 'eth_blockNumber' }))).toEqual({ value: '0x51', ms: 1_000 });
    await t.close();
  });

  test('a read with its own signal (the slow path) is hedged too', async () => {
    const clock = new FakeClock();
    const { t, log } = make(clock, true);
    const request = t({}).request;
    expect(await timed(clock, request({ method: 'eth_blockNumber' }, { signal: new AbortController().signal }))).toEqual({ value: '0xfa', ms: 100 });
    expect(log).toEqual(['slow eth_blockNumber', 'fast eth_blockNumber']);
    await t.close();
  });

  test.each([
    ['a send', { method: 'eth_sendRawTransaction', params: ['0x01'] }],
    ['a filter', { method: 'eth_newBlockFilter' }],
  ])('%s is never hedged', async (_what, args) => {
    const clock = new FakeClock();
    const { t, log, client } = make(clock, true);
    expect((await timed(clock, client.request(args as never))).ms).toBe(1_000);
    expect(log).toEqual([`slow ${args.method}`]);
    await t.close();
  });

  test('nor is a quorum read, nor a pinned request', async () => {
    const clock = new FakeClock();
    const { t, log } = make(clock, true);
    const quorum = createClient({ transport: t.quorum(1) });
    expect((await timed(clock, quorum.request({ method: 'eth_blockNumber' }))).ms).toBe(400); // the quorum's own stallMs asks the next
    const pinned = createClient({ transport: t.pin('slow') });
    log.length = 0;
    expect(await timed(clock, pinned.request({ method: 'eth_blockNumber' }))).toEqual({ value: '0x51', ms: 1_000 });
    expect(log).toEqual(['slow eth_blockNumber']);
    await t.close();
  });
});

describe('hedged reads through the ethers provider', () => {
  test('a read is hedged after afterMs; a send is not', async () => {
    const clock = new FakeClock();
    const n = nodes(clock);
    const fetch = async (url: string, init?: { body?: unknown }): Promise<Response> => {
      const { id, method } = JSON.parse(String(init?.body)) as { id: number; method: string };
      const result = await (url.includes('slow') ? n.slow : n.fast)(method);
      return new Response(JSON.stringify({ jsonrpc: '2.0', id, result }), { headers: { 'content-type': 'application/json' } });
    };
    const provider = new PooledJsonRpcProvider({ endpoints: [{ url: 'http://slow.test/', name: 'slow' }, { url: 'http://fast.test/', name: 'fast' }], fetch, network: 1, clock, strategy: 'ordered', hedge: { afterMs: 100 } });
    expect(await timed(clock, provider.sendWith('eth_blockNumber', []))).toEqual({ value: '0xfa', ms: 100 });
    n.log.length = 0;
    expect((await timed(clock, provider.sendWith('eth_sendRawTransaction', ['0x01']))).ms).toBe(1_000);
    expect(n.log).toEqual(['slow eth_sendRawTransaction']);
    await provider.close();
  });
});
