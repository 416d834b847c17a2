/**
 * Issue 15: leaving the permit queue, the timeout queue with decreasing due times and a
 * signal shared by many calls each cost O(log n) or less per call. The same cases as
 * `npm run bench:queues`, at 5,000 and 50,000 calls: linear work grows about 10×,
 * quadratic work 100× (before the fix, `close()` with 80,000 queued calls took 5.3 s and
 * 100,000 aborts 24 s). Timed in this process's CPU time (`process.cpuUsage()`, user plus
 * system; vitest's workers are processes, `pool: 'forks'`): a test worker or any other process
 * sharing the cores takes wall time from it, not CPU time, so the file runs beside the others
 * (timed by the wall clock it grew 42× once at a load of 9 and ran alone after the suite). The
 * sizes take turns three times and each keeps its least time (a garbage collection lands on
 * one run, rarely on all three), and the bound, 30×, sits between linear work with a larger
 * heap (8-22× in CPU time at loads 4-10, the collector's threads included) and quadratic
 * work: a removal from the permit queue that walks the queue first grew 37-43× here (its
 * linear part still weighs at 5,000), which the wall clock's 40× let through.
 */
import { expect, test } from 'vitest';
import { Pool } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
// @ts-expect-error: a plain .mjs benchmark module, shared with `npm run bench:queues`
import { runQueueCases } from '../../bench/queues.mjs';

type Times = Record<string, number>;
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const run = (n: number): Promise<Times> => (runQueueCases as (libs: { Pool: typeof Pool; FakeClock: typeof FakeClock }, n: number, now: () => number) => Promise<Times>)({ Pool, FakeClock }, n, cpuMs);

/** Each size's least CPU time of three runs, the sizes taking turns. */
const best = async (sizes: readonly number[]): Promise<Times[]> => {
  const out: Times[] = sizes.map(() => ({}));
  for (let round = 0; round < 3; round++) {
    for (const [i, n] of sizes.entries()) {
      const t = await run(n);
      for (const k of Object.keys(t)) out[i]![k] = Math.min(out[i]![k] ?? Number.POSITIVE_INFINITY, t[k]!);
    }
  }
  return out;
};

test('the queues grow about linearly: 10× the calls, under 30× the CPU time', async () => {
  await run(1_000);
  const [small, large] = (await best([5_000, 50_000])) as [Times, Times];
  const growth = Object.fromEntries(Object.keys(large).map((k) => [k, Math.round(large[k]! / Math.max(small[k]!, 2))]));
  console.log('queue growth in CPU time (5k → 50k):', JSON.stringify(growth), JSON.stringify(large));
  for (const k of Object.keys(large)) expect(large[k]! / Math.max(small[k]!, 2), k).toBeLessThan(30);
}, 300_000);
