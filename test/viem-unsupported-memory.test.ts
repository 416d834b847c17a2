/**
 * The viem transport's memory of "unsupported" answers (src/viem/unsupported.ts): a method an
 * endpoint said it does not serve is not asked of it again for `rememberUnsupportedMs`, and
 * when no endpoint is left the answer is rethrown without a request. A 401/403 says nothing of
 * the method (a key or an origin refused, which may pass): it leaves its endpoint out while
 * another may serve, never all of them. One 403 on a single endpoint used to fail every call
 * of that method, unsent, for ten minutes.
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { Counted } from './helpers/counted.js';
import { classifyViemError } from '../src/viem/classify.js';
import { MAX_REMEMBERED_METHODS, UnsupportedMemory } from '../src/viem/unsupported.js';
import { poolTransport } from '../src/viem/index.js';

const httpError = (status: number, details = ''): Error => Object.assign(new Error('HTTP request failed'), { name: 'HttpRequestError', status, details });
const rpcError = (code: number, message: string): Error => Object.assign(new Error(message), { code });

/** A transport that throws the scripted errors in turn, then answers '0x1'; counts requests. */
function scripted(errors: (Error | undefined)[]) {
  const node = { requests: 0 };
  const transport = custom({
    request: async () => {
      const e = errors[node.requests++];
      if (e !== undefined) throw e;
      return '0x1';
    },
  });
  return { node, transport };
}

describe('one endpoint', () => {
  test.each([
    ['HTTP 403', httpError(403)],
    ['HTTP 401', httpError(401)],
  ])('%s once: a minute later the call is sent again and succeeds', async (_label, error) => {
    const clock = new FakeClock(1_000_000);
    const { node, transport } = scripted([error]);
    const t = poolTransport({ endpoints: [{ name: 'a', transport }], clock });
    const client = createClient({ transport: t });
    await expect(client.request({ method: 'eth_blockNumber' })).rejects.toThrow();
    await clock.advance(60_000);
    await expect(client.request({ method: 'eth_blockNumber' })).resolves.toBe('0x1');
    expect(node.requests).toBe(2);
    await t.pool.close();
  });

  test.each([
    ['-32601', rpcError(-32601, 'the method eth_foo does not exist/is not available')],
    ['HTTP 405', httpError(405)],
    ['HTTP 403 saying the method is not whitelisted', httpError(403, 'method eth_foo is not whitelisted')],
  ])('%s: the method is not asked again; the answer is rethrown unsent', async (_label, error) => {
    const clock = new FakeClock(1_000_000);
    const { node, transport } = scripted([error]);
    const t = poolTransport({ endpoints: [{ name: 'a', transport }], clock });
    const client = createClient({ transport: t });
    await expect(client.request({ method: 'eth_foo' as 'eth_blockNumber' })).rejects.toThrow();
    await clock.advance(60_000);
    await expect(client.request({ method: 'eth_foo' as 'eth_blockNumber' })).rejects.toThrow();
    expect(node.requests).toBe(1);
    // Other methods are asked as before.
    await expect(client.request({ method: 'eth_blockNumber' })).resolves.toBe('0x1');
    expect(node.requests).toBe(2);
    await t.pool.close();
  });
});

describe('two endpoints, one refusing its key', () => {
  test('a 403 leaves that endpoint out of the method while the other serves: asked once in ten calls', async () => {
    const clock = new FakeClock(1_000_000);
    const bad = scripted(Array.from({ length: 20 }, () => httpError(403)));
    const good = scripted([]);
    const t = poolTransport({ endpoints: [{ name: 'bad', transport: bad.transport }, { name: 'good', transport: good.transport }], strategy: 'ordered', clock });
    const client = createClient({ transport: t });
    for (let i = 0; i < 10; i++) {
      await expect(client.request({ method: 'eth_blockNumber' })).resolves.toBe('0x1');
      await clock.advance(1000);
    }
    expect(bad.node.requests).toBe(1);
    expect(good.node.requests).toBe(10);
    await t.pool.close();
  });
});

