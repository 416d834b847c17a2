/**
 * poolTransport passes the attempt's signal only to transports that can hear it: viem's
 * `http` (its fetch is aborted: see viem.test.ts) and a `custom` provider whose `request`
 * takes the options argument; not to an EIP-1193 `request(args)`.
 */
import { createClient, custom } from 'viem';
import { describe, expect, test } from 'vitest';
import { poolTransport } from '../src/viem/index.js';

describe('poolTransport: attempt signals', () => {
  test('a custom provider whose request takes options gets the signal, and it aborts on the attempt timeout', async () => {
    let seen: AbortSignal | undefined;
    const provider = { request: (_args: unknown, options?: { signal?: AbortSignal }) => ((seen = options?.signal), new Promise(() => undefined)) };
    const t = poolTransport({ endpoints: [{ name: 'a', transport: custom(provider) }], attemptTimeoutMs: 30, maxAttempts: 1 });
    const err = await createClient({ transport: t }).request({ method: 'eth_blockNumber' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    expect(seen).toBeInstanceOf(AbortSignal);
    expect(seen!.aborted).toBe(true);
    await t.pool.close();
  });

  test('an EIP-1193 provider (request(args)) is called without one', async () => {
    const calls: unknown[][] = [];
    const provider = { request: function (this: unknown, args: unknown) { calls.push([...arguments]); return Promise.resolve(args === undefined ? 0 : '0x1'); } };
    const t = poolTransport({ endpoints: [{ name: 'a', transport: custom(provider) }] });
    expect(await createClient({ transport: t }).request({ method: 'eth_blockNumber' })).toBe('0x1');
    expect(calls[0]![1]).toBeUndefined();
    await t.pool.close();
  });
});
