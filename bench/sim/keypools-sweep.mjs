/**
 * Many generated key pools at once, to tune on the class of problem rather than on a few
 * profiles: `--n` profiles with seeds drawn from `--seed` (default 1), `--minutes` each,
 * at the `--loads` given, README's configuration. For each load prints caller failures
 * (median / worst), the gap to the oracle (the pool's failures less an ideal scheduler's on
 * the same arrivals: median / worst, and the profiles more than 1 point behind), self-inflicted
 * 429s (median / worst) and the worst served p99 as a share of the deadline, the calls failed
 * beyond the oracle's over all the profiles, then the worst
 * profiles by gap so they can be replayed with keypools-diag.mjs.
 *
 *   node bench/sim/keypools-sweep.mjs [--n 100] [--minutes 2] [--loads 90,110] [--seed 1]
 */
import { Pool } from '../../dist/index.js';
import { classifyApiKeyMessage } from '../../dist/keys/index.js';
import { FakeClock } from '../../dist/testing/index.js';
import { Rng } from './prng.mjs';
import { generateProfile, recommendedOptions, runKeyPool } from './keypools.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const n = Number(arg('n', 100));
const minutes = Number(arg('minutes', 2));
const loads = String(arg('loads', '90,110')).split(',').map((x) => Number(x) / 100);
const seeds = new Rng(Number(arg('seed', 1)));
const options = (p) => recommendedOptions(p, classifyApiKeyMessage);

const byLoad = new Map(loads.map((l) => [l, []]));
for (let i = 0; i < n; i++) {
  const seed = 1 + Math.floor(seeds.next() * (2 ** 31 - 2));
  const profile = generateProfile(seed, minutes * 60_000);
  for (const load of loads) {
    const r = await runKeyPool({ profile, load, Pool, FakeClock, options });
    byLoad.get(load).push({ seed, calls: r.calls, fail: r.failurePct, gap: r.failurePct - r.oracleFailurePct, oracle: r.oracleFailurePct, own429: r.selfInflicted429Pct, p99: r.servedP99Ms / r.deadlineMs, unsettled: r.unsettled, medFail: r.medianFailureMs });
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const max = (xs) => Math.max(...xs);
const r2 = (x) => Math.round(x * 100) / 100;
for (const [load, rs] of byLoad) {
  const worst = [...rs].sort((a, b) => b.gap - a.gap).slice(0, 5).map((r) => `${r.seed} (${r2(r.fail)} %, gap ${r2(r.gap)}, ${r.calls} calls)`);
  console.log(
    `${Math.round(load * 100)} %: failures ${r2(med(rs.map((r) => r.fail)))} / ${r2(max(rs.map((r) => r.fail)))} %, gap to oracle ${r2(med(rs.map((r) => r.gap)))} / ${r2(max(rs.map((r) => r.gap)))} (${rs.filter((r) => r.gap > 1).length} of ${rs.length} over 1 point), ` +
      `own 429s ${r2(med(rs.map((r) => r.own429)))} / ${r2(max(rs.map((r) => r.own429)))} % (${rs.filter((r) => r.own429 > 1).length} over 1 %), served p99 worst ${r2(max(rs.map((r) => r.p99)))} × deadline (${rs.filter((r) => r.p99 >= 0.5).length} at or over half), unsettled ${rs.reduce((a, r) => a + r.unsettled, 0)}`,
  );
  // Over all the profiles' calls: what the pool failed beyond the oracle, in calls, as a share of them all.
  const calls = rs.reduce((a, r) => a + r.calls, 0);
  const beyond = rs.reduce((a, r) => a + Math.round((r.fail * r.calls) / 100) - Math.round((r.oracle * r.calls) / 100), 0);
  console.log(`   over all ${calls} calls: ${beyond} failed beyond the oracle's (${r2((100 * beyond) / calls)} points)`);
  console.log(`   worst gaps: ${worst.join(', ')}`);
  const late = rs.filter((r) => r.p99 >= 0.5).map((r) => `${r.seed} (${r2(r.p99)})`);
  if (late.length > 0) console.log(`   served p99 at or over half: ${late.slice(0, 8).join(', ')}`);
}
