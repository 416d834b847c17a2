/**
 * The overhead benchmark: per-call time and heap per in-flight call for every contender,
 * each measurement in a fresh child process. Runs are interleaved (run 1 of every
 * contender, then run 2, ...) so that a noisy neighbour on the machine hits all
 * contenders alike; ratios are computed from medians of the same run set.
 */
import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';
import { median, round, spread } from '../lib/stats.mjs';

const WORKER = fileURLToPath(new URL('./worker.mjs', import.meta.url));
const HEAP_WORKER = fileURLToPath(new URL('./heap-worker.mjs', import.meta.url));

export const CONTENDERS = ['bare', 'pool-full', 'pool-default', 'pool-full-signal', 'cockatiel', 'cockatiel-no-timeout', 'opossum', 'p-retry+p-limit', 'viem-fallback'];
export const OPS = ['value', 'immediate'];
export const CALLERS = [1, 100];

/** @param {{ runs: number, ms: number, heapCalls: number, smoke?: boolean, log: (s: string) => void }} o */
export async function runOverhead(o) {
  const cases = [];
  for (const op of OPS) for (const callers of CALLERS) for (const contender of CONTENDERS) cases.push({ contender, op, callers });
  // The smoke run only checks that every contender still runs: one case each.
  if (o.smoke) cases.splice(CONTENDERS.length);
  const samples = new Map(cases.map((c) => [key(c), []]));
  for (let r = 0; r < o.runs; r++) {
    o.log(`overhead: run ${r + 1}/${o.runs}`);
    for (const c of cases) {
      const res = await runChild(WORKER, { ...c, ms: o.ms, warmupMs: Math.min(150, o.ms) });
      samples.get(key(c)).push(res.nsPerOp);
    }
  }
  const timing = cases.map((c) => summarize(c, samples.get(key(c))));
  for (const t of timing) {
    const floor = timing.find((x) => x.op === t.op && x.callers === t.callers && x.contender === 'bare');
    const pool = timing.find((x) => x.op === t.op && x.callers === t.callers && x.contender === 'pool-full');
    t.aboveFloorNs = round(t.medianNs - floor.medianNs, 1);
    t.ratioToPoolFull = round(t.medianNs / pool.medianNs, 2);
    t.opsPerSec = Math.round(1e9 / t.medianNs);
  }
  o.log('overhead: heap per in-flight call');
  const heap = [];
  for (const contender of CONTENDERS) {
    const res = await runChild(HEAP_WORKER, { contender, calls: o.heapCalls }, ['--expose-gc']);
    heap.push({ contender, bytesPerCall: Math.round(res.bytesPerCall), parked: res.parked });
  }
  const floor = heap.find((h) => h.contender === 'bare').bytesPerCall;
  for (const h of heap) h.aboveFloorBytes = h.bytesPerCall - floor;
  return { runs: o.runs, msPerRun: o.ms, timing, heap };
}

function key(c) {
  return `${c.contender}|${c.op}|${c.callers}`;
}

function summarize(c, xs) {
  const s = spread(xs);
  return { ...c, medianNs: round(median(xs), 1), minNs: round(s.min, 1), maxNs: round(s.max, 1), spreadPct: round(100 * s.relative, 1), samplesNs: xs.map((x) => round(x, 1)) };
}
