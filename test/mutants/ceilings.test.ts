/**
 * Twenty-seventh session, first mutation run of `src/call/ceilings.ts` (learned ceilings as
 * the call loop applies them): what the limit and property tests left open
 * (bench/notes/mutation-s27.md). Fake clock, public API only.
 */
import { describe, expect, test } from 'vitest';
import type { PoolEvent } from '../../src/index.js';
import { fail, harness, ok, start } from '../support.js';

type Recal = Extract<PoolEvent, { type: 'endpoint-recalibrated' }>;
const recal = (events: PoolEvent[]) => events.filter((e): e is Recal => e.type === 'endpoint-recalibrated');

describe('a ceiling that falls while calls wait for their turns', () => {
  test.each(['paced', 'bucket'] as const)('%s: the queued calls are re-timed at the new ceiling, not sent at the turns promised at the old one', async (mode) => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, mode } }]);
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 2 }, 5));
    // Paced: one call goes, nine wait. Bucket (10 tokens): ten go at once, ten wait.
    const n = mode === 'paced' ? 10 : 20;
    const calls = Array.from({ length: n }, () => start(h.pool.execute(h.op, { deadlineMs: 60_000 })));
    await h.clock.advance(10_000);
    await Promise.all(calls.map((c) => c.promise));
    expect(calls.every((c) => c.value === 'a')).toBe(true);
    const t429 = h.eps.a!.startedAt[0]! + 5;
    // Everything sent after the 429 keeps to 2 a second: spaced 500 ms when paced, a token
    // bucket of 2 when not (any k calls span at least (k - burst) / 2 s).
    const after = h.eps.a!.startedAt.filter((t) => t >= t429);
    // The refused call again, and those that waited.
    expect(after.length).toBe(mode === 'paced' ? 10 : 11);
    const burst = mode === 'paced' ? 1 : 2;
    for (let i = 0; i < after.length; i++) {
      for (let j = i + 1; j < after.length; j++) {
        expect(j - i + 1, `calls ${i}..${j}: ${after.join(', ')}`).toBeLessThanOrEqual(burst + (2 * (after[j]! - after[i]!)) / 1000 + 1e-9);
      }
    }
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(2);
  });
});

describe('a ceiling that falls under calls that can no longer make their deadline', () => {
  test('the queued calls whose new turn is past their deadline fail at once, not at the deadline; the others keep their place', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, mode: 'paced' } }]);
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 2 }, 5));
    const t0 = h.clock.now();
    const settledAt: number[] = [];
    const calls = Array.from({ length: 8 }, (_, i) => {
      const c = start(h.pool.execute(h.op, { deadlineMs: 1_500, retry: 'none' }));
      void c.promise.then(() => (settledAt[i] = h.clock.now() - t0));
      return c;
    });
    await h.clock.advance(10);
    // The first was refused at 5 ms (retry: 'none'); at 2 a second, one 500 ms slot skipped,
    // the next turns are at about 505, 1005, 1505 ms...: two of the seven waiting fit before 1,500 ms.
    const failedAtOnce = calls.filter((c) => c.settled && c.error !== undefined).length;
    await h.clock.advance(5_000);
    await Promise.all(calls.map((c) => c.promise));
    const served = calls.filter((c) => c.value === 'a').length;
    expect(served).toBe(2);
    // The first (refused) and the five that no longer fit: all failed by 10 ms.
    expect(failedAtOnce).toBe(6);
    expect(settledAt.filter((t) => t > 10)).toHaveLength(2);
  });
});

