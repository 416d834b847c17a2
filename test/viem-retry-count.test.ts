/**
 * poolTransport owns retries: each attempt reaches the endpoint's transport once, whatever
 * `retryCount` that transport was built with. A transport that took the pool's
 * `retryCount: 0` is sent plain requests with empty options (viem merges them into its
 * own on every request); one that kept a `retryCount` of its own gets `retryCount: 0`.
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { poolTransport } from '../src/viem/index.js';
import type { RpcRequestOptions, TransportFactory } from '../src/viem/types.js';

/** A hand-written transport that records the options of each request; `retryCount`: what its config says (`undefined`: the client's). */
function recording(seen: (RpcRequestOptions | undefined)[], retryCount?: number): TransportFactory {
  return (params) => {
    const request = ((_args: unknown, options?: RpcRequestOptions) => (seen.push(options), Promise.resolve('0x1'))) as never;
    return { config: { key: 'rec', name: 'rec', type: 'rec', request, retryCount: retryCount ?? params.retryCount }, request, value: {} };
  };
}

describe('poolTransport: retries stay the pool’s', () => {
  test('a viem transport built with retryCount: 3 is asked once per attempt', async () => {
    let calls = 0;
    // -32603 is an error viem itself would retry.
    const provider = { request: () => (calls++, Promise.reject(Object.assign(new Error('internal'), { code: -32603 }))) };
    const t = poolTransport({ endpoints: [{ name: 'a', transport: custom(provider, { retryCount: 3 }) }], maxAttempts: 1 });
    const err = await createClient({ transport: t }).request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    expect(calls).toBe(1);
    await t.pool.close();
  });

  test('options per request without a signal: empty when the transport took retryCount 0, retryCount: 0 when it kept its own', async () => {
    const plain: (RpcRequestOptions | undefined)[] = [];
    const own: (RpcRequestOptions | undefined)[] = [];
    const a = poolTransport({ endpoints: [{ name: 'a', transport: recording(plain) }], passSignal: false });
    const b = poolTransport({ endpoints: [{ name: 'b', transport: recording(own, 2) }], passSignal: false });
    expect(await createClient({ transport: a }).request({ method: 'eth_blockNumber' })).toBe('0x1');
    expect(await createClient({ transport: b }).request({ method: 'eth_blockNumber' })).toBe('0x1');
    expect(plain).toStrictEqual([{}]);
    expect(own).toEqual([{ retryCount: 0 }]);
    await a.pool.close();
    await b.pool.close();
  });
});
