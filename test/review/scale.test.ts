/**
 * Issue 15: leaving the permit queue, the timeout queue with decreasing due times and a
 * signal shared by many calls each cost O(log n) or less per call. The same cases as
 * `npm run bench:queues`, at 5,000 and 50,000 calls: linear work grows about 10×,
 * quadratic work 100× (before the fix, `close()` with 80,000 queued calls took 5.3 s and
 * 100,000 aborts 24 s). Both sizes run under the same load, so the ratio holds on a busy
 * machine where an absolute bound would not; the sizes take turns three times and each keeps its fastest
 * time (a pause for garbage collection or a burst of other work lands on one run, rarely on all
 * three; with two runs back to back, permit-close once grew 42× in a full run at a load of 9), and
 * the bound, 40×, sits between linear work with a larger heap (10-30×) and quadratic work.
 */
import { expect, test } from 'vitest';
import { Pool } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
// @ts-expect-error: a plain .mjs benchmark module, shared with `npm run bench:queues`
import { runQueueCases } from '../../bench/queues.mjs';

type Times = Record<string, number>;
const run = runQueueCases as (libs: { Pool: typeof Pool; FakeClock: typeof FakeClock }, n: number) => Promise<Times>;

/** Each size's fastest of three runs, the sizes taking turns so that a burst of load lands on both alike. */
const best = async (sizes: readonly number[]): Promise<Times[]> => {
  const out: Times[] = sizes.map(() => ({}));
  for (let round = 0; round < 3; round++) {
    for (const [i, n] of sizes.entries()) {
      const t = await run({ Pool, FakeClock }, n);
      for (const k of Object.keys(t)) out[i]![k] = Math.min(out[i]![k] ?? Number.POSITIVE_INFINITY, t[k]!);
    }
  }
  return out;
};

test('the queues grow about linearly: 10× the calls, well under 40× the time', async () => {
  await run({ Pool, FakeClock }, 1_000);
  const [small, large] = (await best([5_000, 50_000])) as [Times, Times];
  const growth = Object.fromEntries(Object.keys(large).map((k) => [k, Math.round(large[k]! / Math.max(small[k]!, 2))]));
  console.log('queue growth (5k → 50k):', JSON.stringify(growth), JSON.stringify(large));
  for (const k of Object.keys(large)) expect(large[k]! / Math.max(small[k]!, 2), k).toBeLessThan(40);
}, 180_000);
