/**
 * Looking changes nothing: `stats()`, `capacity()` and `breakerState()` are reads. Generated
 * key pools (bench/sim/keypools.mjs) run twice on the fake clock, once with a dashboard
 * reading everything at a generated period, once without; every event (its time, type,
 * call, endpoint and figures) and every figure of the run must be the same. Options vary
 * over the limiters a user may pick: paced, token bucket, adaptive, none. And the same on the
 * mixed-options generator (mix.ts: every strategy, hedging, budgets, breakers, groups, hints,
 * 401s, setEndpoints, probes, close()), on the exact clock (a reading of a jittered clock
 * draws from its generator, so a look there moves the next reading: not the pool's doing).
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Pool } from '../../src/index.js';
import { classifyApiKeyMessage } from '../../src/keys/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { generateProfile, recommendedOptions, runKeyPool } from '../../bench/sim/keypools.mjs';
import { mixArb, simulateMix, type MixBias } from './mix.js';

const RUNS = Number(process.env['FC_LOOK_RUNS'] ?? 6);
const MODES = ['paced', 'bucket', 'adaptive', 'none'] as const;
type Mode = (typeof MODES)[number];

function optionsFor(mode: Mode) {
  return (p: ReturnType<typeof generateProfile>) => {
    const o = recommendedOptions(p, classifyApiKeyMessage) as unknown as { deadlineMs: number; endpoints: { name: string; conn: string; rateLimit: { perSecond: number } }[] };
    if (mode === 'paced') return o;
    return {
      ...o,
      endpoints: o.endpoints.map((e) =>
        mode === 'none'
          ? { name: e.name, conn: e.conn }
          : { ...e, rateLimit: mode === 'bucket' ? { perSecond: e.rateLimit.perSecond, mode: 'bucket' } : { perSecond: e.rateLimit.perSecond, mode: 'paced', marginMs: 60, adaptive: true } },
      ),
    };
  };
}

async function run(seed: number, mode: Mode, lookEveryMs: number | undefined) {
  const profile = generateProfile(seed, 60_000);
  const log: string[] = [];
  const trace = {
    event: (t: number, e: unknown) => void log.push(`${t} ${JSON.stringify(e)}`),
    started: (p: unknown, c: unknown) => {
      const pool = p as Pool<string>;
      const clock = c as FakeClock;
      if (lookEveryMs === undefined) return;
      const look = () => {
        pool.stats();
        pool.capacity();
        for (const s of pool.stats()) pool.breakerState(s.name);
        clock.setTimeout(look, lookEveryMs);
      };
      clock.setTimeout(look, lookEveryMs);
    },
  };
  const r = await runKeyPool({ profile, load: 0.9, Pool, FakeClock, options: optionsFor(mode), trace, durationMs: 60_000 });
  return { r, log };
}

describe('looking changes nothing', () => {
  for (let i = 0; i < RUNS; i++) {
    const seed = (process.env['FC_SEED'] === undefined ? 2026120800 : Number(process.env['FC_SEED'])) + i;
    const mode = MODES[i % MODES.length]!;
    test(`key pool ${seed}, ${mode}: the same run with a dashboard reading stats() and capacity()`, async () => {
      const plain = await run(seed, mode, undefined);
      const looked = await run(seed, mode, 50 + ((seed >>> 3) % 950));
      const first = plain.log.findIndex((x, k) => x !== looked.log[k]);
      expect(first === -1 ? '' : `event ${first}:\n  without looks ${plain.log[first]}\n  with looks    ${looked.log[first]}`).toBe('');
      expect(looked.log.length).toBe(plain.log.length);
      expect(looked.r).toEqual(plain.r);
      // The run made calls (a generated profile may be slow: seed 2026120559 made 63 in its minute).
      expect(plain.r.calls).toBeGreaterThan(20);
    }, 60_000);
  }
});

const MIX_RUNS = Number(process.env['FC_LOOK_MIX_RUNS'] ?? 60);

describe('looking changes nothing, on the mixed-options generator', () => {
  test.each([
    ['limits', { limits: 0.9, rateLimited: 4, spread: 300 }],
    ['late', { late: true, change: 0.9, rateLimited: 6, limits: 0.9, recovery: 0.9, hang: 1, spread: 1500 }],
    ['hints', { hints: true, disable: 4, change: 0.5, limits: 0.6, spread: 1000 }],
    ['hedging', { hedge: 0.8, hang: 3 }],
    ['changes', { change: 0.9, close: 0.5, unauthorized: 2 }],
  ] as [string, MixBias][])(`%s (${MIX_RUNS} runs)`, async (_name, bias) => {
    let events = 0;
    await fc.assert(
      fc.asyncProperty(mixArb(bias), fc.integer({ min: 1, max: 400 }), async (sc, every) => {
        const logs: string[][] = [[], []];
        for (const [k, dashboardMs] of [undefined, every].entries()) {
          const log = logs[k]!;
          // Odd periods read from inside every event and metric record as well (mid-work, not only between two steps).
          const inside = dashboardMs !== undefined && dashboardMs % 2 === 1 ? { lookInside: true } : {};
          const o = await simulateMix(sc, { trace: (t, e) => void log.push(`${t} ${JSON.stringify(e)}`), ...(dashboardMs === undefined ? {} : { dashboardMs }), ...inside });
          log.push(`violations ${JSON.stringify(o.violations)} endings ${JSON.stringify(o.endings)}`);
        }
        const [plain, looked] = logs as [string[], string[]];
        const first = plain.findIndex((x, i) => x !== looked[i]);
        expect(first === -1 ? '' : `event ${first}:\n  without looks ${plain[first]}\n  with looks    ${looked[first]}`).toBe('');
        expect(looked.length).toBe(plain.length);
        events += plain.length;
      }),
      { numRuns: MIX_RUNS, seed: Number(process.env['FC_SEED'] ?? 2026120840) },
    );
    expect(events).toBeGreaterThan(MIX_RUNS * 5);
  }, 120_000);
});