describe('UnsupportedMemory', () => {
  test('soft answers never leave every endpoint out; hard ones do, with their own answer', () => {
    const m = new UnsupportedMemory(1000);
    const soft = new Error('403');
    const hard = new Error('-32601');
    m.remember('m', 'a', soft, 0, true);
    expect(m.excluded('m', ['a', 'b'], 10)).toEqual({ names: ['a'], all: false, error: soft });
    expect(m.excluded('m', ['a'], 10)).toBeUndefined();
    m.remember('m', 'b', hard, 0);
    expect(m.excluded('m', ['a', 'b'], 10)).toEqual({ names: ['b'], all: false, error: hard });
    expect(m.excluded('m', ['b'], 10)).toEqual({ names: ['b'], all: true, error: hard });
    expect(m.excluded('m', ['b', 'c'], 10)).toEqual({ names: ['b'], all: false, error: hard });
    // Forgotten at the end of the time.
    expect(m.excluded('m', ['a', 'b'], 1000)).toBeUndefined();
    expect(m.has('m')).toBe(false);
  });

  // A transport that forwards its callers' requests meets made-up methods without end: each
  // was kept for the whole time (and, never asked again, for good), about 5 KB each.
  test(`at most ${MAX_REMEMBERED_METHODS} methods: past it the one remembered first goes`, () => {
    const m = new UnsupportedMemory(600_000);
    const error = new Error('-32601');
    for (let i = 0; i < MAX_REMEMBERED_METHODS + 50; i++) m.remember(`x_${i}`, 'a', error, i);
    expect(m.size).toBe(MAX_REMEMBERED_METHODS);
    expect(m.has('x_0')).toBe(false);
    expect(m.has('x_49')).toBe(false);
    expect(m.has('x_50')).toBe(true);
    expect(m.excluded(`x_${MAX_REMEMBERED_METHODS + 49}`, ['a'], 1_000)).toEqual({ names: ['a'], all: true, error });
  });

  test('every endpoint a method was refused by is remembered, each on its own time', () => {
    const m = new UnsupportedMemory(1_000);
    const error = new Error('-32601');
    m.remember('x', 'a', error, 0);
    m.remember('x', 'b', error, 100);
    expect(m.excluded('x', ['a', 'b', 'c'], 500)).toEqual({ names: ['a', 'b'], all: false, error });
    expect(m.excluded('x', ['a', 'b', 'c'], 1_000)).toEqual({ names: ['b'], all: false, error });
  });

  test('a record past its time goes even when its method is never asked again', () => {
    const m = new UnsupportedMemory(1_000);
    const error = new Error('-32601');
    m.remember('x_once', 'a', error, 0);
    m.remember('x_once', 'b', error, 500);
    m.remember('x_other', 'a', error, 1_200); // x_once's record of a has passed, b's has not
    expect(m.has('x_once')).toBe(true);
    expect(m.excluded('x_once', ['a', 'b'], 1_200)).toEqual({ names: ['b'], all: false, error });
    m.remember('x_third', 'a', error, 2_200); // the next sweep, on the dot: both of x_once's records have passed, and x_other's (ending now)
    expect(m.has('x_once')).toBe(false);
    expect(m.has('x_other')).toBe(false);
    expect(m.size).toBe(1);
  });
});

describe('made-up methods through the transport', () => {
  test(`past ${MAX_REMEMBERED_METHODS} refused methods the first is asked again, the last is not`, async () => {
    const requests: string[] = [];
    const transport = custom({
      request: async ({ method }: { method: string }) => {
        requests.push(method);
        throw rpcError(-32601, `the method ${method} does not exist/is not available`);
      },
    });
    const t = poolTransport({ endpoints: [{ name: 'a', transport }] });
    const client = createClient({ transport: t });
    const count = MAX_REMEMBERED_METHODS + 10;
    for (let i = 0; i < count; i++) await expect(client.request({ method: `x_${i}` as 'eth_blockNumber' })).rejects.toThrow();
    expect(requests).toHaveLength(count);
    await expect(client.request({ method: `x_${count - 1}` as 'eth_blockNumber' })).rejects.toThrow(); // remembered: not sent
    expect(requests).toHaveLength(count);
    await expect(client.request({ method: 'x_0' as 'eth_blockNumber' })).rejects.toThrow(); // forgotten: sent again
    expect(requests.slice(count)).toEqual(['x_0']);
    await t.pool.close();
  });
});

