/**
 * `sameTransport`: a Refresher over `transport.pool` whose candidates build `http(url)` anew each
 * round (a registry of public RPCs) made every endpoint new on every round; with
 * `sameConnection: sameTransport` an endpoint whose URL and fetch options are unchanged keeps
 * its transport and state.
 */
import { custom, http } from 'viem';
import { describe, expect, test } from 'vitest';
import { Refresher } from '../src/index.js';
import { connectionOf } from '../src/rpc/connections.js';
import { FakeClock } from '../src/testing/index.js';
import { poolTransport, sameTransport } from '../src/viem/index.js';

describe('sameTransport', () => {
  test('http transports of the same URL and options are the same node; anything else only as the same object', () => {
    expect(sameTransport(http('https://a.example'), http('https://a.example'))).toBe(true);
    expect(sameTransport(http('https://a.example'), http('https://b.example'))).toBe(false);
    expect(sameTransport(http('https://a.example', { fetchOptions: { headers: { 'x-key': '1' } } }), http('https://a.example', { fetchOptions: { headers: { 'x-key': '1' } } }))).toBe(true);
    expect(sameTransport(http('https://a.example', { fetchOptions: { headers: { 'x-key': '1' } } }), http('https://a.example', { fetchOptions: { headers: { 'x-key': '2' } } }))).toBe(false);
    expect(sameTransport(http('https://a.example', { timeout: 1_000 }), http('https://a.example'))).toBe(false);
    const provider = { request: async () => '0x1' };
    const c = custom(provider);
    expect(sameTransport(c, c)).toBe(true);
    expect(sameTransport(custom(provider), custom(provider))).toBe(false);
    // No URL (viem takes the chain's): not comparable.
    expect(sameTransport(http(), http())).toBe(false);
    const throwing = (() => {
      throw new Error('bad transport');
    }) as never;
    expect(sameTransport(throwing, http('https://a.example'))).toBe(false);
  });

  test('a Refresher building http(url) anew each round keeps each endpoint with sameConnection: sameTransport, and resets it without', async () => {
    for (const same of [true, false]) {
      const clock = new FakeClock();
      const urls = ['https://a.example', 'https://b.example'];
      const transport = poolTransport({ endpoints: urls.map((url, i) => ({ name: `n${i}`, transport: http(url) })), clock, classify: () => 'transient', breaker: { threshold: 1, cooldownMs: 600_000 } });
      const refresher = new Refresher(transport.pool, {
        candidates: async () => urls.map((url, i) => ({ name: `n${i}`, conn: http(url) })),
        check: async () => true,
        ...(same ? { sameConnection: sameTransport } : {}),
      });
      await refresher.refresh();
      const held = connectionOf(transport.pool, 'n0');
      // Open n0's breaker through the pool's own accounting.
      await transport.pool.execute(async (_t, ctx) => {
        if (ctx.endpoint === 'n0') throw new Error('down');
        return 1;
      }, { pin: 'n0' }).catch(() => undefined);
      expect(transport.pool.breakerState('n0')).toMatchObject({ state: 'open' });
      await refresher.refresh();
      if (same) {
        expect(connectionOf(transport.pool, 'n0')).toBe(held);
        expect(transport.pool.breakerState('n0')).toMatchObject({ state: 'open' });
      } else {
        expect(connectionOf(transport.pool, 'n0')).not.toBe(held);
        expect(transport.pool.breakerState('n0')).toBe('closed');
      }
      refresher.stop();
      await transport.close();
    }
  });
});
