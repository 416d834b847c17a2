/**
 * Properties (1) and (2): concurrency permits, per-endpoint in-flight limits and token
 * buckets are never exceeded, under any mix of faults, aborts and configurations, and
 * everything held comes back when the pool is idle.
 */
import { describe, expect, test } from 'vitest';
import { scenarioArb } from './sim.js';
import { RUNS, TIMEOUT, checkScenarios } from './run.js';

describe('limits hold under faults', () => {
  test(`permits and per-endpoint in-flight never exceed their limits and return to zero when idle (${RUNS} runs)`, async () => {
    const t = await checkScenarios('permits and in-flight', scenarioArb({ maxInFlight: 0.8, maxCalls: 3, hang: 2, abort: 0.25 }));
    expect(t.runs).toBe(RUNS);
    // The generator must actually reach the limits it tests.
    expect(t.attempts).toBeGreaterThan(RUNS);
  }, TIMEOUT);

  test(`no endpoint's token bucket is ever exceeded: any window holds at most burst + rate × window starts (${RUNS} runs)`, async () => {
    const t = await checkScenarios('token buckets', scenarioArb({ rateLimit: 0.9, rateLimited: 4, ok: 8 }));
    expect(t.runs).toBe(RUNS);
    expect(t.endings['ok'] ?? 0).toBeGreaterThan(RUNS / 10);
  }, TIMEOUT);
});
