/**
 * Property (issues 14 and 20): on any generated key pool (bench/sim/keypools.mjs: hidden
 * per-key limits, accounts with per-key limits inside, invalid keys, undisclosed daily
 * caps, limits that drift down and back up, bursty arrivals), README's configuration
 * settles every call, keeps its own 429s rare, serves a half-loaded pool whole, never queues
 * a call past `maxQueueWaitMs`, and sheds
 * an overloaded one fast while the calls it serves keep their latency; at 90 % it stays
 * within a few points of an ideal scheduler (the oracle of keypools.mjs). A smaller version
 * of the benchmark: two simulated minutes per profile, on the fake clock.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Pool } from '../../src/index.js';
import { classifyApiKeyMessage } from '../../src/keys/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { generateProfile, recommendedOptions, runKeyPool } from '../../bench/sim/keypools.mjs';
import { seedFor } from './run.js';

const RUNS = Number(process.env['FC_KEYPOOL_RUNS'] ?? 20);
const JITTER_MS = Number(process.env['FC_JITTER_MS'] ?? 0.4);
const options = (p: ReturnType<typeof generateProfile>) => recommendedOptions(p, classifyApiKeyMessage);

/** The longest a call queued for a turn (from its `rate-limit-wait` to its next attempt or its end), over one run. */
function queueWaits(): { longest: number; trace: { event: (t: number, e: unknown) => void } } {
  const since = new Map<number, number>();
  const out = {
    longest: 0,
    trace: {
      event: (t: number, event: unknown) => {
        const e = event as { type: string; callId?: number };
        if (e.callId === undefined) return;
        if (e.type === 'rate-limit-wait') since.set(e.callId, t);
        else if (e.type === 'attempt-start' || e.type === 'call-failed') {
          const at = since.get(e.callId);
          if (at !== undefined) out.longest = Math.max(out.longest, t - at);
          since.delete(e.callId);
        }
      },
    },
  };
  return out;
}

/** Events that lower what a key takes at that instant: a 429's ceiling or cooldown, a spent day, an invalid key. */
const FALLS = new Set(['endpoint-cooling', 'endpoint-recalibrated', 'endpoint-parked', 'endpoint-disabled']);

/**
 * The failures that took time (over 10 ms from the call's first event) with no cause: every
 * call that fails after waiting must fail at the instant a limit fell under it (the queue
 * walked again, `WaitQueue.recheck` or `evacuate`), or when its `maxQueueWaitMs` was spent (a
 * turn estimated too early), or at its deadline. Anything else (a call left waiting for a
 * turn that could not come) is listed, with the time it waited.
 */
function slowFailures(maxQueueWaitMs: number): { unexplained: string[]; trace: { event: (t: number, e: unknown) => void } } {
  const first = new Map<number, number>();
  const queued = new Map<number, number>();
  const falls = new Set<number>();
  const out = {
    unexplained: [] as string[],
    trace: {
      event: (t: number, event: unknown) => {
        const e = event as { type: string; callId?: number; perSecond?: number };
        if (FALLS.has(e.type)) falls.add(Math.floor(t));
        if (e.callId === undefined) return;
        if (!first.has(e.callId)) first.set(e.callId, t);
        if (e.type === 'rate-limit-wait') queued.set(e.callId, t);
        else if (e.type === 'attempt-start') queued.delete(e.callId);
        else if (e.type === 'call-failed') {
          const waited = t - first.get(e.callId)!;
          const since = queued.get(e.callId);
          const fell = falls.has(Math.floor(t)) || falls.has(Math.floor(t) - 1);
          const bound = since !== undefined && t - since >= maxQueueWaitMs - 1;
          const error = (event as { error?: { code?: string } }).error;
          if (waited > 10 && !fell && !bound && error?.code !== 'DEADLINE_EXCEEDED' && out.unexplained.length < 5) out.unexplained.push(`call ${e.callId} failed at ${Math.round(t)} ms after ${Math.round(waited)} ms (${error?.code})`);
          first.delete(e.callId);
          queued.delete(e.callId);
        }
      },
    },
  };
  return out;
}

/** Both traces on one run. */
function both(a: { event: (t: number, e: unknown) => void }, b: { event: (t: number, e: unknown) => void }): { event: (t: number, e: unknown) => void } {
  return { event: (t, e) => (a.event(t, e), b.event(t, e)) };
}

