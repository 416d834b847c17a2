import { describe, expect, test } from 'vitest';
import { Pool, type LimiterStore, type SharedChange, type SharedLimit, type SharedState } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { FakeEndpoint, fail, harness, ok, start } from './support.js';

/** A scripted store: answers from a queue (a number, 'fail', or 'hang'). */
function scriptedStore(...answers: (number | 'fail' | 'hang')[]) {
  const asked: SharedLimit[] = [];
  const store: LimiterStore = {
    acquire(limit) {
      asked.push(limit);
      const a = answers.shift() ?? 0;
      if (a === 'hang') return new Promise(() => undefined);
      if (a === 'fail') return Promise.reject(new Error('connection lost'));
      return Promise.resolve(a);
    },
  };
  return { store, asked };
}

/** A store that admits everything and records what the pool reports to the fleet (and parks, when asked). */
function recordingStore(withParks = false): { store: LimiterStore; reported: string[] } {
  const reported: string[] = [];
  const store: LimiterStore = {
    acquire: () => Promise.resolve(0),
    report(limit, change) {
      reported.push(`${limit.key} ${change.type}`);
      return Promise.resolve();
    },
    ...(withParks
      ? {
          parkEndpoint(limit: SharedLimit, endpoint: string) {
            reported.push(`${limit.key} park ${endpoint}`);
            return Promise.resolve();
          },
        }
      : {}),
  };
  return { store, reported };
}

