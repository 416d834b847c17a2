/**
 * Property (6): every `attempt-start` has exactly one terminal event (`attempt-success`,
 * `attempt-failure` or `attempt-cancelled`, matched by callId and attempt), whatever ends
 * the attempt: its answer, its timeout, the deadline, the caller's abort or `close()`.
 */
import { describe, expect, test } from 'vitest';
import { scenarioArb } from './sim.js';
import { RUNS, TIMEOUT, checkScenarios } from './run.js';

describe('event contract', () => {
  test(`every attempt-start has exactly one terminal event (${RUNS} runs)`, async () => {
    const t = await checkScenarios('attempt events', scenarioArb({ abort: 0.5, close: 0.3, hang: 2 }));
    expect(t.runs).toBe(RUNS);
    expect(t.endings['ABORTED'] ?? 0).toBeGreaterThan(RUNS / 10);
  }, TIMEOUT);
});
