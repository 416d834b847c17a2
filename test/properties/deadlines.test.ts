/**
 * Property (4): no call outlives its deadline by more than one timer tick, and every call
 * settles exactly once (one promise settlement, one final event, matching each other).
 */
import { describe, expect, test } from 'vitest';
import { scenarioArb } from './sim.js';
import { RUNS, TIMEOUT, checkScenarios } from './run.js';

describe('deadlines and settlement', () => {
  test(`every call settles exactly once and never after its deadline (${RUNS} runs)`, async () => {
    const t = await checkScenarios('deadlines', scenarioArb({ hang: 4, transient: 4, rateLimited: 3, maxInFlight: 0.5, maxCalls: 2 }));
    expect(t.runs).toBe(RUNS);
    expect(t.endings['DEADLINE_EXCEEDED'] ?? 0).toBeGreaterThan(RUNS / 10);
  }, TIMEOUT);
});
