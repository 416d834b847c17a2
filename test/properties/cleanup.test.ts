/**
 * Property (7): after `close()`, or once every call has settled, the pool owns no timer
 * and the fake clock has none pending (late answers of cancelled attempts included, and
 * they change nothing).
 */
import { describe, expect, test } from 'vitest';
import { scenarioArb } from './sim.js';
import { RUNS, TIMEOUT, checkScenarios } from './run.js';

describe('nothing left behind', () => {
  test(`no timer pending after close() or after every call settled (${RUNS} runs)`, async () => {
    const t = await checkScenarios('no timers left', scenarioArb({ close: 0.6, abort: 0.3, hang: 2, rateLimited: 3 }));
    expect(t.runs).toBe(RUNS);
    expect(t.endings['CLOSED'] ?? 0).toBeGreaterThan(RUNS / 10);
  }, TIMEOUT);
});
