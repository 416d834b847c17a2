/**
 * The generated scenarios of deadlines.test.ts, liveness.test.ts, limits.test.ts,
 * events.test.ts and cleanup.test.ts again, with time passing between two readings of the
 * clock (`TrackedClock` with `jitterMs`: each reading up to `FC_JITTER_MS`, default 0.4 ms,
 * ahead of the fake time, never behind the reading before; a timer may seem to fire that
 * much early, as Node's do on the loop's whole-millisecond time). On the fake clock alone a
 * decision read at one instant is always acted on at the same instant: a real machine's
 * clock moves in between (seed 2026120431 on Node 26: a negative timer delay). And one timer
 * in twenty fires after a stall of up to `FC_STALL_MS` (default 250 ms): the clock moves on
 * at once and every timer due meanwhile fires late, in order. And on a coarse clock, whose
 * readings come in whole steps of `FC_RESOLUTION_MS` (default 16 ms) and lag the time by up
 * to a step (timers seem to fire a step early).
 */
import { describe, expect, test } from 'vitest';
import { healthyArb, scenarioArb } from './sim.js';
import { RUNS, TIMEOUT, checkScenarios } from './run.js';

const jitterMs = Number(process.env['FC_JITTER_MS'] ?? 0.4);
const stallMs = Number(process.env['FC_STALL_MS'] ?? 250);
const hooks = { jitterMs, stallMs };
/** A quarter of the plain properties' runs each: every `npm test` runs them beside the plain ones. */
const runs = Math.max(1, Math.round(RUNS / 4));

describe(`with up to ${jitterMs} ms between two readings of the clock, and stalls of up to ${stallMs} ms`, () => {
  test(`every call settles exactly once and never after its deadline (${runs} runs)`, async () => {
    const t = await checkScenarios('deadlines, jittered', scenarioArb({ hang: 4, transient: 4, rateLimited: 3, maxInFlight: 0.5, maxCalls: 2 }), runs, hooks);
    expect(t.endings['DEADLINE_EXCEEDED'] ?? 0).toBeGreaterThan(runs / 10);
  }, TIMEOUT);

  test(`with healthy endpoints and no deadline, every call succeeds (${runs} runs)`, async () => {
    const t = await checkScenarios('every call succeeds, jittered', healthyArb(), runs, hooks, (o) => Object.keys(o.endings).every((k) => k === 'ok' || k === 'idle-check'));
    expect(t.endings['ok']).toBeGreaterThanOrEqual(runs);
  }, TIMEOUT);

  test(`permits, in-flight caps and token buckets hold (${runs} runs)`, async () => {
    const a = await checkScenarios('permits and in-flight, jittered', scenarioArb({ maxInFlight: 0.8, maxCalls: 3, hang: 2, abort: 0.25 }), runs, hooks);
    const b = await checkScenarios('token buckets, jittered', scenarioArb({ rateLimit: 0.9, rateLimited: 4, ok: 8 }), runs, hooks);
    expect(a.attempts).toBeGreaterThan(runs);
    expect(b.endings['ok'] ?? 0).toBeGreaterThan(runs / 10);
  }, TIMEOUT);

  test(`every attempt-start has exactly one terminal event; no timer left behind (${runs} runs)`, async () => {
    const a = await checkScenarios('attempt events, jittered', scenarioArb({ abort: 0.5, close: 0.3, hang: 2 }), runs, hooks);
    const b = await checkScenarios('no timers left, jittered', scenarioArb({ close: 0.6, abort: 0.3, hang: 2, rateLimited: 3 }), runs, hooks);
    expect(a.endings['ABORTED'] ?? 0).toBeGreaterThan(runs / 10);
    expect(b.endings['CLOSED'] ?? 0).toBeGreaterThan(runs / 10);
  }, TIMEOUT);
});

describe('on a coarse clock (readings in whole steps of 16 ms, as a browser may coarsen performance.now())', () => {
  const coarse = { jitterMs: 0.4, stallMs: 0, resolutionMs: Number(process.env['FC_RESOLUTION_MS'] ?? 16) };
  test(`every call settles, never after its deadline (to the step); every attempt has one end; no timer left (${runs} runs)`, async () => {
    const a = await checkScenarios('deadlines, coarse', scenarioArb({ hang: 4, transient: 4, rateLimited: 3, maxInFlight: 0.5, maxCalls: 2 }), runs, coarse);
    const b = await checkScenarios('attempt events, coarse', scenarioArb({ abort: 0.5, close: 0.3, hang: 2 }), runs, coarse);
    const c = await checkScenarios('token buckets, coarse', scenarioArb({ rateLimit: 0.9, rateLimited: 4, ok: 8 }), runs, coarse);
    expect(a.endings['DEADLINE_EXCEEDED'] ?? 0).toBeGreaterThan(runs / 10);
    expect(b.endings['ABORTED'] ?? 0).toBeGreaterThan(runs / 10);
    expect(c.endings['ok'] ?? 0).toBeGreaterThan(runs / 10);
  }, TIMEOUT);
});
