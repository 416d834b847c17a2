/**
 * A key of a group whose own day is spent, parked for the whole fleet through the store
 * (`LimiterStore.parkEndpoint`, optional): two pools on one in-memory store and one
 * FakeClock, as two processes on one Redis would be. The Redis version of the same story is
 * in test/redis/shared-state.test.ts.
 */
import { describe, expect, test } from 'vitest';
import type { LimiterStore, PoolError, SharedChange, SharedLimit, SharedState } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { fail, harness, type EndpointSpec } from './support.js';

interface Entry {
  ceiling: number | undefined;
  parkedUntil: number;
  readonly disabled: Map<string, number>;
  readonly keys: Map<string, number>;
}

/**
 * What a shared store keeps per quota, in memory, on `clock`: every change is handed to
 * every subscriber at once (remaining times, as the Redis store hands them). `keyParks:
 * false` leaves `parkEndpoint` out, as a store written before it would.
 */
function memoryStore(clock: FakeClock, keyParks = true) {
  const entries = new Map<string, Entry>();
  const listeners = new Set<(key: string, state: SharedState) => void>();
  const reported: string[] = [];
  const entry = (key: string): Entry => {
    let e = entries.get(key);
    if (e === undefined) entries.set(key, (e = { ceiling: undefined, parkedUntil: 0, disabled: new Map(), keys: new Map() }));
    return e;
  };
  const left = (m: Map<string, number>, now: number) => new Map([...m].filter(([, until]) => until > now).map(([k, until]) => [k, until - now]));
  const publish = (key: string): void => {
    const e = entry(key);
    const now = clock.now();
    const state: SharedState = { ceilingPerSecond: e.ceiling, parkedForMs: Math.max(0, e.parkedUntil - now), disabled: left(e.disabled, now), parkedEndpoints: left(e.keys, now) };
    for (const l of listeners) l(key, state);
  };
  const store: LimiterStore = {
    acquire: () => Promise.resolve(0),
    report(limit: SharedLimit, change: SharedChange) {
      const e = entry(limit.key);
      const now = clock.now();
      reported.push(`${limit.key} ${change.type}`);
      if (change.type === 'ceiling') e.ceiling = change.perSecond;
      else if (change.type === 'parked') e.parkedUntil = now + change.forMs;
      else if (change.type === 'disabled') e.disabled.set(change.endpoint, now + 600_000);
      else e.disabled.delete(change.endpoint);
      publish(limit.key);
      return Promise.resolve();
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  };
  const keyParked: [string, string, number][] = [];
  if (keyParks) {
    store.parkEndpoint = (limit, endpoint, forMs) => {
      keyParked.push([limit.key, endpoint, forMs]);
      entry(limit.key).keys.set(endpoint, clock.now() + forMs);
      publish(limit.key);
      return Promise.resolve();
    };
  }
  return { store, reported, keyParked };
}

const HOUR = 3_600_000;
/** 20:00 UTC on the monotonic and the wall clock alike, until a test steps the wall. */
const START = Date.UTC(2026, 11, 1, 20);
const KEYS: EndpointSpec[] = [{ name: 'k1', rateLimit: { perSecond: 50 } }, { name: 'k2', rateLimit: { perSecond: 50 } }];

function fleet(keyParks = true) {
  const clock = new FakeClock(START);
  const shared = memoryStore(clock, keyParks);
  const options = { clock, groups: [['k1', 'k2']], strategy: 'round-robin' as const, dailyResetUtcHour: 22, sharedQuota: { store: shared.store } };
  return { clock, ...shared, one: harness(KEYS, options), two: harness(KEYS, options) };
}

describe("a group key's spent day, shared through the store", () => {
  test('parks the key in the other pool, which never sends to it, until the wall-clock reset; its sibling keeps serving', async () => {
    const { clock, one, two, keyParked, reported } = fleet();
    // The calendar runs an hour ahead of the monotonic clock (NTP stepped it): 21:00 UTC, an hour before the 22:00 reset.
    clock.stepWall(HOUR);
    one.eps.k1!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    expect(await one.pool.execute(one.op, { pin: 'k1' }).catch(() => 'failed')).toBe('failed');
    expect(keyParked).toEqual([['group:k1+k2', 'k1', HOUR]]);
    // Only the key: the group's quota is not parked for the fleet.
    expect(reported).toEqual([]);

    const served: unknown[] = [];
    for (let i = 0; i < 6; i++) served.push(await two.pool.execute(two.op));
    expect(two.eps.k1!.calls).toBe(0);
    expect(served).toEqual(Array(6).fill('k2'));
    const [k1, k2] = two.pool.stats();
    expect(k1).toMatchObject({ status: 'parked', parkedUntilMs: clock.now() + HOUR });
    expect(k2!.status).toBe('ok');
    expect(two.trace((e) => e.type === 'endpoint-parked')).toEqual(['endpoint-parked:k1']);

    await clock.advance(HOUR - 1000);
    expect(await two.pool.execute(two.op, { pin: 'k1' }).catch(() => 'refused')).toBe('refused');
    expect(two.eps.k1!.calls).toBe(0);
    // Past the reset both pools send to k1 again.
    await clock.advance(1000);
    expect(await two.pool.execute(two.op, { pin: 'k1' })).toBe('k1');
    expect(await one.pool.execute(one.op, { pin: 'k1' })).toBe('k1');
    expect(two.pool.stats()[0]!.status).toBe('ok');
  });

  test('a store without parkEndpoint keeps working: the park stays local, and the group is never parked for the fleet', async () => {
    const { one, two, reported } = fleet(false);
    one.eps.k1!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    await one.pool.execute(one.op, { pin: 'k1' }).catch(() => undefined);
    expect(one.pool.stats()[0]!.status).toBe('parked');
    expect(reported).toEqual([]);
    // The other pool finds out by asking k1 itself, and k2 serves both.
    two.eps.k1!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    expect(await two.pool.execute(two.op)).toBe('k2');
    expect(two.eps.k1!.calls).toBe(1);
    expect(await one.pool.execute(one.op)).toBe('k2');
  });

  test('a parkEndpoint that throws or rejects changes nothing for the call that learned the spent day', async () => {
    for (const bad of [() => { throw new Error('sync'); }, () => Promise.reject(new Error('async'))]) {
      const { one, store } = fleet();
      store.parkEndpoint = bad as never;
      one.eps.k1!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
      expect(await one.pool.execute(one.op)).toBe('k2');
      expect(one.pool.stats()[0]!.status).toBe('parked');
    }
  });

  test.each([
    ['its day spent', { class: 'rate-limited' as const, dailyQuotaExhausted: true }, 'parked'],
    ['an invalid key', { class: 'permanent' as const, disableEndpoint: true }, 'disabled'],
  ])('calls queued in the other pool for a key the fleet learns is out (%s) select again when it hears, not at their turn', async (_, verdict, status) => {
    const clock = new FakeClock(START);
    const { store } = memoryStore(clock);
    const options = { clock, sharedQuota: { store }, maxQueueWaitMs: 10_000, deadlineMs: 60_000 };
    const keys: EndpointSpec[] = [{ name: 'a', rateLimit: { perSecond: 1, mode: 'paced' } }, { name: 'b' }];
    const one = harness(keys, options);
    const two = harness(keys, options);
    // Pool two: one call on a now, a second pinned to a queued for its next turn (1,025 ms).
    const t0 = clock.now();
    const first = two.pool.execute(two.op, { pin: 'a' });
    const second = two.pool.execute(two.op, { pin: 'a' }).catch((e: PoolError) => `${e.code}@${clock.now() - t0}`);
    await clock.advance(100);
    // Pool one hears at 100 ms that a is out, and tells the fleet.
    one.eps.a!.then(fail(verdict));
    await one.pool.execute(one.op, { pin: 'a', retry: 'none' }).catch(() => undefined);
    await clock.advance(2000);
    expect(await first).toBe('a');
    expect(two.pool.stats()[0]!.status).toBe(status);
    // Pinned to a key now out, the queued call fails when pool two hears of it (it waited 1,025 ms before).
    expect(await second).toBe('PIN_UNAVAILABLE@100');
  });

  test('an endpoint alone still parks its quota for the fleet through report', async () => {
    const clock = new FakeClock(START);
    const { store, reported, keyParked } = memoryStore(clock);
    const options = { clock, sharedQuota: { store } };
    const one = harness([{ name: 'a', rateLimit: { perSecond: 5 } }, 'b'], options);
    const two = harness([{ name: 'a', rateLimit: { perSecond: 5 } }, 'b'], options);
    one.eps.a!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    await one.pool.execute(one.op, { pin: 'a' }).catch(() => undefined);
    expect(reported).toEqual(['endpoint:a parked']);
    expect(keyParked).toEqual([]);
    expect(two.pool.stats()[0]!.status).toBe('parked');
  });
});
