/**
 * The scale benchmark: pool-full's per-call time with 3, 30, 300 and 3,000 healthy
 * endpoints under 'ordered' and 'round-robin', each run in a fresh process, interleaved
 * like the overhead benchmark. Selection should stop at the first ready endpoint, so the
 * curve should stay flat rather than grow with the endpoint count.
 */
import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';
import { median, round, spread } from '../lib/stats.mjs';

const WORKER = fileURLToPath(new URL('./worker.mjs', import.meta.url));
export const SIZES = [3, 30, 300, 3000];
export const STRATEGIES = ['ordered', 'round-robin'];

/** @param {{ runs: number, ms: number, smoke?: boolean, log: (s: string) => void }} o */
export async function runScale(o) {
  const cases = [];
  for (const strategy of STRATEGIES) for (const endpoints of SIZES) cases.push({ strategy, endpoints });
  if (o.smoke) cases.splice(0, cases.length, { strategy: 'ordered', endpoints: 3 }, { strategy: 'round-robin', endpoints: 3000 });
  const samples = cases.map(() => []);
  for (let r = 0; r < o.runs; r++) {
    o.log(`scale: run ${r + 1}/${o.runs}`);
    for (let i = 0; i < cases.length; i++) {
      const res = await runChild(WORKER, { contender: 'pool-scale', op: 'value', callers: 1, ms: o.ms, warmupMs: Math.min(150, o.ms), ...cases[i] });
      samples[i].push(res.nsPerOp);
    }
  }
  const rows = cases.map((c, i) => ({ ...c, medianNs: round(median(samples[i]), 1), spreadPct: round(100 * spread(samples[i]).relative, 1) }));
  for (const row of rows) {
    const base = rows.find((x) => x.strategy === row.strategy && x.endpoints === SIZES[0]) ?? row;
    row.ratioTo3 = round(row.medianNs / base.medianNs, 2);
  }
  return { runs: o.runs, rows };
}
