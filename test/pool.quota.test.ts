import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type PoolError } from '../src/index.js';
import { classify, fail, FakeEndpoint, harness, ok, start } from './support.js';
import { FakeClock } from '../src/testing/index.js';

const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);
const DAY = 86_400_000;

describe('paced admission', () => {
  test("rateLimit { mode: 'paced' } spaces an endpoint's calls by (1000/perSecond) × (1 + margin/1000)", async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 3, mode: 'paced' } }]);
    const calls = Array.from({ length: 4 }, () => start(h.pool.execute(h.op, { deadlineMs: 60_000 })));
    await h.clock.advance(5000);
    await Promise.all(calls.map((c) => c.promise));
    const gaps = h.eps.a!.startedAt.slice(1).map((t, i) => t - h.eps.a!.startedAt[i]!);
    // Slots 341.67 ms apart on a schedule, each start on the first whole millisecond at or
    // after its slot: 342, 683.33 -> 684, 1025 (no rounding added up: not 1026).
    expect(gaps).toEqual([342, 342, 341]);
  });

  test('paced mode rejects a burst setting', () => {
    expect(() => harness([{ name: 'a', rateLimit: { perSecond: 3, mode: 'paced', burst: 3 } }])).toThrow(/rateLimit.burst: expected nothing in 'paced' mode/);
  });
});

describe('learned ceilings', () => {
  test('a ceiling hint recalibrates the limiter, cools the endpoint for one interval of the new ceiling, and shows in stats()', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 5 } }, 'b']);
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    expect(await h.pool.execute(h.op)).toBe('b');
    const a = h.pool.stats()[0]!;
    expect(a.ceilingPerSecond).toBe(3);
    expect(a.cooldownRemainingMs).toBe(334); // one slot at 3/s
    expect(a.status).toBe('cooling');
    expect(h.events.find((e) => e.type === 'endpoint-recalibrated')).toEqual({ type: 'endpoint-recalibrated', endpoint: 'a', perSecond: 3, scope: 'key', reason: 'hint' });
    await h.clock.advance(334);
    expect(await h.pool.execute(h.op)).toBe('a');
  });

  test('an endpoint without a limit gets a paced one at the learned ceiling', async () => {
    const h = harness(['a']);
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 2 }));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('a');
    const second = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(second.settled).toBe(false); // paced: 513 ms after the last call
    await h.clock.advance(513);
    await second.promise;
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(2);
  });
});

