/**
 * The viem transport's own edges (src/viem/transport.ts) that the twenty-ninth session's
 * mutation run found held only by the slow fault files or by nothing: subscriptions refused,
 * which failures reach the caller as the node's own answer, the landed check on sends only.
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { isPoolError } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { poolTransport } from '../../src/viem/index.js';

const rpcError = (code: number, message: string): Error => Object.assign(new Error(message), { code });

/** A node that answers each method as `answers` says (a value, or an error to throw); logs requests. */
function node(name: string, answers: Record<string, unknown>, log: string[]) {
  return {
    name,
    transport: custom({
      request: async ({ method }: { method: string }) => {
        log.push(`${name}:${method}`);
        const a = answers[method];
        if (a instanceof Error) throw a;
        if (a === undefined) throw new Error(`unexpected ${method}`);
        return a;
      },
    }),
  };
}

function setup(answers: Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  const log: string[] = [];
  const t = poolTransport({ endpoints: answers.map((a, i) => node(`n${i}`, a, log)), clock: new FakeClock(1_000_000), strategy: 'ordered', ...extra });
  return { t, log, client: createClient({ transport: t }) };
}

describe('subscriptions', () => {
  test.each(['eth_subscribe', 'eth_unsubscribe'])('%s is refused, naming the method, with nothing sent', async (method) => {
    const { t, log, client } = setup([{}]);
    const e = await client.request({ method: method as 'eth_blockNumber', params: ['newHeads'] as never }).catch((x: unknown) => x);
    const inner = isPoolError(e) ? e : (e as { cause?: unknown }).cause;
    expect(inner).toMatchObject({ code: 'INVALID_OPTIONS', field: 'method' });
    expect(String((inner as Error).message)).toContain(`${method} is not sent through the pool`);
    expect(log).toEqual([]);
    await t.pool.close();
  });
});

describe('what a failed request rejects with', () => {
  const poolErrorIn = (e: unknown): boolean => {
    for (let x = e, d = 0; typeof x === 'object' && x !== null && d < 8; x = (x as { cause?: unknown }).cause, d++) if (isPoolError(x)) return true;
    return false;
  };

  test('a revert (permanent): the node answer, no PoolError anywhere in the chain', async () => {
    const { t, log, client } = setup([{ eth_call: rpcError(3, 'execution reverted: nope') }, { eth_call: '0x' }]);
    const e = await client.request({ method: 'eth_call', params: [{ to: '0x0000000000000000000000000000000000000000' }, 'latest'] }).catch((x: unknown) => x);
    expect(poolErrorIn(e)).toBe(false);
    expect(String((e as Error).message)).toContain('nope');
    expect(log).toEqual(['n0:eth_call']);
    await t.pool.close();
  });

  test('a range too wide (retry-narrower): the node answer', async () => {
    const { t, log, client } = setup([{ eth_getLogs: rpcError(-32005, 'query returned more than 10000 results') }, { eth_getLogs: [] }]);
    const e = await client.request({ method: 'eth_getLogs', params: [{}] as never }).catch((x: unknown) => x);
    expect(poolErrorIn(e)).toBe(false);
    expect(String((e as Error).message)).toContain('query returned more than 10000 results');
    expect(log).toEqual(['n0:eth_getLogs']);
    await t.pool.close();
  });

  test('every node says the method does not exist: the last node answer, not RETRIES_EXHAUSTED', async () => {
    const { t, log, client } = setup([{ eth_foo: rpcError(-32601, 'the method eth_foo does not exist') }, { eth_foo: rpcError(-32601, 'the method eth_foo does not exist') }]);
    const e = await client.request({ method: 'eth_foo' as 'eth_blockNumber' }).catch((x: unknown) => x);
    expect(poolErrorIn(e)).toBe(false);
    expect(log).toEqual(['n0:eth_foo', 'n1:eth_foo']);
    await t.pool.close();
  });

  test('every node fails with a 5xx: the PoolError (RETRIES_EXHAUSTED), the node error its cause', async () => {
    const down = Object.assign(new Error('HTTP request failed'), { name: 'HttpRequestError', status: 503 });
    const { t, client } = setup([{ eth_blockNumber: down }, { eth_blockNumber: down }], { maxAttempts: 2, backoff: { initialMs: 0, maxMs: 0 } });
    const e = await client.request({ method: 'eth_blockNumber' }).catch((x: unknown) => x);
    expect(poolErrorIn(e)).toBe(true);
    await t.pool.close();
  });

  test('a thrown non-object: what viem makes of it (UnknownRpcError, unread: permanent) reaches the caller, nothing else', async () => {
    const log: string[] = [];
    const t = poolTransport({
      endpoints: [{ name: 'n0', transport: custom({ request: async () => { log.push('n0'); throw 'a string'; } }) }, node('n1', { eth_blockNumber: '0x2' }, log)],
      clock: new FakeClock(1_000_000),
      strategy: 'ordered',
    });
    const e = await createClient({ transport: t }).request({ method: 'eth_blockNumber' }).catch((x: unknown) => x);
    expect(e).toMatchObject({ name: 'UnknownRpcError', code: -1 });
    expect(log).toEqual(['n0']);
    await t.pool.close();
  });
});