describe('what delays a ceiling’s recovery', () => {
  test('failures that are not rate limits do not restart the quiet period: recovery comes as if they had not happened', async () => {
    // The time of the first step (its date, ceilingChangedAtMs): a failed call applies no step, the next success does, dated when it fell due.
    const recoveryAt = async (noise: boolean): Promise<number> => {
      const h = harness([{ name: 'a', rateLimit: { perSecond: 10 } }]);
      h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 5 }));
      const t0 = h.clock.now();
      await start(h.pool.execute(h.op, { retry: 'none' })).promise;
      // Calls every second; with noise, some fail transiently (not a complaint about the rate).
      for (let i = 0; i < 120; i++) {
        if (noise && i % 3 === 0) h.eps.a!.then(fail('transient'));
        const c = start(h.pool.execute(h.op, { retry: 'none' }));
        await h.clock.advance(1_000);
        await c.promise;
        const rec = recal(h.events).find((e) => e.reason === 'recovery');
        if (rec !== undefined) return h.pool.stats()[0]!.ceilingChangedAtMs! - t0;
      }
      return Infinity;
    };
    const quiet = await recoveryAt(false);
    expect(quiet).toBeLessThan(Infinity);
    expect(await recoveryAt(true)).toBe(quiet);
  });

  test('a bare 429 does restart it', async () => {
    /** The second (from the ceiling's 429) of the first recovery step, with a bare 429 answered at second `complainAt`. */
    const firstRecovery = async (complainAt: number | undefined): Promise<number> => {
      const h = harness([{ name: 'a', rateLimit: { perSecond: 10 } }]);
      h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 5 }));
      await start(h.pool.execute(h.op, { retry: 'none' })).promise;
      for (let i = 0; i < 200; i++) {
        if (i === complainAt) h.eps.a!.then(fail({ class: 'rate-limited' }));
        const c = start(h.pool.execute(h.op, { retry: 'none' }));
        await h.clock.advance(1_000);
        await c.promise;
        if (recal(h.events).some((e) => e.reason === 'recovery')) return i;
      }
      return Infinity;
    };
    const q = await firstRecovery(undefined);
    expect(q).toBeLessThan(Infinity);
    expect(await firstRecovery(q - 5)).toBeGreaterThan(q);
  });

  test('a bare 429 after the quiet period ended, with no success since, does not restart it: the steps due are taken first', async () => {
    // Hinted 4/s under a configured 10/s; quiet 30 s, a step every 10 s. No call for 35 s, then
    // a bare 429: the first step (due at 30 s) has begun the recovery, which a 429 does not stop,
    // so a success at 41 s finds two steps (5, then 7). Weighed against the stale level, the 429
    // restarted the quiet period and the success found 4.
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10 } }]);
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 4 }));
    await start(h.pool.execute(h.op, { retry: 'none' })).promise.catch(() => undefined);
    await h.clock.advance(35_000);
    h.eps.a!.then(fail('rate-limited'));
    const limited = start(h.pool.execute(h.op, { retry: 'none' }));
    await h.clock.advance(0);
    await limited.promise;
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(5);
    await h.clock.advance(6_000);
    const c = start(h.pool.execute(h.op, { retry: 'none' }));
    await h.clock.advance(1_000);
    await c.promise;
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBeCloseTo(7, 9);
  });
});

describe('a key’s own ceiling in a group, recovering', () => {
  const paced = (n: number) => ({ rateLimit: { perSecond: n, mode: 'paced' as const } });

  /** ownCeilingPerSecond and ceilingPerSecond of k1 after each second of calls, changes only. */
  async function climb(groupHint?: number): Promise<string[]> {
    const h = harness([{ name: 'k1', ...paced(10) }, { name: 'k2', ...paced(10) }], { groups: [['k1', 'k2']] });
    if (groupHint !== undefined) {
      h.eps.k2!.then(fail({ class: 'rate-limited', ceilingPerSecond: groupHint, ceilingScope: 'group' }));
      const c = start(h.pool.execute(h.op, { pin: 'k2', retry: 'none' }));
      await h.clock.advance(1_000);
      await c.promise;
    }
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 2, ceilingScope: 'key' }));
    const c = start(h.pool.execute(h.op, { pin: 'k1', retry: 'none' }));
    await h.clock.advance(1_000);
    await c.promise;
    const seen: string[] = [];
    for (let i = 0; i < 200; i++) {
      const c = start(h.pool.execute(h.op, { pin: 'k1' }));
      await h.clock.advance(1_000);
      await c.promise;
      const st = h.pool.stats()[0]!;
      const now = `${st.ownCeilingPerSecond}/${st.ceilingPerSecond}`;
      if (seen.at(-1) !== now) seen.push(now);
    }
    return seen;
  }

  test('climbs in steps and is dropped once back at the group’s configured rate, not before', async () => {
    const seen = await climb();
    expect(seen[0]).toBe('2/2');
    expect(seen.at(-1)).toBe('undefined/10');
    // Several steps on the way, each higher.
    const own = seen.slice(0, -1).map((x) => Number(x.split('/')[0]));
    expect(own.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < own.length; i++) expect(own[i]!).toBeGreaterThan(own[i - 1]!);
    expect(own.at(-1)!).toBeLessThan(10);
  });

  test('under a group ceiling learned lower, it is dropped once it reaches that ceiling', async () => {
    const seen = await climb(6);
    expect(seen[0]).toBe('2/2');
    // Dropped on reaching the group's level (the group recovers on its own afterwards).
    const dropped = seen.findIndex((x) => x.startsWith('undefined/'));
    expect(dropped).toBeGreaterThan(1);
    const lastOwn = Number(seen[dropped - 1]!.split('/')[0]);
    const groupAtDrop = Number(seen[dropped]!.split('/')[1]);
    expect(lastOwn).toBeLessThan(groupAtDrop);
    expect(groupAtDrop).toBeLessThanOrEqual(10);
  });
});

