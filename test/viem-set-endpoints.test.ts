/**
 * `transport.setEndpoints`: the set given the way the options give it (URLs, providers,
 * transports). A list made anew on each change (a Refresher's source, a reloaded config) built
 * a fresh `http(url)` for every URL, so through `transport.pool.setEndpoints` every endpoint
 * became new each round: its open breaker closed, its counters zeroed, its head and refusals
 * forgotten. Here a URL or provider an endpoint has now keeps its transport, and so its state.
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { connectionOf } from '../src/rpc/connections.js';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport } from '../src/viem/index.js';

type Node = { up: boolean; head: number; calls: number };

/** An `http` stand-in: each URL is a node of `nodes`; counts the transports it built per URL. */
function fakeHttp(nodes: Record<string, Node>) {
  const built: string[] = [];
  const http = (url: string) => {
    built.push(url);
    const n = nodes[url]!;
    return custom({
      request: async ({ method }: { method: string }) => {
        n.calls++;
        if (!n.up) throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
        if (method === 'eth_blockNumber') return `0x${n.head.toString(16)}`;
        return '0x1';
      },
    });
  };
  return { http, built };
}

const A = 'https://a.example/rpc';
const B = 'https://b.example/rpc';
const C = 'https://c.example/rpc';

function setup(extra: Record<string, unknown> = {}) {
  const nodes: Record<string, Node> = { [A]: { up: false, head: 100, calls: 0 }, [B]: { up: true, head: 100, calls: 0 }, [C]: { up: true, head: 100, calls: 0 } };
  const { http, built } = fakeHttp(nodes);
  const clock = new FakeClock(1_000_000);
  const transport = poolTransport({
    endpoints: [{ url: A, name: 'a' }, { url: B, name: 'b' }],
    http,
    clock,
    strategy: 'ordered',
    breaker: { threshold: 1, cooldownMs: 60_000 },
    ...extra,
  });
  const client = createClient({ transport });
  return { nodes, built, clock, transport, client };
}

describe('transport.setEndpoints: a URL an endpoint has keeps its transport and state', () => {
  test('an open breaker, the counters and the transport survive a list made anew; only a new URL is built', async () => {
    const { nodes, built, transport, client } = setup();
    await expect(client.request({ method: 'eth_chainId' })).resolves.toBe('0x1');
    expect(transport.pool.stats().find((s) => s.name === 'a')!.breaker.state).toBe('open');
    const connA = connectionOf(transport.pool, 'a');
    expect(built).toEqual([A, B]);

    transport.setEndpoints([{ url: A, name: 'a' }, { url: B, name: 'b' }, { url: C, name: 'c' }]);
    expect(built).toEqual([A, B, C]);
    expect(connectionOf(transport.pool, 'a')).toBe(connA);
    const a = transport.pool.stats().find((s) => s.name === 'a')!;
    expect(a.breaker.state).toBe('open');
    expect(a.failures).toBe(1);
    expect(transport.pool.stats().find((s) => s.name === 'b')!.successes).toBe(1);

    // The dead node stays left out: the next request goes straight to b.
    const before = nodes[A]!.calls;
    await expect(client.request({ method: 'eth_chainId' })).resolves.toBe('0x1');
    expect(nodes[A]!.calls).toBe(before);
  });

  test('a URL removed and given again later is a new endpoint (a fresh transport and breaker)', async () => {
    const { built, transport, client } = setup();
    await client.request({ method: 'eth_chainId' });
    transport.setEndpoints([{ url: B, name: 'b' }]);
    transport.setEndpoints([{ url: A, name: 'a' }, { url: B, name: 'b' }]);
    expect(built).toEqual([A, B, A]);
    expect(transport.pool.stats().find((s) => s.name === 'a')!.breaker.state).toBe('closed');
  });

  test('the same URL twice in one list: each endpoint has a transport of its own', () => {
    const { built, transport } = setup();
    transport.setEndpoints([{ url: B, name: 'b' }, { url: B, name: 'b2' }]);
    expect(connectionOf(transport.pool, 'b')).not.toBe(connectionOf(transport.pool, 'b2'));
    expect(built).toEqual([A, B, B]);
  });

  test('providers and transports: the same provider object keeps its transport, a transport is taken as given', async () => {
    const provider = { request: async () => '0x1' };
    const other = custom({ request: async () => '0x2' });
    const transport = poolTransport({ endpoints: [{ provider, name: 'p' }, { transport: other, name: 't' }], custom, clock: new FakeClock(0) });
    const conns = () => ['p', 't'].map((n) => connectionOf(transport.pool, n));
    const before = conns();
    transport.setEndpoints([{ provider, name: 'p' }, { transport: other, name: 't' }]);
    expect(conns()).toEqual(before);
    transport.setEndpoints([{ provider: { request: async () => '0x3' }, name: 'p' }, { transport: other, name: 't' }]);
    expect(conns()[0]).not.toBe(before[0]);
    expect(conns()[1]).toBe(before[1]);
    await expect(createClient({ transport: transport.pin('p') }).request({ method: 'eth_chainId' })).resolves.toBe('0x3');
  });

  test('groups are passed on; a bad entry is refused naming it and the set is left as it was', () => {
    const { transport } = setup();
    transport.setEndpoints([{ url: A, name: 'a' }, { url: B, name: 'b' }], [['a', 'b']]);
    expect(transport.pool.stats().map((s) => s.name)).toEqual(['a', 'b']);
    let error: unknown;
    try {
      transport.setEndpoints([{ url: B, name: 'b' }, { url: 5 as never, name: 'x' }]);
    } catch (e) {
      error = e;
    }
    expect(isPoolError(error) && error.code === 'INVALID_OPTIONS').toBe(true);
    expect((error as Error).message).toContain('endpoints[1].url');
    expect(transport.pool.endpointNames).toEqual(['a', 'b']);
  });

  test('with head-aware routing, a kept endpoint keeps its head: it is not asked again', async () => {
    const { nodes, transport, client } = setup({ heads: { maxLagBlocks: 2 } });
    nodes[A]!.up = true;
    await client.request({ method: 'eth_blockNumber' });
    await client.request({ method: 'eth_blockNumber' });
    const known = transport.heads()!;
    const callsB = nodes[B]!.calls;
    transport.setEndpoints([{ url: A, name: 'a' }, { url: B, name: 'b' }]);
    expect(transport.heads()).toEqual(known);
    await client.request({ method: 'eth_getBalance', params: ['0x0000000000000000000000000000000000000000', 'latest'] });
    // One request served by the first endpoint, no question asked of b for its head.
    expect(nodes[B]!.calls).toBe(callsB);
  });
});