describe('shared quota store', () => {
  test('a hedged attempt asks the store too, and a refusal means no hedge (issue 19: hedges went over the fleet ceiling)', async () => {
    const { store, asked } = scriptedStore(0, 0);
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10 } }, { name: 'b', rateLimit: { perSecond: 10 } }], { sharedQuota: { store }, hedge: { afterMs: 50 } });
    h.eps['a']!.then(ok('slow', 200));
    h.eps['b']!.then(ok('fast', 10));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(100);
    await call.promise;
    expect(call.value).toBe('fast');
    expect(asked.map((l) => l.key)).toEqual(['endpoint:a', 'endpoint:b']);

    const refused = scriptedStore(0, 500);
    const r = harness([{ name: 'a', rateLimit: { perSecond: 10 } }, { name: 'b', rateLimit: { perSecond: 10 } }], { sharedQuota: { store: refused.store }, hedge: { afterMs: 50 } });
    r.eps['a']!.then(ok('slow', 200));
    const c2 = start(r.pool.execute(r.op, { idempotent: true }));
    await r.clock.advance(300);
    await c2.promise;
    expect(c2.value).toBe('slow');
    expect(refused.asked.map((l) => l.key)).toEqual(['endpoint:a', 'endpoint:b']);
    expect(r.events.filter((e) => e.type === 'attempt-start').map((e) => 'endpoint' in e && e.endpoint)).toEqual(['a']);
  });

  test('a hedge the store refuses spends no retry from the budget and none of maxHedges', async () => {
    // One retry in the budget (ratio 0, floor 0.1/s over 10 s): the refused hedge used to take it,
    // and the call then failed with RETRY_BUDGET_EXHAUSTED instead of retrying.
    const spec = (name: string) => ({ name, rateLimit: { perSecond: 10 } });
    const budget = scriptedStore(0, 500, 0);
    const h = harness([spec('a'), spec('b')], { sharedQuota: { store: budget.store }, hedge: { afterMs: 50 }, retryBudget: { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 } });
    h.eps['a']!.then(fail('transient', 200));
    const c1 = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(300);
    await c1.promise;
    expect(c1.error).toBeUndefined();
    // b's refusal (wait 500 ms) leaves it not ready: the retry goes to a again, and it is sent.
    expect(c1.value).toBe('a');
    expect(budget.asked.map((l) => l.key)).toEqual(['endpoint:a', 'endpoint:b', 'endpoint:a']);
    expect(h.events.filter((e) => e.type === 'attempt-start')).toHaveLength(2);

    // maxHedges 1: the refused hedge is not counted, so the retry's attempt may still hedge
    // (on the fourth endpoint: the refused one waits 500 ms).
    const hedges = scriptedStore(0, 500, 0, 0);
    const r = harness([spec('a'), spec('b'), spec('c'), spec('d')], { sharedQuota: { store: hedges.store }, hedge: { afterMs: 50, maxHedges: 1 } });
    r.eps['a']!.then(fail('transient', 100));
    r.eps['b']!.then(ok('b', 300));
    r.eps['c']!.then(ok('c', 300));
    r.eps['d']!.then(ok('d', 300));
    const c2 = start(r.pool.execute(r.op, { idempotent: true }));
    await r.clock.advance(1_000);
    await c2.promise;
    expect(hedges.asked).toHaveLength(4); // a; a hedge refused; the retry; its hedge
    expect(r.events.filter((e) => e.type === 'hedge')).toHaveLength(1);
    expect(r.events.filter((e) => e.type === 'attempt-start')).toHaveLength(3);
    expect(c2.error).toBeUndefined();
  });

  test('a hedge the retry budget cannot pay for does not ask the store (it would spend a fleet slot for nothing)', async () => {
    const spec = (name: string) => ({ name, rateLimit: { perSecond: 10 } });
    const { store, asked } = scriptedStore(0, 0);
    const h = harness([spec('a'), spec('b')], { sharedQuota: { store }, hedge: { afterMs: 50 }, retryBudget: { ratio: 0, minPerSecond: 0 } });
    h.eps['a']!.then(ok('slow', 200));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(300);
    await call.promise;
    expect(call.value).toBe('slow');
    expect(asked.map((l) => l.key)).toEqual(['endpoint:a']);
  });

  test('rateLimit.sharedName names the quota in the store: a key rotated under the same endpoint name starts afresh in the fleet', async () => {
    const asked: string[] = [];
    const reported: string[] = [];
    let listener: ((key: string, state: SharedState) => void) | undefined;
    const store: LimiterStore = {
      acquire: (limit) => (asked.push(limit.key), Promise.resolve(0)),
      report: (limit, change) => (reported.push(`${limit.key} ${change.type}`), Promise.resolve()),
      subscribe: (l) => ((listener = l), () => undefined),
    };
    const limit = (sharedName: string) => ({ perSecond: 10, perDay: 1000, sharedName });
    const h = harness([{ name: 'a', rateLimit: limit('a-v1') }, { name: 'b', rateLimit: { perSecond: 10 } }], { sharedQuota: { store }, strategy: 'ordered' });
    const seen: object[] = [];
    const spy: LimiterStore = { acquire: (l) => (seen.push(l), Promise.resolve(0)) };
    const p = harness([{ name: 'a', rateLimit: limit('a-v1') }], { sharedQuota: { store: spy } });
    expect(await p.pool.execute(p.op)).toBe('a');
    expect(seen[0]).toHaveProperty('key', 'endpoint:a-v1');
    expect(seen[0]).not.toHaveProperty('sharedName');

    // The fleet's day for a-v1 is spent: learned and shared under that name.
    h.eps['a']!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(reported).toEqual(['endpoint:a-v1 parked']);
    // The key is rotated: a new connection and a new sharedName under the name 'a'.
    const fresh = new FakeEndpoint('a', ok('fresh'));
    h.pool.setEndpoints([
      { name: 'a', conn: fresh, rateLimit: limit('a-v2') },
      { name: 'b', conn: h.eps['b']!, rateLimit: { perSecond: 10 } },
    ]);
    asked.length = 0;
    expect(await h.pool.execute(h.op)).toBe('fresh');
    expect(asked).toEqual(['endpoint:a-v2']);
    // What the fleet says about the old key no longer touches the endpoint; about the new one, it does.
    const parked = (forMs: number): SharedState => ({ ceilingPerSecond: undefined, parkedForMs: forMs, disabled: new Map() });
    const before = h.events.length;
    listener!('endpoint:a-v1', parked(3_600_000));
    expect(h.events.slice(before).filter((e) => e.type === 'endpoint-parked')).toEqual([]);
    listener!('endpoint:a-v2', parked(3_600_000));
    expect(h.events.slice(before).filter((e) => e.type === 'endpoint-parked').map((e) => 'endpoint' in e && e.endpoint)).toEqual(['a']);

    // The same connection given another sharedName is asked for under the new one too.
    const k = harness([{ name: 'a', rateLimit: limit('k1') }], { sharedQuota: { store: spy } });
    k.pool.setEndpoints([{ name: 'a', conn: k.eps['a']!, rateLimit: limit('k2') }]);
    seen.length = 0;
    await k.pool.execute(k.op);
    expect(seen[0]).toHaveProperty('key', 'endpoint:k2');
  });

  test("a store's answer that arrives after setEndpoints moved the endpoint to another key is not applied to the new key's quota", async () => {
    // a asks the store under endpoint:a; while the answer (its day is spent) is on its way,
    // setEndpoints puts a and b in a group. The answer is about endpoint:a, which a no longer
    // uses: the group is not parked (it parked the group's quota, b with it, and said so of a
    // only; the shared-store property, seed 2026120607, thirty-third session). The call asks
    // again under the group's key and is served.
    const asked: string[] = [];
    let clock: FakeClock | undefined;
    const store: LimiterStore = {
      acquire: (limit) => {
        asked.push(limit.key);
        if (limit.key !== 'endpoint:a') return Promise.resolve(0);
        return new Promise((resolve) => clock!.setTimeout(() => resolve(20 * 3_600_000), 10));
      },
    };
    const limit = { perSecond: 10, perDay: 1000 };
    const h = harness([{ name: 'a', rateLimit: limit }, { name: 'b', rateLimit: limit }], { sharedQuota: { store }, strategy: 'ordered' });
    clock = h.clock;
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(5);
    h.pool.setEndpoints([{ name: 'a', conn: h.eps['a']!, rateLimit: limit }, { name: 'b', conn: h.eps['b']!, rateLimit: limit }], [['a', 'b']]);
    await h.clock.advance(10);
    await call.promise;
    expect(call.value).toBe('a');
    expect(asked).toEqual(['endpoint:a', 'group:a+b']);
    expect(h.events.filter((e) => e.type === 'endpoint-parked')).toEqual([]);
    expect(h.pool.stats().map((e) => e.status)).toEqual(['ok', 'ok']);
  });

  test('rateLimit.sharedName changed on a kept connection: another key, so its predecessor\'s spent day does not carry over (another change of the limit keeps it)', async () => {
    const asked: string[] = [];
    const store: LimiterStore = { acquire: (limit) => (asked.push(limit.key), Promise.resolve(0)) };
    const limit = (sharedName: string, perSecond = 10) => ({ perSecond, perDay: 5, sharedName });
    const h = harness([{ name: 'a', rateLimit: limit('a-v1') }, { name: 'b', rateLimit: { perSecond: 10 } }], { sharedQuota: { store }, strategy: 'ordered' });
    const replace = (a: ReturnType<typeof limit>) =>
      h.pool.setEndpoints([
        { name: 'a', conn: h.eps['a']!, rateLimit: a },
        { name: 'b', conn: h.eps['b']!, rateLimit: { perSecond: 10 } },
      ]);
    h.eps['a']!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    expect(await h.pool.execute(h.op)).toBe('b');
    // The same key with another rate: still spent today.
    replace(limit('a-v1', 20));
    h.eps['a']!.then(ok('a'));
    expect(await h.pool.execute(h.op)).toBe('b');
    // The same connection under another sharedName (its key changed behind it): a fresh day.
    replace(limit('a-v2', 20));
    asked.length = 0;
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(asked).toEqual(['endpoint:a-v2']);

    // A member leaving its group: it keeps the group's spent day, unless it leaves under a sharedName of its own.
    const day = { perDay: 1, dailyStopFraction: 1 };
    const leaving = async (a: object) => {
      const g = harness([{ name: 'a', rateLimit: day }, { name: 'b', rateLimit: day }, 'c'], { groups: [['a', 'b']], strategy: 'ordered' });
      expect(await g.pool.execute(g.op)).toBe('a');
      expect(await g.pool.execute(g.op)).toBe('c');
      g.pool.setEndpoints(
        [
          { name: 'a', conn: g.eps['a']!, rateLimit: a },
          { name: 'b', conn: g.eps['b']!, rateLimit: day },
          { name: 'c', conn: g.eps['c']! },
        ],
        [],
      );
      return g.pool.execute(g.op);
    };
    expect(await leaving(day)).toBe('c');
    expect(await leaving({ ...day, sharedName: 'a-v2' })).toBe('a');
  });

  test('rateLimit.sharedName: checked, and refused on a member of a group', () => {
    const store: LimiterStore = { acquire: () => Promise.resolve(0) };
    const pool = (sharedName: unknown, groups?: string[][]) =>
      new Pool({
        endpoints: [
          { name: 'a', conn: 1, rateLimit: { perSecond: 1, sharedName } as never },
          { name: 'b', conn: 2, rateLimit: { perSecond: 1 } },
        ],
        classify: () => 'transient',
        sharedQuota: { store },
        ...(groups ? { groups } : {}),
      });
    expect(() => pool('')).toThrow(/rateLimit\.sharedName.*non-empty string/);
    expect(() => pool(7)).toThrow(/rateLimit\.sharedName/);
    expect(() => pool('a-7f3a', [['a', 'b']])).toThrow(/groups\[0\].*sharedName/);
    expect(() => pool('a-7f3a')).not.toThrow();
  });

  test("a refusal that lasts to the daily reset is the fleet's day spent: parked as a local spent day is, so the lower tier serves", async () => {
    // The clock starts at 1,000,000 ms: the next reset (00:00 UTC) is 85,400,000 ms away.
    const toReset = 86_400_000 - 1_000_000;
    for (const [waitMs, parked] of [
      [toReset, true],
      [toReset - 59_000, true],
      [toReset - 61_000, false], // a long wait, but not to the reset: a cooldown
      [59_000, false],
    ] as const) {
      const { store, asked } = scriptedStore(waitMs, 0);
      const reported: string[] = [];
      store.report = (limit, change) => (reported.push(`${limit.key} ${change.type}`), Promise.resolve());
      const h = harness([{ name: 'a', rateLimit: { perSecond: 10, perDay: 1000 } }, { name: 'spare', priority: 'low' }], { sharedQuota: { store }, deadlineMs: 30_000 });
      const call = start(h.pool.execute(h.op));
      await h.clock.advance(0);
      await h.clock.advance(parked ? 0 : 60_000);
      await call.promise;
      expect(asked).toHaveLength(1);
      const events = h.events.filter((e) => e.type === 'endpoint-parked');
      if (parked) {
        expect(call.value).toBe('spare');
        expect(events).toEqual([{ type: 'endpoint-parked', endpoint: 'a', untilMs: 86_400_000 }]);
        expect(h.pool.stats().find((e) => e.name === 'a')!.status).not.toBe('ok');
      } else {
        // Over quota is not ill health: a wait never spills to the lower tier (by design).
        expect(call.error).toMatchObject({ code: 'RATE_LIMITED' });
        expect(events).toEqual([]);
      }
      expect(reported).toEqual([]); // the fleet knows already
    }
  });

  test('a hedge the store did not answer in time gives its slot back (a later attempt of the call may hedge)', async () => {
    const spec = (name: string) => ({ name, rateLimit: { perSecond: 10 } });
    const { store } = scriptedStore(0, 'hang', 0, 0);
    const h = harness([spec('a'), spec('b'), spec('c'), spec('d')], { sharedQuota: { store, timeoutMs: 20 }, hedge: { afterMs: 50, maxHedges: 1 } });
    h.eps['a']!.then(fail('transient', 100));
    for (const n of ['b', 'c', 'd']) h.eps[n]!.then(ok(n, 300));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(1_000);
    await call.promise;
    expect(call.error).toBeUndefined();
    expect(h.events.filter((e) => e.type === 'hedge')).toHaveLength(1);
  });

  test('a hedge admitted after the budget was spent meanwhile is not sent', async () => {
    const spec = (name: string) => ({ name, rateLimit: { perSecond: 10 } });
    let release: (() => void) | undefined;
    const store: LimiterStore = {
      acquire: (limit) => (limit.key === 'endpoint:b' && release === undefined ? new Promise<number>((r) => (release = () => r(0))) : Promise.resolve(0)),
    };
    const h = harness([spec('a'), spec('b'), spec('c')], { sharedQuota: { store, timeoutMs: 1_000 }, hedge: { afterMs: 50 }, retryBudget: { ratio: 0, minPerSecond: 0.1 }, strategy: 'ordered' });
    h.eps['a']!.then(ok('slow', 500));
    h.eps['c']!.then(fail('transient'));
    const first = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(60); // its hedge on b waits for the store
    expect(release).toBeDefined();
    // Another call's retry takes the budget's only retry meanwhile.
    const other = start(h.pool.execute(h.op, { pin: 'c' }));
    await h.clock.advance(200);
    await other.promise;
    expect(other.value).toBe('c');
    release!();
    await h.clock.advance(500);
    await first.promise;
    expect(first.value).toBe('slow');
    expect(h.events.filter((e) => e.type === 'hedge')).toEqual([]);
  });

  test('a short refusal close to the daily reset is a wait, not a spent day', async () => {
    const { store } = scriptedStore(20_000);
    const clock = new FakeClock(86_400_000 - 30_000); // 30 s before the reset
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, perDay: 1000 } }, { name: 'spare', priority: 'low' }], { sharedQuota: { store }, deadlineMs: 10_000, clock });
    const call = start(h.pool.execute(h.op));
    await clock.advance(0);
    await call.promise;
    expect(h.events.filter((e) => e.type === 'endpoint-parked')).toEqual([]);
    expect(call.error).toMatchObject({ code: 'RATE_LIMITED' });
  });

  test('asks the store for every attempt on a limited endpoint, with its key and limit; unlimited endpoints skip it', async () => {
    const { store, asked } = scriptedStore(0);
    const h = harness([{ name: 'a', rateLimit: { perSecond: 3, mode: 'paced' } }, { name: 'free', priority: 'low' }], { sharedQuota: { store } });
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(asked).toEqual([{ key: 'endpoint:a', perSecond: 3, burst: undefined, mode: 'paced', marginMs: 25, perDay: undefined, dailyStopFraction: 0.95, dailyResetUtcHour: 0 }]);
    expect(await h.pool.execute(h.op, { pin: 'free' })).toBe('free');
    expect(asked).toHaveLength(1);
  });

  test('a group is one store key', async () => {
    const { store, asked } = scriptedStore(0);
    const h = harness([{ name: 'k1', rateLimit: { perSecond: 3 } }, 'k2'], { sharedQuota: { store }, groups: [['k1', 'k2']] });
    await h.pool.execute(h.op);
    expect(asked[0]!.key).toBe('group:k1+k2');
  });

  test('an endpoint left alone when its group is dissolved asks the store under its own key', async () => {
    const { store, asked } = scriptedStore(0, 0, 0, 0);
    const h = harness([{ name: 'a', rateLimit: { perSecond: 3 } }, { name: 'b', rateLimit: { perSecond: 3 } }], { sharedQuota: { store }, groups: [['a', 'b']] });
    await h.pool.execute(h.op);
    // b leaves the pool: a is alone.
    h.pool.setEndpoints([{ name: 'a', conn: h.eps['a']!, rateLimit: { perSecond: 3 } }], []);
    await h.pool.execute(h.op);
    // Grouped again, then the group is dissolved while b's limit changes.
    h.pool.setEndpoints([{ name: 'a', conn: h.eps['a']!, rateLimit: { perSecond: 3 } }, { name: 'b', conn: h.eps['b']!, rateLimit: { perSecond: 3 } }], [['a', 'b']]);
    h.pool.setEndpoints([{ name: 'a', conn: h.eps['a']!, rateLimit: { perSecond: 3 } }, { name: 'b', conn: h.eps['b']!, rateLimit: { perSecond: 4 } }], []);
    await h.pool.execute(h.op, { pin: 'a' });
    expect(asked.map((l) => l.key)).toEqual(['group:a+b', 'endpoint:a', 'endpoint:a']);
  });

  test('an admission given for a quota the endpoint no longer has (setEndpoints regrouped it meanwhile) is asked again under the new key', async () => {
    const asked: string[] = [];
    const answers: ((ms: number) => void)[] = [];
    const store: LimiterStore = {
      acquire(limit) {
        asked.push(limit.key);
        return new Promise((resolve) => answers.push(resolve));
      },
    };
    const h = harness([{ name: 'a', rateLimit: { perSecond: 3 } }, { name: 'b', rateLimit: { perSecond: 3 } }], { sharedQuota: { store, timeoutMs: 50 } });
    const call = start(h.pool.execute(h.op, { pin: 'a' }));
    await h.clock.advance(1);
    h.pool.setEndpoints([{ name: 'a', conn: h.eps['a']!, rateLimit: { perSecond: 3 } }, { name: 'b', conn: h.eps['b']!, rateLimit: { perSecond: 3 } }], [['a', 'b']]);
    answers[0]!(0);
    await h.clock.advance(0);
    expect(h.eps['a']!.calls).toBe(0);
    expect(asked).toEqual(['endpoint:a', 'group:a+b']);
    answers[1]!(0);
    await h.clock.advance(0);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps['a']!.calls).toBe(1);
  });

  test('a late "invalid key" answer from an endpoint replaced by setEndpoints disables nothing: no event, no report to the fleet', async () => {
    const { store, reported } = recordingStore();
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10 } }], { sharedQuota: { store } });
    h.eps['a']!.then(fail({ class: 'permanent', disableEndpoint: true }, 100));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    // The user rotates the invalid key: a new connection under the same name.
    const fresh = new FakeEndpoint('a', ok('fresh'));
    h.pool.setEndpoints([{ name: 'a', conn: fresh, rateLimit: { perSecond: 10 } }]);
    await h.clock.advance(90);
    await call.promise;
    expect(call.value).toBe('fresh');
    expect(h.events.filter((e) => e.type === 'endpoint-disabled')).toEqual([]);
    expect(h.pool.stats()[0]!.status).toBe('ok');
    expect(reported).toEqual([]);
  });

  test.each([
    ['a ceiling hint', 'alone', { class: 'rate-limited', ceilingPerSecond: 2 }],
    ['a ceiling hint', 'in a group', { class: 'rate-limited', ceilingPerSecond: 2 }],
    ['a "day spent" answer', 'alone', { class: 'rate-limited', dailyQuotaExhausted: true }],
    ['a "day spent" answer', 'in a group', { class: 'rate-limited', dailyQuotaExhausted: true }],
  ] as const)('%s from an endpoint (%s) replaced by setEndpoints leaves the live one alone: no event, no report to the fleet', async (_what, where, verdict) => {
    const { store, reported } = recordingStore(true);
    const grouped = where === 'in a group';
    const rateLimit = { perSecond: 10, perDay: 1000 };
    const h = harness([{ name: 'a', rateLimit }, ...(grouped ? [{ name: 'b', rateLimit }] : [])], { sharedQuota: { store }, ...(grouped ? { groups: [['a', 'b']] } : {}), strategy: 'ordered' });
    h.eps['a']!.then(fail(verdict, 100));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    // The user rotates the key: a new connection under the same name.
    const fresh = new FakeEndpoint('a', ok('fresh'));
    const seen = h.events.length;
    h.pool.setEndpoints([{ name: 'a', conn: fresh, rateLimit }, ...(grouped ? [{ name: 'b', conn: h.eps['b']!, rateLimit }] : [])]);
    await h.clock.advance(90);
    await call.promise;
    expect(h.events.slice(seen).filter((e) => e.type === 'endpoint-recalibrated' || e.type === 'endpoint-parked')).toEqual([]);
    expect(reported).toEqual([]);
    const a = h.pool.stats()[0]!;
    expect(a.status).toBe('ok');
    expect(a.ceilingPerSecond).toBe(10);
    expect(a.ownCeilingPerSecond).toBeUndefined();
  });

  test("a late ceiling hint from a key removed from a kept group does not lower the group its live members share", async () => {
    const rateLimit = { perSecond: 10 };
    const h = harness([{ name: 'a', rateLimit }, { name: 'b', rateLimit }, { name: 'c', rateLimit }], { groups: [['a', 'b', 'c']], strategy: 'ordered' });
    h.eps['a']!.then(fail({ class: 'rate-limited', ceilingPerSecond: 2, ceilingScope: 'group' }, 100));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    const seen = h.events.length;
    // b and c keep their group (and its quota); a is gone.
    h.pool.setEndpoints([{ name: 'b', conn: h.eps['b']!, rateLimit }, { name: 'c', conn: h.eps['c']!, rateLimit }]);
    await h.clock.advance(90);
    expect(h.pool.stats().map((st) => st.ceilingPerSecond)).toEqual([10, 10]);
    expect(h.events.slice(seen).filter((e) => e.type === 'endpoint-recalibrated')).toEqual([]);
    await h.clock.advance(1000);
    expect(call.value).toBe('b');
  });

  test('a late success of an endpoint replaced by setEndpoints does not raise the live one\'s ceiling (no recovery event, no report)', async () => {
    const { store, reported } = recordingStore();
    const rateLimit = { perSecond: 10 };
    const h = harness([{ name: 'a', rateLimit }], { sharedQuota: { store }, attemptTimeoutMs: 60_000, deadlineMs: 60_000 });
    h.eps['a']!.then(fail({ class: 'rate-limited', ceilingPerSecond: 2 }), ok('late', 40_000));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    // Learned while a was live: shared, as it should be.
    expect(reported).toEqual(['endpoint:a ceiling']);
    const seen = h.events.length;
    h.pool.setEndpoints([{ name: 'a', conn: new FakeEndpoint('a'), rateLimit }]);
    // The old a answers after the quiet period: its own ceiling would recover a step.
    await h.clock.advance(40_000);
    await call.promise;
    expect(call.value).toBe('late');
    expect(h.events.slice(seen).filter((e) => e.type === 'endpoint-recalibrated')).toEqual([]);
    expect(reported).toEqual(['endpoint:a ceiling']);
  });

  test('a ceiling learned from a hint is shared with the fleet when nobody listens to events too', async () => {
    const { store, reported } = recordingStore();
    // No onEvent and no pool.on: the hint's event used to be skipped, and with it the report.
    const pool = new Pool<string>({
      endpoints: [{ name: 'a', conn: 'a', rateLimit: { perSecond: 10 } }],
      classify: () => ({ class: 'rate-limited', ceilingPerSecond: 2 }),
      clock: new FakeClock(1_000_000),
      sharedQuota: { store },
      maxAttempts: 1,
    });
    await pool.execute(() => Promise.reject(new Error('429'))).catch(() => undefined);
    expect(pool.stats()[0]!.ceilingPerSecond).toBe(2);
    expect(reported).toEqual(['endpoint:a ceiling']);
    await pool.close();
  });

  test('when the fleet quota is spent, the endpoint is skipped until it refills and another serves', async () => {
    const { store } = scriptedStore(400, 0);
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10 } }, { name: 'b', rateLimit: { perSecond: 10 } }], { sharedQuota: { store } });
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.pool.stats()[0]!.cooldownRemainingMs).toBe(400);
  });

  test('a store that hangs: after its timeout the call goes ahead on local limits at the degraded share, then recovers', async () => {
    const { store, asked } = scriptedStore('hang', 0);
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10 } }], { sharedQuota: { store, timeoutMs: 30, degradedShare: 0.5, retryAfterMs: 1000 } });
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(29);
    expect(call.settled).toBe(false);
    await h.clock.advance(1);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.events.find((e) => e.type === 'store-degraded')).toBeDefined();
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(5);
    // While degraded, calls do not wait on the store at all.
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(asked).toHaveLength(1);
    await h.clock.advance(1000);
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(asked).toHaveLength(2);
    expect(h.trace((e) => e.type.startsWith('store'))).toEqual(['store-degraded', 'store-recovered']);
    // Local limits stay at the share for retryAfterMs + 1 s after the recovery (the fleet catches up), then go back.
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(5);
    await h.clock.advance(2000);
    await h.pool.execute(h.op);
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(10);
  });

  test('a store that fails degrades at once; the call is not failed', async () => {
    const { store } = scriptedStore('fail');
    const h = harness([{ name: 'a', rateLimit: { perSecond: 4 } }], { sharedQuota: { store } });
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(2);
  });

  test('regression: a store outage neither hands out a fresh burst nor loses the configured one', async () => {
    const { store } = scriptedStore(0, 'fail', 'fail', 'fail', 'fail', 'fail');
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, burst: 2 } }], { sharedQuota: { store, retryAfterMs: 1000 } });
    const t0 = h.clock.now();
    await h.pool.execute(h.op);
    // The store fails: degraded to 5/s with a bucket of 1, as full as it was (half), not refilled.
    const queued = Array.from({ length: 5 }, () => start(h.pool.execute(h.op)));
    await h.clock.advance(0);
    expect(h.eps.a!.startedAt.filter((t) => t === t0)).toHaveLength(1);
    await h.clock.advance(1000);
    expect(h.eps.a!.startedAt.filter((t) => t < t0 + 1000).length).toBeLessThanOrEqual(1 + 5);
    await h.clock.advance(1000);
    await Promise.all(queued.map((c) => c.promise));
    await h.pool.execute(h.op);
    expect(h.trace((e) => e.type.startsWith('store'))).toEqual(['store-degraded', 'store-recovered']);
    // Recovered and idle for a while: the bucket is back to its configured burst of 2, not 10.
    await h.clock.advance(5000);
    const t1 = h.clock.now();
    const burst = Array.from({ length: 5 }, () => start(h.pool.execute(h.op)));
    await h.clock.advance(0);
    expect(h.eps.a!.startedAt.filter((t) => t === t1)).toHaveLength(2);
    await h.clock.advance(1000);
    await Promise.all(burst.map((c) => c.promise));
  });

  test('regression: endpoints installed while the store is down start at the degraded share', async () => {
    const { store } = scriptedStore('fail');
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10 } }], { sharedQuota: { store, retryAfterMs: 1000 } });
    await h.pool.execute(h.op);
    h.pool.setEndpoints([{ name: 'b', conn: h.eps.a!, rateLimit: { perSecond: 8 } }]);
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(4);
    await h.clock.advance(1000);
    await h.pool.execute(h.op);
    // Installed during the ramp back: still at the share until it ends.
    h.pool.setEndpoints([{ name: 'b', conn: h.eps.a!, rateLimit: { perSecond: 8 } }, { name: 'c', conn: h.eps.a!, rateLimit: { perSecond: 6 } }]);
    expect(h.pool.stats().map((s) => s.ceilingPerSecond)).toEqual([4, 3]);
    await h.clock.advance(2000);
    await h.pool.execute(h.op);
    expect(h.pool.stats().map((s) => s.ceilingPerSecond)).toEqual([8, 6]);
  });

  test('aborting a call while it waits for the store leaves nothing behind', async () => {
    const { store } = scriptedStore('hang');
    const h = harness([{ name: 'a', rateLimit: { perSecond: 4 } }], { sharedQuota: { store, timeoutMs: 1000 } });
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(10);
    ac.abort();
    await call.promise;
    expect(h.clock.pendingForegroundTimers).toBe(0);
    expect(h.eps.a!.calls).toBe(0);
  });

  test('regression (issue 19): after a recovery the local share holds for retryAfterMs + 1 s, so a recovered process does not run at full rate beside degraded ones', async () => {
    const { store } = scriptedStore('fail');
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, mode: 'paced', marginMs: 0 } }], { sharedQuota: { store, degradedShare: 0.5, retryAfterMs: 500 } });
    await h.pool.execute(h.op);
    await h.clock.advance(600);
    const t0 = h.clock.now();
    const calls = Array.from({ length: 30 }, () => start(h.pool.execute(h.op)));
    await h.clock.advance(1400);
    // Recovered at t0, ramping back until t0 + 1.5 s: 5/s (paced), not 10/s.
    expect(h.eps.a!.startedAt.filter((t) => t >= t0 && t < t0 + 1000).length).toBeLessThanOrEqual(5);
    await h.clock.advance(3000);
    expect(h.eps.a!.startedAt.filter((t) => t >= t0 + 2000 && t < t0 + 3000).length).toBeGreaterThanOrEqual(9);
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
  });

  test('a store that declares degradedHoldMs: after it fails, local calls wait that long (the fleet\'s reserved slots leave first)', async () => {
    const answers = scriptedStore(...Array<'fail'>(10).fill('fail'));
    const store: LimiterStore = { acquire: answers.store.acquire, degradedHoldMs: 2000 };
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10 } }], { sharedQuota: { store, degradedShare: 0.5, retryAfterMs: 60_000 } });
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1999);
    expect(h.eps.a!.startedAt).toEqual([]);
    await h.clock.advance(1);
    await call.promise;
    expect(h.eps.a!.startedAt).toEqual([t0 + 2000]);
  });

  test('regression (issue 19): a full bucket starts at most degradedShare full when the store fails, not nearly full', async () => {
    const { store } = scriptedStore(...Array<'fail'>(30).fill('fail'));
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, burst: 10 } }], { sharedQuota: { store, degradedShare: 0.5, retryAfterMs: 60_000 } });
    const t0 = h.clock.now();
    const calls = Array.from({ length: 20 }, () => start(h.pool.execute(h.op)));
    await h.clock.advance(999);
    // Degraded bucket: 5/s, size 5, starting with 2.5 tokens: 2 at once, then 5 more within the second.
    // (Kept full, it would have let 5 go at once and 10 in the second.)
    expect(h.eps.a!.startedAt.filter((t) => t === t0)).toHaveLength(2);
    expect(h.eps.a!.startedAt.filter((t) => t < t0 + 1000).length).toBeLessThanOrEqual(7);
    await h.clock.advance(5000);
    await Promise.all(calls.map((c) => c.promise));
  });

  test('regression (issue 19): a ceiling learned while the store is down applies at degradedShare, and is kept after recovery', async () => {
    const { store } = scriptedStore('fail', 0, 0, 0);
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, mode: 'paced' } }], { sharedQuota: { store, degradedShare: 0.5, retryAfterMs: 1000 } });
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 4 }));
    const first = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(h.events.some((e) => e.type === 'store-degraded')).toBe(true);
    // Learned 4/s while degraded: 2/s locally, not 4/s.
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(2);
    await h.clock.advance(3000);
    await first.promise;
    await h.pool.execute(h.op, { pin: 'a' });
    expect(h.events.some((e) => e.type === 'store-recovered')).toBe(true);
    await h.clock.advance(3000);
    await h.pool.execute(h.op, { pin: 'a' });
    // Recovered: the learned 4/s, not the configured 10/s.
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(4);
  });

  test('learned ceilings, parkings and disabled endpoints go to store.report; what the store shares is applied without echo', async () => {
    const reported: [string, SharedChange][] = [];
    let listener: ((key: string, state: SharedState) => void) | undefined;
    let unsubscribed = false;
    const store: LimiterStore = {
      acquire: () => Promise.resolve(0),
      report: (limit, change) => (reported.push([limit.key, change]), Promise.resolve()),
      subscribe: (l) => ((listener = l), () => void (unsubscribed = true)),
    };
    const h = harness(
      [
        { name: 'a', rateLimit: { perSecond: 10 } },
        { name: 'b', rateLimit: { perSecond: 10, perDay: 100 } },
        { name: 'c', rateLimit: { perSecond: 10 } },
      ],
      { sharedQuota: { store }, strategy: 'ordered' },
    );
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    h.eps.b!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    const first = start(h.pool.execute(h.op));
    await h.clock.advance(500);
    expect(first.value).toBe('c');
    h.eps.c!.then(fail({ class: 'permanent', disableEndpoint: true }));
    const second = start(h.pool.execute(h.op, { pin: 'c' }));
    await h.clock.advance(500);
    await second.promise.catch(() => undefined);
    expect(reported.map(([k, c]) => `${k} ${c.type}`)).toEqual(['endpoint:a ceiling', 'endpoint:b parked', 'endpoint:c disabled']);
    expect(reported[0]![1]).toEqual({ type: 'ceiling', perSecond: 3 });
    expect((reported[1]![1] as { forMs: number }).forMs).toBeGreaterThan(0);
    reported.length = 0;
    h.events.length = 0;
    // Another process learned about a: 2/s, parked for a minute; c re-enabled, a disabled.
    listener!('endpoint:a', { ceilingPerSecond: 2, parkedForMs: 60_000, disabled: new Map([['a', 600_000]]) });
    const a = h.pool.stats()[0]!;
    expect(a.ceilingPerSecond).toBe(2);
    expect(a.status).toBe('disabled');
    expect(h.trace()).toEqual(['endpoint-recalibrated:a', 'endpoint-parked:a', 'endpoint-disabled:a']);
    // Applying it twice changes nothing; the fleet forgetting a's mark re-enables it.
    listener!('endpoint:a', { ceilingPerSecond: 2, parkedForMs: 59_000, disabled: new Map([['a', 599_000]]) });
    listener!('endpoint:a', { ceilingPerSecond: 2, parkedForMs: 59_000, disabled: new Map() });
    expect(h.trace()).toEqual(['endpoint-recalibrated:a', 'endpoint-parked:a', 'endpoint-disabled:a', 'endpoint-enabled:a']);
    expect(reported).toEqual([]);
    // Enabling by hand is shared too.
    h.pool.enableEndpoint('c');
    expect(reported.map(([k, c]) => `${k} ${c.type}`)).toEqual(['endpoint:c enabled']);
    await h.pool.close();
    expect(unsubscribed).toBe(true);
  });

  test('a bad store is rejected in the constructor', () => {
    expect(() => harness(['a'], { sharedQuota: { store: {} as never } })).toThrow(/sharedQuota.store: expected a LimiterStore/);
  });
});
