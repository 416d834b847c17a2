/**
 * Twenty-seventh session, first mutation run of `src/call/adaptive.ts` (the pool's side of an
 * adaptive limit): what `endpoint-adapted` reports (bench/notes/mutation-s27.md). Fake
 * clock, public API only.
 */
import { describe, expect, test } from 'vitest';
import type { PoolEvent } from '../../src/index.js';
import { seeded } from '../helpers/prng.js';
import { fail, harness, ok, start } from '../support.js';

type Adapted = Extract<PoolEvent, { type: 'endpoint-adapted' }>;
const adapted = (events: PoolEvent[]) => events.filter((e): e is Adapted => e.type === 'endpoint-adapted');

/** A generated run of answers (successes and bare 429s) on one adaptive endpoint, paced. */
async function run(seed: number): Promise<string[]> {
  const rand = seeded(seed);
  const h = harness([{ name: 'a', rateLimit: { perSecond: 20, mode: 'paced', adaptive: { min: 1, max: 40, holdMs: 2_000, doublingMs: 2_000 } } }, 'b']);
  const limit = 4 + Math.floor(rand() * 12);
  const calls: Promise<void>[] = [];
  for (let step = 0; step < 300; step++) {
    // Calls come `limit` a second; the server answers 30 % of them with a bare 429.
    h.eps.a!.then(rand() < 0.7 ? ok('a', 5) : fail({ class: 'rate-limited' }, 5));
    const call = start(h.pool.execute(h.op, { pin: 'a', retry: 'none', deadlineMs: 10_000 }));
    calls.push(call.promise);
    await h.clock.advance(1_000 / limit);
  }
  await h.clock.advance(15_000);
  await Promise.all(calls);
  return adapted(h.events).map((e) => `${e.endpoint}|${e.reason}|${e.previous}->${e.perSecond}`);
}

describe('endpoint-adapted', () => {
  test('generated runs: every event changes the rate, names the endpoint, and moves it the way it says', async () => {
    for (let seed = 2026120570; seed < 2026120590; seed++) {
      const events = await run(seed);
      for (const line of events) {
        const [endpoint, reason, move] = line.split('|');
        const [previous, perSecond] = move!.split('->').map(Number);
        expect(endpoint, line).toBe('a');
        expect(Number.isFinite(perSecond) && Number.isFinite(previous), line).toBe(true);
        expect(perSecond, line).not.toBe(previous);
        expect(reason === 'decrease' ? perSecond! < previous! : perSecond! > previous!, line).toBe(true);
        expect(perSecond!, line).toBeGreaterThanOrEqual(1);
        expect(perSecond!, line).toBeLessThanOrEqual(40);
      }
      expect(events.some((l) => l.includes('|decrease|'))).toBe(true);
    }
  });

  test('at the floor a bare 429 reports nothing: the rate did not change', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 2, adaptive: { min: 1, max: 2, decrease: 0.5 } } }]);
    for (let i = 0; i < 4; i++) {
      h.eps.a!.then(fail({ class: 'rate-limited' }));
      const call = start(h.pool.execute(h.op, { retry: 'none' }));
      await h.clock.advance(2_000);
      await call.promise;
    }
    expect(adapted(h.events).map((e) => [e.previous, e.perSecond])).toEqual([[2, 1]]);
  });

  test('a 429 answered after its endpoint was removed reports nothing about it', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, adaptive: { min: 1, max: 10 } } }, 'b']);
    h.eps.a!.then(fail({ class: 'rate-limited' }, 100));
    const call = start(h.pool.execute(h.op, { pin: 'a', retry: 'none' }));
    await h.clock.advance(10);
    await h.pool.setEndpoints([{ name: 'b', conn: h.eps.b! }]);
    await h.clock.advance(200);
    await call.promise;
    expect(adapted(h.events)).toEqual([]);
  });
});

describe('a look is not a success', () => {
  test('stats() and capacity() called between the calls of an endpoint that is not busy leave the rate a bare 429 sets unchanged', async () => {
    const decreaseAfter = async (looks: number): Promise<number[]> => {
      const h = harness([{ name: 'a', rateLimit: { perSecond: 20, adaptive: { min: 1, max: 20 } } }]);
      // Four calls a second for three seconds (a fifth of the limit: never busy, so nothing to increase).
      for (let i = 0; i < 12; i++) {
        const c = start(h.pool.execute(h.op));
        for (let k = 0; k < looks; k++) {
          h.pool.stats();
          h.pool.capacity();
        }
        await h.clock.advance(250);
        await c.promise;
      }
      h.eps.a!.then(fail({ class: 'rate-limited' }));
      const c = start(h.pool.execute(h.op, { retry: 'none' }));
      await h.clock.advance(10);
      await c.promise;
      return adapted(h.events).map((e) => e.perSecond);
    };
    const blind = await decreaseAfter(0);
    expect(blind).toHaveLength(1);
    expect(await decreaseAfter(50)).toEqual(blind);
  });
});

