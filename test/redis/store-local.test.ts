/**
 * The Redis store's local side, on a real redis-server.
 *
 * Late answers: the store publishes a key's state from admission answers. An admission that
 * Redis ran before a report this process has sent since (say a listener's re-enable of an
 * endpoint the pool had just disabled) carries the older state: published, it made every pool of
 * the process disable the endpoint again for a round trip, an echo of the "disabled" its own
 * listener had undone. Since the forty-first session such an answer is not published while the
 * report is unanswered; the next admission brings the newer state.
 *
 * Memory: the store keeps a small record per limit key (slots it holds, the last state seen). A
 * process that goes through keys (rotated for months, or one per tenant) kept one per key ever
 * used; since the forty-first session a key idle for an hour is dropped, and its state comes back
 * with its next admission.
 */
import { afterEach, expect, test } from 'vitest';
import type { SharedLimit, SharedState } from '../../src/index.js';
import { createRedisStore, fromIoredis, type RedisCommander } from '../../src/redis/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { client, describeRedis, ready } from './redis-env.js';

const limitOf = (key: string): SharedLimit => ({ key, perSecond: 1000, burst: undefined, mode: 'bucket', marginMs: 0, perDay: undefined, dailyStopFraction: 1, dailyResetUtcHour: 0 });
const limit = limitOf('endpoint:k');
const MINUTE = 60_000;

/** A commander whose replies to commands naming `hold` wait until released (Redis has run them: only the answer is late). */
function holding(inner: RedisCommander) {
  const sent: string[][] = [];
  let holdNext = false;
  let release: (() => void) | undefined;
  const commander: RedisCommander = {
    send(args) {
      sent.push([...args]);
      const reply = inner.send(args);
      if (!holdNext || !args.includes('enabled')) return reply;
      holdNext = false;
      return new Promise((resolve, reject) => {
        release = () => void reply.then(resolve, reject);
      });
    },
  };
  return { commander, sent, holdEnabled: () => (holdNext = true), release: () => release?.() };
}

describeRedis("Redis store: the process's side of its keys", (server) => {
  const clients: { disconnect(): void }[] = [];
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect();
  });

  test('a re-enable still unanswered: the older "disabled" is not published; the next admission publishes the state without it', async () => {
    const io = await ready(client(server().port));
    clients.push(io);
    const h = holding(fromIoredis(io));
    const store = createRedisStore(h.commander, { prefix: `order${Date.now()}:` });
    const heard: SharedState[] = [];
    store.subscribe((_key, state) => heard.push(state));

    await store.acquire(limit);
    await store.report(limit, { type: 'disabled', endpoint: 'a' });
    // An admission sent now is run by Redis after the "disabled", and before the "enabled" sent next.
    const before = h.sent.length;
    const admitted = store.acquire(limit);
    for (let i = 0; i < 100 && h.sent.length === before; i++) await new Promise((r) => setImmediate(r));
    expect(h.sent.length).toBe(before + 1);
    h.holdEnabled();
    const enabled = store.report(limit, { type: 'enabled', endpoint: 'a' });
    await admitted;
    expect(heard.map((s) => [...s.disabled.keys()])).not.toContainEqual(['a']);
    h.release();
    await enabled;
    await store.acquire(limit);
    expect(heard.map((s) => [...s.disabled.keys()])).not.toContainEqual(['a']);
    expect(store.stateOf(limit.key)?.disabled.has('a')).toBe(false);
  });

  test('with no report out, a "disabled" reported by this process is published with the next admission (the guard holds only while a report is unanswered)', async () => {
    const io = await ready(client(server().port));
    clients.push(io);
    const store = createRedisStore(fromIoredis(io), { prefix: `order2${Date.now()}:` });
    const heard: SharedState[] = [];
    store.subscribe((_key, state) => heard.push(state));
    await store.acquire(limit);
    await store.report(limit, { type: 'disabled', endpoint: 'a' });
    await store.acquire(limit);
    expect([...heard.at(-1)!.disabled.keys()]).toEqual(['a']);
  });

  test('an idle key loses its record; a key in use keeps it; the state comes back with the next admission', async () => {
    const io = await ready(client(server().port));
    clients.push(io);
    const clock = new FakeClock(1_000_000);
    const store = createRedisStore(fromIoredis(io), { prefix: `idle${Date.now()}:`, clock });
    const idle = limitOf('endpoint:idle');
    const busy = limitOf('endpoint:busy');
    for (const l of [idle, busy]) {
      await store.report(l, { type: 'ceiling', perSecond: 7 });
      await store.acquire(l);
    }
    expect([store.stateOf(idle.key)?.ceilingPerSecond, store.stateOf(busy.key)?.ceilingPerSecond]).toEqual([7, 7]);
    // Keys that come and go (a tenant each), then an hour and more passes; busy is used meanwhile.
    for (let i = 0; i < 50; i++) await store.acquire(limitOf(`endpoint:tenant${i}`));
    await clock.advance(40 * MINUTE);
    await store.acquire(busy);
    await clock.advance(25 * MINUTE);
    await store.acquire(limitOf('endpoint:another'));
    expect(store.stateOf(idle.key)).toBeUndefined();
    expect(store.stateOf(busy.key)?.ceilingPerSecond).toBe(7);
    // Nothing the fleet knows is lost: the next admission on the key brings its state again.
    await store.acquire(idle);
    expect(store.stateOf(idle.key)?.ceilingPerSecond).toBe(7);
  });
});