describe('daily quotas', () => {
  test('setEndpoints that gives an endpoint a new quota (another limit, a group made or left) keeps what the day has spent: the count and a park', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, perDay: 4, dailyStopFraction: 1 } }, { name: 'b', rateLimit: { perSecond: 10, perDay: 4, dailyStopFraction: 1 } }]);
    h.eps['a']!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    await h.pool.execute(h.op);
    await h.pool.execute(h.op, { pin: 'b' });
    const day = () => h.pool.stats().map((s) => `${s.name}:${s.status}:${s.dailyCount}`);
    expect(day()).toEqual(['a:parked:1', 'b:ok:2']);
    const cfg = (perSecond: number) => [
      { name: 'a', conn: h.eps['a']!, rateLimit: { perSecond, perDay: 4, dailyStopFraction: 1 } },
      { name: 'b', conn: h.eps['b']!, rateLimit: { perSecond, perDay: 4, dailyStopFraction: 1 } },
    ];
    h.pool.setEndpoints(cfg(5));
    expect(day()).toEqual(['a:parked:1', 'b:ok:2']);
    // One account for both: it has spent what each key spent; a's park stays a's own (not the account's).
    h.pool.setEndpoints(cfg(5), [['a', 'b']]);
    expect(day()).toEqual(['a:parked:3', 'b:ok:3']);
    await h.pool.execute(h.op, { pin: 'b' });
    expect(day()).toEqual(['a:parked:4', 'b:parked:4']);
    h.pool.setEndpoints(cfg(5), []);
    expect(day()).toEqual(['a:parked:4', 'b:parked:4']);
    const refused = await h.pool.execute(h.op, { pin: 'b' }).catch((e: unknown) => e);
    expect(isPoolError(refused) && refused.code).toBe('PIN_UNAVAILABLE');
  });

  test('a key whose server said "day spent" stays parked when setEndpoints puts it in a group, alone: its siblings serve', async () => {
    const rateLimit = { perSecond: 10, perDay: 100 };
    const h = harness([{ name: 'a', rateLimit }, { name: 'b', rateLimit }], { strategy: 'ordered' });
    h.eps['a']!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    expect(await h.pool.execute(h.op)).toBe('b');
    const parkedUntil = h.pool.stats()[0]!.parkedUntilMs;
    expect(parkedUntil).toBeGreaterThan(h.clock.now());
    h.pool.setEndpoints([{ name: 'a', conn: h.eps['a']!, rateLimit }, { name: 'b', conn: h.eps['b']!, rateLimit }], [['a', 'b']]);
    expect(h.pool.stats().map((st) => st.status)).toEqual(['parked', 'ok']);
    expect(h.pool.stats()[0]!.parkedUntilMs).toBe(parkedUntil);
    const callsToA = h.eps['a']!.calls;
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.eps['a']!.calls).toBe(callsToA);
    // Until the reset, as before.
    await h.clock.advance(parkedUntil! - h.clock.now());
    expect(h.pool.stats()[0]!.status).toBe('ok');
    expect(await h.pool.execute(h.op)).toBe('a');
  });

  test('a key removed by setEndpoints and added back (groups not given) rejoins its group: it counts against the account again', async () => {
    const rateLimit = { perSecond: 10, perDay: 100 };
    const h = harness([{ name: 'a', rateLimit }, { name: 'b', rateLimit }, { name: 'c', rateLimit }], { groups: [['a', 'b']] });
    const cfg = (names: string[]) => names.map((name) => ({ name, conn: h.eps[name]!, rateLimit }));
    // Maintenance: a is taken out, then put back, with no groups argument either time.
    h.pool.setEndpoints(cfg(['b', 'c']));
    h.pool.setEndpoints(cfg(['a', 'b', 'c']));
    await h.pool.execute(h.op, { pin: 'a' });
    await h.pool.execute(h.op, { pin: 'b' });
    // One account's day: a and b count together again.
    expect(h.pool.stats().map((st) => st.dailyCount)).toEqual([2, 2, 0]);
  });

  test.each([
    ['paced', { perSecond: 2, mode: 'paced' }, 512.5],
    ['bucket', { perSecond: 2, burst: 2 }, 500],
  ] as const)('a new quota from setEndpoints (%s) counts the calls its predecessors let leave in the last second: no fresh burst on the same account', async (_kind, rateLimit, gap) => {
    // mix property, seed 26: a group rebuilt around a replaced member started its pacing afresh,
    // and the kept member's next attempt left 57 ms after the one before (paced at 2.68/s).
    const h = harness([{ name: 'a', rateLimit }, { name: 'b', rateLimit }], { groups: [['a', 'b']], deadlineMs: 60_000 });
    const at = (name: string) => h.eps[name]!.startedAt;
    const spend = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const c = start(h.pool.execute(h.op, { pin: 'a' }));
        await h.clock.advance(0);
        while (!c.settled) await h.clock.advance(1);
      }
    };
    await spend(rateLimit.perSecond);
    const last = () => Math.max(...at('a'), ...at('b'));
    const rebuilt = [
      // b replaced (a new connection): the group's quota is made again around a.
      () => h.pool.setEndpoints([{ name: 'a', conn: h.eps['a']!, rateLimit }, { name: 'b', conn: (h.eps['b'] = new FakeEndpoint('b')), rateLimit }]),
      // The group dissolved: a gets a quota of its own.
      () => h.pool.setEndpoints([{ name: 'a', conn: h.eps['a']!, rateLimit }, { name: 'b', conn: h.eps['b']!, rateLimit }], []),
      // a's limit changed.
      () => h.pool.setEndpoints([{ name: 'a', conn: h.eps['a']!, rateLimit: { ...rateLimit, perSecond: 2.5 } }, { name: 'b', conn: h.eps['b']!, rateLimit }]),
    ];
    for (const change of rebuilt) {
      const before = last();
      change();
      await spend(1);
      // At the old pace (or the new one): nothing leaves sooner than the limit allows after the last call.
      expect(at('a').at(-1)! - before).toBeGreaterThanOrEqual(gap / 1.25 - 1);
      await spend(2);
    }
  });

  test.each([
    ['a bucket to paced', { perSecond: 2, burst: 2 }, { perSecond: 2, mode: 'paced' }],
    ['paced to a bucket', { perSecond: 2, mode: 'paced' }, { perSecond: 2, burst: 2 }],
  ] as const)('the last second carries across a change of mode too (%s)', async (_kind, from, to) => {
    const h = harness([{ name: 'a', rateLimit: from }], { deadlineMs: 60_000 });
    for (let i = 0; i < 2; i++) {
      const c = start(h.pool.execute(h.op));
      while (!c.settled) await h.clock.advance(1);
    }
    const before = h.eps.a!.startedAt.at(-1)!;
    h.pool.setEndpoints([{ name: 'a', conn: h.eps.a!, rateLimit: to }]);
    const c = start(h.pool.execute(h.op));
    while (!c.settled) await h.clock.advance(1);
    // Two calls just left under a limit of 2 a second: the next one waits, under either limiter.
    expect(h.eps.a!.startedAt.at(-1)! - before).toBeGreaterThanOrEqual(400);
  });

  test('perDay stops admitting at 95 % until midnight UTC, then resumes', async () => {
    const clock = new FakeClock(DAY * 100 + 1000);
    const a = new FakeEndpoint('a');
    const b = new FakeEndpoint('b');
    const pool = new Pool<FakeEndpoint>({
      endpoints: [
        { name: 'a', conn: a, rateLimit: { perDay: 20 } },
        { name: 'b', conn: b, priority: 'low' },
      ],
      classify,
      clock,
    });
    const op = async (ep: FakeEndpoint) => ep.name;
    const served: string[] = [];
    for (let i = 0; i < 21; i++) served.push(await pool.execute(op));
    expect(served.filter((s) => s === 'a').length).toBe(19);
    expect(served.at(-1)).toBe('b'); // a is out of the running, so the low tier serves
    expect(pool.stats()[0]).toMatchObject({ status: 'parked', dailyCount: 19 });
    await clock.advance(DAY);
    expect(await pool.execute(op)).toBe('a');
    expect(pool.stats()[0]!.dailyCount).toBe(1);
  });

  test('a dailyQuotaExhausted hint parks the endpoint until the next reset (configurable hour), with an event, and the call moves on', async () => {
    const h = harness(['a', 'b'], { dailyResetUtcHour: 6 });
    h.eps.a!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    expect(await h.pool.execute(h.op)).toBe('b');
    const parked = h.events.find((e) => e.type === 'endpoint-parked');
    const nextReset = Math.ceil((h.clock.now() - 6 * 3_600_000) / DAY) * DAY + 6 * 3_600_000;
    expect(parked).toEqual({ type: 'endpoint-parked', endpoint: 'a', untilMs: nextReset });
    expect(h.trace((e) => e.type === 'retry-scheduled')).toEqual([]);
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.pool.stats()[0]).toMatchObject({ status: 'parked', parkedUntilMs: nextReset });
    await h.clock.advance(nextReset - h.clock.now());
    expect(await h.pool.execute(h.op)).toBe('a');
  });

  test('when every endpoint is parked, NO_ENDPOINT says when the first one resets', async () => {
    const h = harness(['a'], { maxAttempts: 2 });
    h.eps.a!.then(fail({ class: 'rate-limited', dailyQuotaExhausted: true }));
    const err = await h.pool.execute(h.op).catch((e: unknown) => e);
    expect(code(err)).toBe('NO_ENDPOINT');
    expect((err as PoolError).retryAfterMs).toBe(DAY - (h.clock.now() % DAY));
  });
});

