/**
 * Liveness, the other side of the safety properties: with healthy endpoints, no deadline,
 * no timeout and nobody giving up, every call succeeds, whatever the limits (permits,
 * in-flight, token buckets, weights, tiers). A lost wake-up, a leaked permit or slot, or a
 * wait computed too long would leave a call waiting here until the end of the run.
 */
import { describe, expect, test } from 'vitest';
import { healthyArb } from './sim.js';
import { RUNS, TIMEOUT, checkScenarios } from './run.js';

describe('liveness', () => {
  test(`with healthy endpoints and no deadline, every call succeeds (${RUNS} runs)`, async () => {
    const t = await checkScenarios('every call succeeds', healthyArb(), RUNS, {}, (o) => Object.keys(o.endings).every((k) => k === 'ok' || k === 'idle-check'));
    expect(t.endings['ok']).toBeGreaterThanOrEqual(RUNS);
    expect(Object.keys(t.endings).filter((k) => k !== 'ok' && k !== 'idle-check')).toEqual([]);
  }, TIMEOUT);
});
