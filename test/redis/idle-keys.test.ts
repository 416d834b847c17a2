/**
 * The Redis store keeps a small local record per limit key (slots it holds, the last state
 * seen). A process that goes through keys (rotated for months, or one per tenant) kept one per
 * key ever used; since the forty-first session a key idle for an hour is dropped, and its state
 * comes back with its next admission.
 */
import { afterEach, expect, test } from 'vitest';
import type { SharedLimit } from '../../src/index.js';
import { createRedisStore, fromIoredis } from '../../src/redis/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { client, describeRedis, ready } from './redis-env.js';

const limit = (key: string): SharedLimit => ({ key, perSecond: 1000, burst: undefined, mode: 'bucket', marginMs: 0, perDay: undefined, dailyStopFraction: 1, dailyResetUtcHour: 0 });
const MINUTE = 60_000;

describeRedis('Redis store: keys idle for an hour are forgotten locally', (server) => {
  const clients: { disconnect(): void }[] = [];
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect();
  });

  test('an idle key loses its record; a key in use keeps it; the state comes back with the next admission', async () => {
    const io = await ready(client(server().port));
    clients.push(io);
    const clock = new FakeClock(1_000_000);
    const store = createRedisStore(fromIoredis(io), { prefix: `idle${Date.now()}:`, clock });
    const idle = limit('endpoint:idle');
    const busy = limit('endpoint:busy');
    for (const l of [idle, busy]) {
      await store.report(l, { type: 'ceiling', perSecond: 7 });
      await store.acquire(l);
    }
    expect([store.stateOf(idle.key)?.ceilingPerSecond, store.stateOf(busy.key)?.ceilingPerSecond]).toEqual([7, 7]);
    // Keys that come and go (a tenant each), then an hour and more passes; busy is used meanwhile.
    for (let i = 0; i < 50; i++) await store.acquire(limit(`endpoint:tenant${i}`));
    await clock.advance(40 * MINUTE);
    await store.acquire(busy);
    await clock.advance(25 * MINUTE);
    await store.acquire(limit('endpoint:another'));
    expect(store.stateOf(idle.key)).toBeUndefined();
    expect(store.stateOf(busy.key)?.ceilingPerSecond).toBe(7);
    // Nothing the fleet knows is lost: the next admission on the key brings its state again.
    await store.acquire(idle);
    expect(store.stateOf(idle.key)?.ceilingPerSecond).toBe(7);
  });
});
