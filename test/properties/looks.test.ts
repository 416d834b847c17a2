/**
 * Looking changes nothing: `stats()`, `capacity()` and `breakerState()` are reads. Generated
 * key pools (bench/sim/keypools.mjs) run twice on the fake clock, once with a dashboard
 * reading everything at a generated period, once without; every event (its time, type,
 * call, endpoint and figures) and every figure of the run must be the same. Options vary
 * over the limiters a user may pick: paced, token bucket, adaptive, none.
 */
import { describe, expect, test } from 'vitest';
import { Pool } from '../../src/index.js';
import { classifyApiKeyMessage } from '../../src/keys/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { generateProfile, recommendedOptions, runKeyPool } from '../../bench/sim/keypools.mjs';

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
      expect(plain.r.calls).toBeGreaterThan(100);
    }, 60_000);
  }
});