describe('classifyViemError on 401/403', () => {
  test.each([
    [httpError(403), 'unsupported'],
    [httpError(401), 'unsupported'],
    [httpError(405), 'unsupported'],
    [httpError(403, 'daily request count exceeded'), 'rate-limited'],
    [httpError(403, 'Monthly capacity limit exceeded. Upgrade your plan: compute units'), 'rate-limited'],
    [httpError(403, 'method not found'), 'unsupported'],
  ])('%s is %s', (error, cls) => {
    expect(classifyViemError(error)).toBe(cls);
  });
});

describe('UnsupportedMemory with many endpoints', () => {
  test('looks records up in a set of the live names, not by searching the list for each (records × endpoints a request)', () => {
    const memory = new UnsupportedMemory(60_000);
    const live = Counted.holding(Array.from({ length: 300 }, (_, i) => `e${i}`));
    for (let i = 0; i < 299; i++) memory.remember('trace_x', `e${i}`, new Error('method not found'), 0);
    const skip = memory.excluded('trace_x', live, 1);
    expect(skip?.names).toHaveLength(299);
    expect(skip?.all).toBe(false);
    expect(live.searches).toBe(0);
    // A few records among a few endpoints: searched, as before.
    const small = new UnsupportedMemory(60_000);
    small.remember('trace_x', 'e0', new Error('method not found'), 0);
    const few = Counted.holding(['e0', 'e1']);
    expect(small.excluded('trace_x', few, 1)?.names).toEqual(['e0']);
    expect(few.searches).toBe(1);
  });
});

describe('a refusal from a node that lost its name while the call ran', () => {
  test("is not remembered for the node that has the name now, even as the call's last error (seed 42470 of the swaps generator)", async () => {
    const refuse = rpcError(-32601, 'the method eth_foo does not exist/is not available');
    const fixed = custom({ request: async () => '0xf00' });
    let t: ReturnType<typeof poolTransport> | undefined;
    const other = custom({ request: async () => Promise.reject(refuse) });
    // The old node of `a`: the name is given to a node that serves the method as the request reaches it.
    const old = custom({
      request: async () => {
        t!.setEndpoints([{ transport: fixed, name: 'a' }, { transport: other, name: 'b' }]);
        throw refuse;
      },
    });
    t = poolTransport({ endpoints: [{ transport: other, name: 'b' }, { transport: old, name: 'a' }], custom, strategy: 'ordered', maxAttempts: 2 });
    const client = createClient({ transport: t });
    // b refuses, then the old a, and the call has no attempt left: it ends on the old node's refusal.
    await expect(client.request({ method: 'eth_foo' as 'eth_chainId' })).rejects.toThrow('eth_foo');
    // Remembered for b alone: the node that has the name a now is asked, and serves.
    expect(await client.request({ method: 'eth_foo' as 'eth_chainId' })).toBe('0xf00');
    await t.close();
  });
});

describe('after close()', () => {
  test('a method every endpoint refused fails CLOSED, not with the refusal remembered (swaps generator with close(), forty-eighth session)', async () => {
    const clock = new FakeClock(1_000_000);
    const { node, transport } = scripted([rpcError(-32601, 'the method eth_foo does not exist/is not available')]);
    const t = poolTransport({ endpoints: [{ name: 'a', transport }], clock });
    const client = createClient({ transport: t });
    const first = await client.request({ method: 'eth_foo' as never }).catch((e: unknown) => e);
    expect(String((first as Error).message)).toMatch(/does not exist/);
    // Remembered: a second call is answered without a request.
    await client.request({ method: 'eth_foo' as never }).catch(() => {});
    expect(node.requests).toBe(1);
    await t.close();
    const closed = await client.request({ method: 'eth_foo' as never }).catch((e: unknown) => e);
    expect(closed).toMatchObject({ code: 'CLOSED' });
  });
});
