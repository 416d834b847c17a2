/**
 * `strategy: 'latency'`: an endpoint's estimate moves only with samples of its own, and the
 * endpoint it costs highest gets none. Before the forty-second session one failed attempt (costed
 * at the attempt timeout, 10 s) kept an endpoint out of the picks for good, however fast it was
 * again: in the run below the fastest of three endpoints got 85 calls of 3,000 after one failure.
 * History older than three `decayMs` now counts as none: the endpoint is costed at the cold start
 * again, gets a pick, and a fresh sample. Since the forty-third session a lower bound (a hedge
 * race lost) goes stale the same way.
 */
import { describe, expect, test } from 'vitest';
import { Pool, type AttemptContext } from '../src/index.js';
import { LatencyTracker } from '../src/selection/latency.js';
import { FakeClock } from '../src/testing/index.js';
import { seeded } from './helpers/prng.js';

describe('latency history that went stale', () => {
  test('an estimate with no sample for more than three decayMs is the cold start again; until then, its history', () => {
    const t = new LatencyTracker();
    t.observe(1000, 10_000, true, 10_000, 10_000);
    expect(t.estimate(20, 1000 + 30_000)).toBe(10_000);
    expect(t.estimate(20, 1000 + 30_001)).toBe(20);
    // Without a time (and for the percentile ring) history is history.
    expect(t.estimate(20)).toBe(10_000);
  });

  test('a lower bound (a hedge that lost) goes stale too: an endpoint whose only history it is gets the cold start again', () => {
    // Before the forty-third session a bound never went stale: an endpoint that lost one hedge
    // race after 5 s, and had no sample of its own, was costed 5 s for good and never picked.
    const t = new LatencyTracker();
    t.observeAtLeast(1000, 5_000, 10_000);
    expect(t.estimate(20, 1000 + 30_000)).toBe(5_000);
    expect(t.estimate(20, 1000 + 30_001)).toBe(20);
    // After a real sample, a higher bound raises the estimate and moves the stale time on.
    const u = new LatencyTracker();
    u.observe(1000, 10, false, 10_000, 10_000);
    u.observeAtLeast(20_000, 400, 10_000);
    expect(u.estimate(20, 40_000)).toBe(400);
    expect(u.estimate(20, 50_001)).toBe(20);
  });

  test('an endpoint that only ever lost a hedge race is picked again once that bound is stale (pool, hedging on)', async () => {
    const clock = new FakeClock(1_000_000);
    const pool = new Pool<string>({
      // Three: with two, P2C's draws sometimes fall back to a walk that picks b anyway.
      endpoints: ['a', 'b', 'c'].map((n) => ({ name: n, conn: n })),
      strategy: 'latency',
      latency: { decayMs: 100 },
      hedge: { afterMs: 10 },
      classify: () => 'transient',
      clock,
      random: seeded(7),
    });
    let slowB = true;
    const served: string[] = [];
    const op = (c: string, ctx: AttemptContext): Promise<string> =>
      new Promise<string>((resolve, reject) => {
        if (c === 'b' && slowB) return void ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
        clock.setTimeout(() => resolve(c), c === 'b' ? 1 : 5);
      });
    const run = (): Promise<unknown> => clock.runUntilSettled(pool.execute((c, ctx) => op(c, ctx).then((v) => (served.push(v), v)), { idempotent: true }));
    // Until b has lost a race (it is drawn first on a tie now and then), calls go on.
    let lost = 0;
    pool.on('attempt-cancelled', (e) => void (e.endpoint === 'b' && e.reason === 'superseded' && lost++));
    for (let i = 0; i < 20 && lost === 0; i++) await run();
    expect(lost).toBe(1);
    expect(served).not.toContain('b');
    slowB = false;
    served.length = 0;
    // Calls often enough that a and c stay fresh (a sample each 100 ms or so, stale after 300).
    for (let i = 0; i < 20; i++) {
      await run();
      await clock.advance(50);
    }
    // b (1 ms now) had only the lost race's bound as history, which never went stale: it stayed
    // costed at it until a or c went stale by chance and the cold start rose to it (here after
    // 28 calls; with steadier traffic, never). Now it is costed at the cold start 300 ms after.
    expect(served.filter((x) => x === 'b').length).toBeGreaterThan(5);
    await pool.close();
  });

  test('the fastest endpoint, after one failure, takes its share of the calls again (3 endpoints, calls one at a time)', async () => {
    const clock = new FakeClock(1_000_000);
    const pool = new Pool<string>({ endpoints: ['a', 'b', 'c'].map((n) => ({ name: n, conn: n })), strategy: 'latency', classify: () => 'transient', clock });
    let blip = true;
    const served: string[] = [];
    const op = (c: string): Promise<string> =>
      new Promise<string>((resolve, reject) => {
        if (c === 'a' && blip) {
          blip = false;
          clock.setTimeout(() => reject(new Error('reset')), 5);
          return;
        }
        clock.setTimeout(() => resolve(c), c === 'a' ? 1 : 20);
      });
    for (let i = 0; i < 3000; i++) {
      await clock.runUntilSettled(pool.execute((c) => op(c).then((v) => (served.push(v), v))).catch(() => undefined));
      await clock.advance(200);
    }
    expect(blip).toBe(false);
    const late = served.slice(1000);
    // P2C: a wins every pair it is drawn in, two pairs in three.
    expect(late.filter((x) => x === 'a').length / late.length).toBeGreaterThan(0.5);
    await pool.close();
  });
});