/** The calls of a run's profiles at 90 % and what they failed beyond the oracle's failures. */
interface Excess {
  calls: number;
  over: number;
}

/**
 * Over a whole run (at least 10 profiles: a replay of one is checked per profile only), the
 * pool fails at most 1.25 points of all the calls more than the oracle at 90 %. On the
 * default seeds (what `npm test` runs) the run is the same every time, 0.50 and 0.28 points
 * now: there at most 0.6, so that a change that costs calls shows (with learned ceilings that
 * never recover, 0.73 and 0.45).
 */
function expectNearOracle(excess: Excess, profiles: number): void {
  if (profiles < 10) return;
  const most = process.env['FC_SEED'] === undefined && profiles === 20 ? 0.6 : 1.25;
  expect((100 * excess.over) / excess.calls).toBeLessThanOrEqual(most);
}

/**
 * One generated profile at 50, 90 and 110 % load. `jitterMs`: the pool's clock reads up to
 * that much ahead of the time its timers run on (bench/sim/keypools.mjs `readAhead`); the
 * queue waits are measured on the exact time, so they may differ from the pool's by that much.
 */
async function checkProfile(seed: number, jitterMs: number, excess: Excess): Promise<void> {
  const profile = generateProfile(seed, 120_000);
  const half = await runKeyPool({ profile, load: 0.5, Pool, FakeClock, options, jitterMs });
  expect(half.unsettled).toBe(0);
  // A slow profile makes few calls in two minutes: allow two failures whatever the share, and
  // learning costs each key a few 429s (its hidden limit, then a recovery probe every ~30 s).
  // In calls, not in the rounded percentage (seed 2026120545, profile 1175743649: 2 failures
  // of 62 read 3.226 % > 200 / 62). Known to fail on one deep-run profile (thirty-second session,
  // FC_SEED=2026120752 with 30 profiles, the 15th: 1973204198, 3 failures of 84): a key's ceiling
  // learned during a drift (0.8/s for an admitted 1/s) held until its recovery 18 s after the
  // drift ended, and a burst then queued past maxQueueWaitMs; 300 other profiles at 50 % fail no call.
  // The thirty-fifth session tried taking the recovery steps that pressure makes due at the
  // moment a call would be turned away (instead of at the next success), on 1,000 generated
  // profiles against the same 1,000 without: as all due steps, the 90 % excess went 0.321 ->
  // 0.312 points but 110 % 1.139 -> 1.150 and this profile still failed 3 (the probe met the
  // true limit: two 429s); as one step, 0.332 and 1.210. Neither kept.
  // Beyond what the ideal scheduler fails itself: one profile in 1,000 cannot serve its bursts
  // at 50 % (160289058: once its 5/s key's day is spent, one key at 0.5/s is left, and the
  // oracle fails the same 3 of 32 calls as the pool).
  const halfCalls = (pct: number): number => Math.round((pct * half.calls) / 100);
  expect(halfCalls(half.failurePct)).toBeLessThanOrEqual(halfCalls(half.oracleFailurePct) + Math.max(0.01 * half.calls, 2));
  const attempts = half.fates.ok + half.fates.perSecond + half.fates.daily + half.fates.invalid;
  expect(half.fates.perSecond).toBeLessThanOrEqual(Math.max(0.02 * attempts, 3 * profile.keys.length));
  // At 90 % the pool stays near an ideal scheduler with the same margin and queue bound
  // (`oracleFailurePct`): what it fails beyond that is its own doing. Learning costs calls
  // the oracle never pays: a hidden limit is found by a 429, and a limit that fell and came
  // back is found back only by a probe after a quiet period, while the oracle serves at the
  // full rate the instant a drift ends. So the excess is bounded per profile loosely (10 % of
  // its calls, or 3: a catastrophe, such as calls stranded on a key) and over the run tightly
  // (`excess`, checked by `expectNearOracle`: 1.25 points of all the run's calls). On 1,000 generated
  // two-minute profiles the worst single excess was 8.1 % of 369 calls (1250692698, clock
  // read ahead: a drift's end found 25 s late, then hidden limits on 0.5/s keys) and 7.4 % of
  // 459 (401762601, exact: the recovery probe met the drift 0.5 s before its end, which
  // doubles the quiet period); the excess over all of them 0.30 points (exact clock) and 0.39
  // (read ahead), over any 20 of them at most 0.99. Until the twenty-fifth session the bound
  // was 5 % of each profile's calls, which those two and two more in about 300 exceeded.
  // maxQueueWaitMs is a bound, not an estimate: no call queues longer (at 90 and 110 %).
  const busyWaits = queueWaits();
  const busy = await runKeyPool({ profile, load: 0.9, Pool, FakeClock, options, trace: busyWaits.trace, jitterMs });
  expect(busyWaits.longest).toBeLessThanOrEqual((options(profile).maxQueueWaitMs as number) + jitterMs);
  // In calls, not in the rounded percentages (seed 18120412, profile 651213777: 4 failures of
  // 22 against the oracle's 1, exactly the 3 allowed, read 18.182 > 4.545 + 13.636).
  const calls = (pct: number): number => Math.round((pct * busy.calls) / 100);
  expect(calls(busy.failurePct)).toBeLessThanOrEqual(calls(busy.oracleFailurePct) + Math.max(0.1 * busy.calls, 3));
  excess.calls += busy.calls;
  excess.over += calls(busy.failurePct) - calls(busy.oracleFailurePct);
  const overWaits = queueWaits();
  const overSlow = slowFailures(options(profile).maxQueueWaitMs as number);
  const over = await runKeyPool({ profile, load: 1.1, Pool, FakeClock, options, trace: both(overWaits.trace, overSlow.trace), jitterMs });
  expect(overWaits.longest).toBeLessThanOrEqual((options(profile).maxQueueWaitMs as number) + jitterMs);
  expect(over.unsettled).toBe(0);
  // The overload is shed at once: a call fails after waiting only when a limit fell under it
  // (learning a hidden limit strands the calls queued on it: they may fail then, after part of
  // their wait) or its bound was spent. Until the twenty-fourth session this read "where over
  // 1 % fail, the median failure takes no time", which failed on about one profile in 40-100
  // at two minutes (where the overload is mostly the drifts, the calls a fall strands are
  // most of the failures) and could not tell those from a defect: it caught the one below
  // (calls left queued on a key whose day was spent, 1291059074) only by chance.
  expect(overSlow.unexplained).toEqual([]);
  expect(over.codes['RATE_LIMITED'] ?? 0).toBeGreaterThanOrEqual(over.codes['DEADLINE_EXCEEDED'] ?? 0);
  // The calls it keeps keep their latency: 99 % are served within half the deadline (on a
  // pool that serves a few hundred calls in two minutes: below that the p99 is one or two
  // calls, and a key at 0.3/s that rejects one costs seconds).
  const served = over.calls - Math.round((over.failurePct * over.calls) / 100);
  if (served >= 300) expect(over.servedP99Ms).toBeLessThan(over.deadlineMs / 2);
}

describe('generated key pools', () => {
  test(`at 50 % load every call settles, failures ≤ 1 %, self-inflicted 429s ≤ 2 %; at 90 % failures near the oracle's; no call queues past maxQueueWaitMs; at 110 % the excess fails fast (${RUNS} profiles)`, async () => {
    const excess = { calls: 0, over: 0 };
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => checkProfile(seed, 0, excess)),
      // A fixed seed by default (FC_SEED explores others).
      { numRuns: RUNS, seed: process.env['FC_SEED'] !== undefined ? seedFor() : 20261201 },
    );
    expectNearOracle(excess, RUNS);
  }, 120_000);

  // The same on a clock read ahead of its timers, as on a real host (FC_JITTER_MS, default
  // 0.4 ms): paced slots then start a fraction after their slot, which must not add up.
  test(`the same with the pool's clock read up to ${JITTER_MS} ms ahead of its timers (${RUNS} profiles)`, async () => {
    const excess = { calls: 0, over: 0 };
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => checkProfile(seed, JITTER_MS, excess)),
      { numRuns: RUNS, seed: process.env['FC_SEED'] !== undefined ? seedFor() + 1 : 20261204 },
    );
    expectNearOracle(excess, RUNS);
  }, 120_000);
});
