/**
 * The Redis store publishes a key's state from admission answers. An admission that Redis ran
 * before a report this process has sent since (say a listener's re-enable of an endpoint the pool
 * had just disabled) carries the older state: published, it made every pool of the process
 * disable the endpoint again for a round trip, an echo of the "disabled" its own listener had
 * undone. Since the forty-first session such an answer is not published while the report is
 * unanswered; the next admission brings the newer state.
 */
import { afterEach, expect, test } from 'vitest';
import type { SharedLimit, SharedState } from '../../src/index.js';
import { createRedisStore, fromIoredis, type RedisCommander } from '../../src/redis/index.js';
import { client, describeRedis, ready } from './redis-env.js';

const limit: SharedLimit = { key: 'endpoint:k', perSecond: 1000, burst: undefined, mode: 'bucket', marginMs: 0, perDay: undefined, dailyStopFraction: 1, dailyResetUtcHour: 0 };

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

describeRedis('Redis store: an admission answered before a report of this process is not published', (server) => {
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
});
