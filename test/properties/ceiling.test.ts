/**
 * Property (issue 20): a learned ceiling stays bounded and its recovery schedule keeps its
 * promises under any sequence of hints, bare 429s, looks with and without pressure and
 * recovery options: the value stays inside the learned range and never above its target;
 * recovery only raises it, never sooner than the quiet period after the last complaint
 * (a quarter of it under pressure, doubled per failed recovery, at most × 8), and steps at
 * most once per half `stepMs`; each step at most doubles the one before; the backoff
 * count stays in 0–3 and resets when the target is reached.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { LEARNED_MAX_PER_SECOND, LEARNED_MIN_PER_SECOND, LearnedCeiling, clampLearned } from '../../src/limits/ceiling.js';
import { RUNS, seedFor } from './run.js';

const event = fc.oneof(
  fc.record({ kind: fc.constant('hint' as const), dt: fc.integer({ min: 0, max: 60_000 }), perSecond: fc.double({ min: 1e-4, max: 1e12, noNaN: true }), lag: fc.integer({ min: 0, max: 5000 }) }),
  fc.record({ kind: fc.constant('limited' as const), dt: fc.integer({ min: 0, max: 60_000 }) }),
  fc.record({ kind: fc.constant('look' as const), dt: fc.integer({ min: 0, max: 120_000 }), pressed: fc.boolean() }),
);
const recovery = fc.record({
  quietMs: fc.integer({ min: 1, max: 120_000 }),
  stepMs: fc.integer({ min: 1, max: 60_000 }),
  stepFraction: fc.double({ min: 0.01, max: 1, noNaN: true }),
});

describe('learned ceilings', () => {
  test(`stay bounded and recover on schedule under any sequence of hints and looks (${RUNS} runs)`, () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1e-4, max: 1e12, noNaN: true }),
        fc.option(fc.double({ min: 0.01, max: 1e6, noNaN: true }), { nil: undefined }),
        recovery,
        fc.array(event, { minLength: 1, maxLength: 40 }),
        (first, configured, r, events) => {
          let now = 0;
          const c = new LearnedCeiling(clampLearned(first), configured ?? clampLearned(first), now);
          let stepsSeen = 0;
          for (const e of events) {
            now += e.dt;
            if (e.kind === 'hint') {
              c.set(clampLearned(e.perSecond), now, configured, now - e.lag);
            } else if (e.kind === 'limited') {
              c.limited(now);
            } else {
              const before = { value: c.value, changedAt: c.changedAt, limitedAt: c.limitedAt, run: c.run, quiet: c.quietMs(r, e.pressed) };
              const rose = c.recover(now, r, e.pressed);
              if (!rose) {
                expect(c.value).toBe(before.value);
                continue;
              }
              expect(c.value).toBeGreaterThan(before.value);
              expect(c.value).toBeLessThanOrEqual(c.target);
              // Never before the quiet period (for the first step of a recovery) or before half a step after the last change.
              if (before.run === 0) expect(c.changedAt).toBeGreaterThanOrEqual(before.limitedAt + before.quiet);
              expect(c.changedAt).toBeGreaterThanOrEqual(before.changedAt + r.stepMs / 2);
              expect(c.changedAt).toBeLessThanOrEqual(now);
              // Steps double: n steps from `run` add at most stepFraction × target × (2^(run+n) − 2^run).
              const n = c.run - before.run;
              expect(n).toBeGreaterThan(0);
              const most = r.stepFraction * c.target * (2 ** Math.min(c.run, 60) - 2 ** Math.min(before.run, 60));
              expect(c.value - before.value).toBeLessThanOrEqual(most * (1 + 1e-9) + 1e-9);
              stepsSeen++;
            }
            expect(c.value).toBeGreaterThanOrEqual(LEARNED_MIN_PER_SECOND * 0.8);
            expect(c.value).toBeLessThanOrEqual(Math.max(c.target, LEARNED_MAX_PER_SECOND));
            expect(c.fails).toBeGreaterThanOrEqual(0);
            expect(c.fails).toBeLessThanOrEqual(3);
            expect(c.quietMs(r, false)).toBeLessThanOrEqual(8 * r.quietMs);
            if (c.value === c.target && stepsSeen > 0 && c.run > 0) expect(c.fails).toBe(0);
          }
        },
      ),
      { numRuns: RUNS, seed: seedFor() },
    );
  });
});