describe('recovery under pressure', () => {
  test('callers turned away make recovery step faster only for a quarter of the quiet period after the last of them', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, mode: 'paced' as const } }], { maxQueueWaitMs: 300, deadlineMs: 5_000 });
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 2 }));
    const first = start(h.pool.execute(h.op, { retry: 'none' }));
    await h.clock.advance(1_000);
    await first.promise;
    // A burst the ceiling of 2/s cannot serve within 300 ms: all but one turned away, at once.
    const burst = Array.from({ length: 10 }, () => start(h.pool.execute(h.op)));
    await h.clock.advance(3_000);
    await Promise.all(burst.map((c) => c.promise));
    expect(burst.filter((c) => (c.error as { code?: string } | undefined)?.code === 'RATE_LIMITED').length).toBe(9);
    // Then one call a second, nobody turned away: the second at which each recovery step shows.
    const steps: number[] = [];
    for (let second = 4; second < 60; second++) {
      const c = start(h.pool.execute(h.op, { retry: 'none' }));
      await h.clock.advance(1_000);
      await c.promise;
      h.pool.stats();
      const n = recal(h.events).filter((e) => e.reason === 'recovery').length;
      if (n > steps.length) steps.push(second);
    }
    expect(steps.length).toBeGreaterThanOrEqual(3);
    // The steps after the first come every 10 s (stepMs): the pressure (steps every 5 s) ended
    // 7.5 s after the last caller was turned away.
    for (let i = 2; i < steps.length; i++) expect(steps[i]! - steps[i - 1]!, steps.join(', ')).toBe(10);
  });
});

describe('which level a number describes, as endpoint-recalibrated says', () => {
  const paced = (n: number) => ({ rateLimit: { perSecond: n, mode: 'paced' as const } });
  const scopes = (events: PoolEvent[]) => recal(events).map((e) => `${e.endpoint}:${e.reason}:${e.scope}:${e.perSecond}`);

  /** Each answer in turn, `gapMs` apart, on the key it names; returns the events. */
  async function answers(list: [string, number][], gapMs = 100): Promise<string[]> {
    const h = harness([{ name: 'k1', ...paced(10) }, { name: 'k2', ...paced(10) }, { name: 'k3', ...paced(10) }], { groups: [['k1', 'k2', 'k3']] });
    for (const [key, n] of list) {
      h.eps[key]!.then(fail({ class: 'rate-limited', ceilingPerSecond: n }));
      const c = start(h.pool.execute(h.op, { pin: key, retry: 'none' }));
      await h.clock.advance(gapMs);
      await c.promise;
    }
    return scopes(h.events).filter((x) => x.includes(':hint:'));
  }

  test('a number at the group’s ceiling describes the group', async () => {
    expect(await answers([['k1', 10]])).toEqual(['k1:hint:group:10']);
  });

  test('a lower number from one key describes that key; the same number from a second key soon after, the group', async () => {
    expect(await answers([['k1', 3], ['k2', 3]])).toEqual(['k1:hint:key:3', 'k2:hint:group:3']);
  });

  test('different numbers from two keys pair nothing: each its own', async () => {
    expect(await answers([['k1', 3], ['k2', 4]])).toEqual(['k1:hint:key:3', 'k2:hint:key:4']);
  });

  test('the same number from a second key after the quiet period pairs nothing', async () => {
    expect(await answers([['k1', 3], ['k2', 3]], 31_000)).toEqual(['k1:hint:key:3', 'k2:hint:key:3']);
  });

  test('an endpoint in no group: every number is the key’s, hint and recovery alike', async () => {
    const h = harness([{ name: 'a', ...paced(10) }]);
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 4 }));
    await start(h.pool.execute(h.op, { retry: 'none' })).promise;
    for (let i = 0; i < 120 && !recal(h.events).some((e) => e.reason === 'recovery'); i++) {
      const c = start(h.pool.execute(h.op));
      await h.clock.advance(1_000);
      await c.promise;
    }
    const seen = recal(h.events).map((e) => `${e.reason}:${e.scope}`);
    expect(seen.slice(0, 2)).toEqual(['hint:key', 'recovery:key']);
  });

  test('a clamped number says so, with its level', async () => {
    const h = harness([{ name: 'a', ...paced(10) }]);
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 1e10 }));
    await start(h.pool.execute(h.op, { retry: 'none' })).promise;
    expect(recal(h.events)).toEqual([{ type: 'endpoint-recalibrated', endpoint: 'a', perSecond: 100_000, scope: 'key', reason: 'hint', clampedFrom: 1e10 }]);
  });

  test('a group’s own recovery says group', async () => {
    const h = harness([{ name: 'k1', ...paced(10) }, { name: 'k2', ...paced(10) }], { groups: [['k1', 'k2']] });
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 10, ceilingScope: 'group' }), fail({ class: 'rate-limited', ceilingPerSecond: 5, ceilingScope: 'group' }));
    for (let i = 0; i < 2; i++) {
      const c = start(h.pool.execute(h.op, { pin: 'k1', retry: 'none' }));
      await h.clock.advance(1_000);
      await c.promise;
    }
    for (let i = 0; i < 120 && !recal(h.events).some((e) => e.reason === 'recovery'); i++) {
      const c = start(h.pool.execute(h.op, { pin: 'k2' }));
      await h.clock.advance(1_000);
      await c.promise;
    }
    expect(recal(h.events).find((e) => e.reason === 'recovery')).toMatchObject({ scope: 'group' });
  });
});