describe('the landed check', () => {
  test('with keccak256, a call answered "already known" is not checked by hash: only eth_sendRawTransaction is', async () => {
    const { t, log, client } = setup([{ eth_call: rpcError(-32000, 'already known'), eth_getTransactionByHash: null }], { keccak256: () => '0x' + 'ab'.repeat(32) });
    await client.request({ method: 'eth_call', params: [{}, 'latest'] as never }).catch(() => undefined);
    expect(log).toEqual(['n0:eth_call']);
    await t.pool.close();
  });
});

describe('options', () => {
  test.each([['yes'], [1], [null]])('passSignal %j is refused naming it', (v) => {
    expect(() => poolTransport({ endpoints: [node('n0', {}, []).transport].map((transport) => ({ name: 'n0', transport })), passSignal: v as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'passSignal', message: expect.stringContaining('a boolean') }),
    );
  });
});

// Thirty-fourth session's mutation run of src/viem/transport.ts (against the viem test files):
// behaviours no test held.
describe('more edges', () => {
  test('a pinned request to an endpoint remembered as refusing the method is refused unsent, with its answer', async () => {
    const { t, log, client } = setup([{ eth_foo: rpcError(-32601, 'the method eth_foo does not exist/is not available') }, { eth_foo: '0x2' }]);
    await expect(client.request({ method: 'eth_foo' } as never)).resolves.toBe('0x2');
    expect(log).toEqual(['n0:eth_foo', 'n1:eth_foo']);
    const pinned = createClient({ transport: t.pin('n0') });
    const e = await pinned.request({ method: 'eth_foo' } as never).catch((x: unknown) => x);
    expect(String((e as Error).message)).toContain('eth_foo does not exist');
    expect(isPoolError(e)).toBe(false);
    expect(log).toEqual(['n0:eth_foo', 'n1:eth_foo']);
    await t.pool.close();
  });

  test("a filter whose endpoint left the pool: viem's InvalidInputRpcError (what its watchers make a new filter on), not the pool's own error", async () => {
    const { t, client } = setup([{ eth_newBlockFilter: '0x1', eth_getFilterChanges: [] }, { eth_newBlockFilter: '0x1', eth_getFilterChanges: [] }]);
    const id = await client.request({ method: 'eth_newBlockFilter' });
    t.pool.setEndpoints([{ name: 'n1', conn: node('n1', { eth_getFilterChanges: [] }, []).transport }]);
    const e = await client.request({ method: 'eth_getFilterChanges', params: [id] }).catch((x: unknown) => x);
    expect((e as Error).name).toBe('InvalidInputRpcError');
    expect((e as { code?: number }).code).toBe(-32000);
    await t.pool.close();
  });

  test('heads() is undefined without head-aware routing; close() stops the head poll', async () => {
    const { t } = setup([{}]);
    expect(t.heads()).toBeUndefined();
    await t.close();
    const clock = new FakeClock(1_000_000);
    const polled = poolTransport({ endpoints: [node('n0', { eth_blockNumber: '0x10' }, [])], heads: { pollMs: 1_000 }, clock });
    await clock.advance(1_500);
    expect(polled.heads()!.endpoints).toEqual([{ name: 'n0', head: 16 }]);
    await polled.close();
    expect(clock.pendingTimers).toBe(0);
  });

  test("the transport's key and name as viem shows them, by default and given", () => {
    const { t } = setup([{}]);
    const c = createClient({ transport: t });
    expect([c.transport.key, c.transport.name, c.transport.type]).toEqual(['endpointPool', 'Endpoint pool', 'endpointPool']);
    const named = setup([{}], { key: 'k', name: 'n' }).t;
    expect([createClient({ transport: named }).transport.key, createClient({ transport: named }).transport.name]).toEqual(['k', 'n']);
    void t.pool.close();
    void named.pool.close();
  });

  test("withEndpoint builds the endpoint's transport with viem's own retries off (the pool retries), typed as the pool's", async () => {
    const seen: unknown[] = [];
    const factory = (params: Record<string, unknown>) => {
      seen.push(params['retryCount']);
      return custom({ request: async () => '0x1' })(params as never);
    };
    const t = poolTransport({ endpoints: [{ name: 'n0', transport: factory as never }], clock: new FakeClock(1_000_000) });
    const got = await t.withEndpoint(async (transport, endpoint) => {
      const built = transport({ retryCount: 5 } as never);
      return [endpoint, built.config.type, await built.request({ method: 'eth_blockNumber' }), (built.value as { endpoint?: string }).endpoint];
    });
    expect(got).toEqual(['n0', 'endpointPool', '0x1', 'n0']);
    expect(seen).toEqual([0]);
    await t.pool.close();
  });
});
