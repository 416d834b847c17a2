/**
 * Liveness, the other side of the safety properties: with healthy endpoints, no deadline,
 * no timeout and nobody giving up, every call succeeds, whatever the limits (permits,
 * in-flight, token buckets, weights, tiers). A lost wake-up, a leaked permit or slot, or a
 * wait computed too long would leave a call waiting here until the end of the run.
 */
import { describe, expect, test } from 'vitest';
import { scenarioArb, type Scenario } from './sim.js';
import { RUNS, TIMEOUT, checkScenarios } from './run.js';

const INF = Number.POSITIVE_INFINITY;

const healthy = scenarioArb({ transient: 0, permanent: 0, rateLimited: 0, narrower: 0, unsupported: 0, hang: 0, sync: 0, rateLimit: 0.6, maxInFlight: 0.6 }).map(
  (s): Scenario => ({
    ...s,
    deadlineMs: INF,
    attemptTimeoutMs: INF,
    closeAt: undefined,
    // 25 calls, each at most 300 ms of work and 2 s of token wait, served one at a time.
    tailMs: 100_000,
    calls: s.calls.map((c) => ({ ...c, plain: false, abortAfter: undefined, deadlineMs: undefined, attemptTimeoutMs: undefined, pin: undefined, exclude: undefined })),
  }),
);

describe('liveness', () => {
  test(`with healthy endpoints and no deadline, every call succeeds (${RUNS} runs)`, async () => {
    const t = await checkScenarios('every call succeeds', healthy, RUNS, {}, (o) => Object.keys(o.endings).every((k) => k === 'ok' || k === 'idle-check'));
    expect(t.endings['ok']).toBeGreaterThanOrEqual(RUNS);
    expect(Object.keys(t.endings).filter((k) => k !== 'ok' && k !== 'idle-check')).toEqual([]);
  }, TIMEOUT);
});
