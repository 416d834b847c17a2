/**
 * How long an endpoint that answered `429 Retry-After: 30` is left to cool down through the RPC
 * adapters: the wait asked, capped first by the classifier (`maxRetryAfterMs` on the ethers
 * provider, 60 s in viem's classifier) and then by the pool's `backoff.maxMs` (10 s by
 * default), which caps every cooldown. A new user (t17b-retry-after-30) read docs/rpc.md's
 * "longest Retry-After honoured | 60000" and viem.md's "capped at 60 s" and found 10 s: the
 * docs now give both caps; this pins what they say.
 */
import { createClient, custom } from 'viem';
import { afterEach, describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

type Made = { call: () => Promise<unknown>; cooldownMs: () => number };
const viem = (extra: object): Made => {
  const t = poolTransport({
    endpoints: [{ name: 'a', transport: custom({ request: async () => { throw Object.assign(new Error('Too Many Requests'), { status: 429, headers: new Headers({ 'retry-after': '30' }) }); } }) }],
    custom,
    deadlineMs: 3_000,
    ...extra,
  });
  closers.push(() => t.close());
  return { call: () => createClient({ transport: t }).request({ method: 'eth_blockNumber' }), cooldownMs: () => t.pool.stats()[0]!.cooldownRemainingMs };
};
const ethers = (extra: object): Made => {
  const fetch = async () => new Response('slow down', { status: 429, headers: { 'retry-after': '30' } });
  const p = new PooledJsonRpcProvider({ endpoints: [{ name: 'a', url: 'http://a.test/' }], network: 1, fetch, deadlineMs: 3_000, ...extra });
  closers.push(() => p.close());
  return { call: () => p.send('eth_blockNumber', []), cooldownMs: () => p.pool.stats()[0]!.cooldownRemainingMs };
};

describe.each([
  ['viem', viem],
  ['ethers', ethers],
] as const)('%s: Retry-After: 30', (_name, make) => {
  /** The cooldown after one 429, once the call has failed (the wait is past its deadline). */
  const cooldownAfter = async (extra: object): Promise<number> => {
    const m = make(extra);
    const error = await m.call().catch((e: unknown) => e);
    expect(isPoolError(error) && error.code).toBe('RATE_LIMITED');
    return m.cooldownMs();
  };

  test('at the defaults: cut to backoff.maxMs (10 s)', async () => {
    const ms = await cooldownAfter({});
    expect(ms).toBeGreaterThan(9_000);
    expect(ms).toBeLessThanOrEqual(10_000);
  });

  test('with backoff.maxMs raised to 60 s: the 30 s asked (plus up to 25 % jitter)', async () => {
    const ms = await cooldownAfter({ backoff: { maxMs: 60_000 } });
    expect(ms).toBeGreaterThan(29_000);
    expect(ms).toBeLessThanOrEqual(37_500);
  });
});

test('ethers: maxRetryAfterMs below the wait asked cuts it (backoff.maxMs raised)', async () => {
  const m = ethers({ backoff: { maxMs: 60_000 }, maxRetryAfterMs: 5_000 });
  await m.call().catch(() => undefined);
  expect(m.cooldownMs()).toBeGreaterThan(4_000);
  expect(m.cooldownMs()).toBeLessThanOrEqual(6_250);
});
