/**
 * Properties over the combinations `sim.ts` does not generate (see `mix.ts`): every
 * strategy, hedging, retry budgets, every kind of rate limit and groups, classifier hints,
 * 401s with and without `refreshAuth`, shared caller signals, answers after an abort,
 * `setEndpoints`, `probeHealth` and `close()` in the middle of traffic.
 *
 * Seeded: a fixed seed by default (the same scenarios in every `npm test`); `FC_SEED`
 * (with `FC_PATH`) replays a failure, `FC_MIX_RUNS` sets the runs per property.
 */
import { writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { mixArb, simulateMix, type MixBias, type MixOutcome, type MixScenario } from './mix.js';

const RUNS = Number(process.env['FC_MIX_RUNS'] ?? 150);
const SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 20261202;

interface Totals {
  runs: number;
  attempts: number;
  hedges: number;
  changes: number;
  forced: number;
  endings: Record<string, number>;
}

async function checkMix(name: string, bias: MixBias, runs = RUNS, seed = SEED, jitterMs?: number): Promise<Totals> {
  const totals: Totals = { runs: 0, attempts: 0, hedges: 0, changes: 0, forced: 0, endings: {} };
  const result = await fc.check(
    fc.asyncProperty(jitterMs === undefined ? mixArb(bias) : mixArb(bias).map((sc) => ({ ...sc, jitterMs, stallMs: Number(process.env['FC_STALL_MS'] ?? 250), resolutionMs: Number(process.env['FC_RESOLUTION_MS'] ?? 0) })), async (sc) => {
      // MIX_LAST=file: each scenario is written there before it runs (to catch one that never returns).
      if (process.env['MIX_LAST'] !== undefined) writeFileSync(process.env['MIX_LAST'], JSON.stringify(sc, (_k, val: unknown) => (val === Number.POSITIVE_INFINITY ? 'Infinity' : val)));
      const o: MixOutcome = await simulateMix(sc);
      totals.runs++;
      totals.attempts += o.attempts;
      totals.hedges += o.hedges;
      totals.changes += o.changes;
      totals.forced += o.forced ?? 0;
      for (const [k, x] of Object.entries(o.endings)) totals.endings[k] = (totals.endings[k] ?? 0) + x;
      return o.violations.length === 0;
    }),
    {
      seed,
      numRuns: runs,
      ...(process.env['FC_PATH'] !== undefined ? { path: process.env['FC_PATH'] } : {}),
      endOnFailure: process.env['FC_SHRINK'] === '0',
    },
  );
  if (result.failed) {
    const sc = result.counterexample?.[0] as MixScenario | undefined;
    // MIX_TRACE=from-to: the replay prints its events between those times (ms from the start).
    const [from, to] = (process.env['MIX_TRACE'] ?? '').split('-').map(Number);
    const trace = from === undefined || Number.isNaN(from) ? undefined : (t: number, e: object, depth: number): void => {
      if (t >= from && t <= (to ?? from)) console.log(t, '>'.repeat(depth), JSON.stringify(e, (k, val: unknown) => (k === 'error' ? undefined : val)));
    };
    const replayed = sc !== undefined ? await simulateMix(sc, trace === undefined ? {} : { trace }) : undefined;
    expect.fail(
      [
        `property "${name}" failed after ${result.numRuns} run(s) (seed ${result.seed}); replay with:`,
        // FC_SEED is the file's seed: this property ran on it plus an offset (`seed - SEED`).
        `  FC_SEED=${result.seed - (seed - SEED)} FC_PATH=${result.counterexamplePath ?? ''} npx vitest run test/properties/mix.test.ts -t '${name}'`,
        'violations:',
        ...(replayed?.violations ?? [String(result.errorInstance)]).map((x) => `  - ${x}`),
        'scenario:',
        JSON.stringify(sc, (_k, val: unknown) => (val === Number.POSITIVE_INFINITY ? 'Infinity' : val)),
      ].join('\n'),
    );
  }
  return totals;
}

describe('mixed options, faults and changes', () => {
  test(`hedging, budgets and every strategy (${RUNS} runs)`, async () => {
    const t = await checkMix('hedging', { hedge: 0.8, hang: 3 });
    expect(t.hedges).toBeGreaterThan(RUNS / 5);
  }, 120_000);

  test(`close() with abortAfterMs ends every call by then, hung attempts and hedges included (${RUNS} runs)`, async () => {
    const t = await checkMix('close-abort', { close: 0.9, hang: 4, hedge: 0.5, endless: 4 });
    expect(t.forced).toBeGreaterThan(RUNS / 10);
  }, 120_000);

  test(`rate limits, groups and hints (${RUNS} runs)`, async () => {
    const t = await checkMix('limits', { limits: 0.9, rateLimited: 4, spread: 300 });
    expect(t.endings['RATE_LIMITED'] ?? 0).toBeGreaterThan(0);
  }, 120_000);

  test(`enableEndpoint, report() and regrouping under disabling hints (${RUNS} runs)`, async () => {
    const t = await checkMix('hints', { hints: true, disable: 4, change: 0.5, limits: 0.6, spread: 1000 });
    expect(t.changes).toBeGreaterThan(RUNS / 5);
  }, 120_000);

  test(`late answers of replaced endpoints: ceiling hints and spent days (${RUNS} runs)`, async () => {
    const t = await checkMix('late', { late: true, change: 0.9, rateLimited: 6, limits: 0.9, recovery: 0.9, hang: 1, spread: 1500 });
    expect(t.changes).toBeGreaterThan(RUNS / 5);
  }, 120_000);

  test(`setEndpoints, probes and close() under traffic (${RUNS} runs)`, async () => {
    const t = await checkMix('changes', { change: 0.9, close: 0.5, unauthorized: 2 });
    expect(t.changes).toBeGreaterThan(RUNS / 5);
  }, 120_000);

  test(`listeners that act on the pool: calls, aborts, setEndpoints, hints, probes and close() from inside an event (${RUNS} runs)`, async () => {
    const t = await checkMix('reentrant', { reentrant: true, change: 0.9, close: 0.4, hints: true, hedge: 0.6, limits: 0.5, hang: 3 });
    expect(t.changes).toBeGreaterThan(RUNS / 5);
  }, 120_000);
});

describe('the same, with time passing between two readings of the clock, and stalls', () => {
  // Up to JITTER ms between readings, timers that seem to fire up to that early: the fake clock
  // alone never shows a decision taken on one reading and acted on at the next (seed
  // 2026120431 on Node 26 did: a negative timer delay, regressions.test.ts). And stalls of up
  // to FC_STALL_MS (default 250 ms) before one timer in twenty (TrackedClock).
  const JITTER = Number(process.env['FC_JITTER_MS'] ?? 0.4);
  test.each([
    ['hedging', { hedge: 0.8, hang: 3 }],
    ['limits', { limits: 0.9, rateLimited: 4, spread: 300 }],
    ['hints', { hints: true, disable: 4, change: 0.5, limits: 0.6, spread: 1000 }],
    ['late', { late: true, change: 0.9, rateLimited: 6, limits: 0.9, recovery: 0.9, hang: 1, spread: 1500 }],
    ['changes', { change: 0.9, close: 0.5, unauthorized: 2 }],
    ['reentrant', { reentrant: true, change: 0.9, close: 0.4, hints: true, hedge: 0.6, limits: 0.5, hang: 3 }],
    ['close-abort', { close: 0.9, hang: 4, hedge: 0.5, endless: 4 }],
  ] as [string, MixBias][])(`%s, jittered (${RUNS} runs)`, async (name, bias) => {
    const t = await checkMix(`${name}, jittered`, bias, RUNS, SEED + 1, JITTER);
    expect(t.runs).toBe(RUNS);
  }, 120_000);
});

/** Seeds other than the default that found a defect, kept so that they run on every `npm test`. */
describe('found with other seeds', () => {
  test('a ceiling that falls under a queue: the calls it takes out start no attempt before the answer that lowered it has ended (seed 2, "hints", 1,200 runs)', async () => {
    // Run 1,175: a call taken out selected again inside the answer's own bookkeeping, so its
    // attempt-start came before that answer's attempt-failure, with stats().inFlight one short.
    const t = await checkMix('hints (seed 2)', { hints: true, disable: 4, change: 0.5, limits: 0.6, spread: 1000 }, 1200, 2);
    expect(t.runs).toBe(1200);
  }, 120_000);
});
