/**
 * Property (3): at most one half-open probe per endpoint at a time. Counted per open
 * period (between `breaker-opened` and the next `breaker-opened`/`breaker-closed`): a
 * probe let through in an earlier period that is still running no longer holds the slot,
 * because the breaker has closed or re-opened since (see docs/guarantees.md). A probe let through
 * beside one of its own period still out (presumed lost) is followed by `probe-lost`, and no
 * `probe-lost` comes otherwise (the check is in sim.ts, on every property that simulates).
 */
import { describe, expect, test } from 'vitest';
import { scenarioArb } from './sim.js';
import { RUNS, TIMEOUT, checkScenarios } from './run.js';

describe('breakers under faults', () => {
  test(`at most one half-open probe per endpoint at a time (${RUNS} runs)`, async () => {
    const t = await checkScenarios('one probe', scenarioArb({ ok: 3, transient: 6, hang: 2, permanent: 0, narrower: 0, sync: 0, unsupported: 1, abort: 0.25 }));
    expect(t.runs).toBe(RUNS);
    expect(t.probes).toBeGreaterThan(RUNS / 10);
    // Probes presumed lost (a call with no bound of its own whose operation hangs), each reported by `probe-lost`.
    expect(t.lostProbes).toBeGreaterThan(RUNS / 200);
  }, TIMEOUT);
});
