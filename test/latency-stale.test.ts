/**
 * `strategy: 'latency'`: an endpoint's estimate moves only with samples of its own, and the
 * endpoint it costs highest gets none. Before the forty-second session one failed attempt (costed
 * at the attempt timeout, 10 s) kept an endpoint out of the picks for good, however fast it was
 * again: in the run below the fastest of three endpoints got 85 calls of 3,000 after one failure.
 * History older than three `decayMs` now counts as none: the endpoint is costed at the cold start
 * again, gets a pick, and a fresh sample.
 */
import { describe, expect, test } from 'vitest';
import { Pool } from '../src/index.js';
import { LatencyTracker } from '../src/selection/latency.js';
import { FakeClock } from '../src/testing/index.js';

describe('latency history that went stale', () => {
  test('an estimate with no sample for more than three decayMs is the cold start again; until then, its history', () => {
    const t = new LatencyTracker();
    t.observe(1000, 10_000, true, 10_000, 10_000);
    expect(t.estimate(20, 1000 + 30_000)).toBe(10_000);
    expect(t.estimate(20, 1000 + 30_001)).toBe(20);
    // Without a time (and for the percentile ring) history is history.
    expect(t.estimate(20)).toBe(10_000);
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