describe('disabled endpoints', () => {
  test('a disableEndpoint hint takes the endpoint out until enableEndpoint, with events; the call moves on', async () => {
    const h = harness(['a', 'b'], { maxAttempts: 2 });
    h.eps.a!.then(fail({ class: 'permanent', disableEndpoint: true }));
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.pool.stats()[0]!.status).toBe('disabled');
    expect(await h.pool.execute(h.op)).toBe('b');
    expect(h.eps.a!.calls).toBe(1);
    const pinned = await h.pool.execute(h.op, { pin: 'a' }).catch((e: unknown) => e);
    expect((pinned as Error).message).toMatch(/disabled/);
    h.pool.enableEndpoint('a');
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(h.trace((e) => e.type.startsWith('endpoint-'))).toEqual(['endpoint-disabled:a', 'endpoint-enabled:a']);
  });

  test('a plain permanent failure does not blame the endpoint', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(fail('permanent'));
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.stats()[0]).toMatchObject({ status: 'ok', failures5m: 0 });
    expect(await h.pool.execute(h.op)).toBe('a');
  });
});

describe('groups', () => {
  test('members share one limiter: same ceiling, same pacing, same cooldown; capacity counts the group once', async () => {
    const h = harness(
      [
        { name: 'k1', rateLimit: { perSecond: 3, mode: 'paced' } },
        { name: 'k2', rateLimit: { perSecond: 3, mode: 'paced' } },
        { name: 'k3' },
        { name: 'solo', rateLimit: { perSecond: 2 } },
      ],
      { groups: [['k1', 'k2', 'k3']], strategy: 'round-robin' },
    );
    expect(h.pool.capacity()).toBe(3 + 2);
    const calls = Array.from({ length: 9 }, () => start(h.pool.execute(h.op, { deadlineMs: 60_000 })));
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    const group = [...h.eps.k1!.startedAt, ...h.eps.k2!.startedAt, ...h.eps.k3!.startedAt].sort((x, y) => x - y);
    // Paced as one: consecutive group calls are on slots 341.67 ms apart, whole milliseconds (341 or 342).
    for (let i = 1; i < group.length; i++) expect(group[i]! - group[i - 1]!).toBeGreaterThanOrEqual(341);
    expect(group[group.length - 1]! - group[0]!).toBeGreaterThanOrEqual(Math.floor((group.length - 1) * (1025 / 3)));
    expect(group.length + h.eps.solo!.calls).toBe(9);
  });

  test('a rate-limited answer on one member cools down the whole group', async () => {
    const h = harness(['k1', 'k2', 'other'], { groups: [['k1', 'k2']] });
    h.eps.k1!.then(fail({ class: 'rate-limited', retryAfterMs: 2000 }));
    expect(await h.pool.execute(h.op)).toBe('other');
    expect(h.pool.stats().map((s) => s.status)).toEqual(['cooling', 'cooling', 'ok']);
  });

  test.each<[string, unknown, RegExp]>([
    ['unknown member', [['k1', 'nope']], /groups\[0\]\[1\]: expected the name of an endpoint of this pool, got "nope"/],
    ['member in two groups', [['k1', 'k2'], ['k2', 'k3']], /groups\[1\]\[0\]: expected a name that is in no other group/],
    ['not an array', 'k1,k2', /groups: expected an array of arrays of endpoint names/],
  ])('bad groups are rejected: %s', (_, groups, message) => {
    expect(() => harness(['k1', 'k2', 'k3'], { groups: groups as never })).toThrow(message);
  });

  test('members whose limits disagree are rejected', () => {
    expect(() =>
      harness(
        [
          { name: 'k1', rateLimit: { perSecond: 3 } },
          { name: 'k2', rateLimit: { perSecond: 5 } },
        ],
        { groups: [['k1', 'k2']] },
      ),
    ).toThrow(/groups\[0\]: expected members whose rateLimit settings agree/);
  });
});

describe('capacity and stats', () => {
  test('capacity() leaves out disabled, parked and open endpoints, and is Infinity with an unlimited live endpoint', async () => {
    const h = harness(
      [
        { name: 'a', rateLimit: { perSecond: 3 } },
        { name: 'b', rateLimit: { perSecond: 4 } },
        { name: 'c', rateLimit: { perSecond: 5 } },
      ],
      { breaker: { threshold: 1 }, maxAttempts: 1 },
    );
    expect(h.pool.capacity()).toBe(12);
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.capacity()).toBe(9);
    expect(harness(['x']).pool.capacity()).toBe(Number.POSITIVE_INFINITY);
  });

  test('usage over 5 and 15 minutes and failures over 5 minutes', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 100 } });
    await h.pool.execute(h.op);
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(6 * 60_000);
    await h.pool.execute(h.op);
    expect(h.pool.stats()[0]).toMatchObject({ usage5m: 1, usage15m: 3, failures5m: 0, successes: 2, failures: 1 });
    void ok;
  });
});
