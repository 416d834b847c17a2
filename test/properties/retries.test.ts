/**
 * Property (5): permanent and retry-narrower failures (including a throwing or
 * non-promise operation, which counts as permanent) are never retried; a call never makes
 * more attempts than its retry mode allows, never goes back to an endpoint that answered
 * `unsupported`, and respects `pin` and `exclude`.
 */
import { describe, expect, test } from 'vitest';
import { scenarioArb } from './sim.js';
import { RUNS, TIMEOUT, checkScenarios } from './run.js';

describe('retries by error class', () => {
  test(`permanent and retry-narrower are never retried; attempts never exceed the limit (${RUNS} runs)`, async () => {
    const t = await checkScenarios('retry classes', scenarioArb({ permanent: 3, narrower: 3, unsupported: 3, sync: 2, transient: 5 }));
    expect(t.runs).toBe(RUNS);
    expect(t.endings['PERMANENT'] ?? 0).toBeGreaterThan(0);
    expect(t.endings['RETRY_NARROWER'] ?? 0).toBeGreaterThan(0);
    expect(t.endings['RETRIES_EXHAUSTED'] ?? 0).toBeGreaterThan(0);
  }, TIMEOUT);
});
