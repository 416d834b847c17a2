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
import { classifyViemError } from '../src/viem/classify.js';
import { UnsupportedMemory } from '../src/viem/unsupported.js';
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
