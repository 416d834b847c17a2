/**
 * Time to shift traffic off a failing endpoint and back after it recovers, from the
 * share of upstream attempts it received per bin.
 *
 * Baseline: its average share over the 30 s before the first fault. "Off": the first bin
 * at or after the fault's start from which its share stays under a tenth of the baseline
 * for three bins in a row (a contender that still tries it first on every call, then
 * fails over, has not shifted anything). "Back": the first bin at or after recovery from which its share
 * stays at or above half the baseline for three bins (within the next fault window's
 * start, for flapping). Times are in milliseconds with the recorder's bin resolution;
 * `null` means it never happened.
 */
import { median } from '../lib/stats.mjs';

const RUN = 3;

export function shiftTimes(recorder, scenario, durationMs) {
  const faults = scenario.faults.filter(([from]) => from < durationMs);
  if (faults.length === 0) return undefined;
  const bin = recorder.binMs;
  const share = recorder.share(scenario.faultEndpoint);
  const first = Math.floor(faults[0][0] / bin);
  let sum = 0;
  let n = 0;
  for (let b = Math.max(0, first - Math.round(30_000 / bin)); b < first; b++) {
    if (!Number.isNaN(share[b])) {
      sum += share[b];
      n++;
    }
  }
  const baseline = n > 0 ? sum / n : Number.NaN;
  const low = (b) => Number.isNaN(share[b]) || share[b] < baseline / 10;
  const high = (b) => !Number.isNaN(share[b]) && share[b] >= baseline / 2;
  const firstRun = (from, to, test) => {
    for (let b = from; b + RUN <= to; b++) {
      let ok = true;
      for (let k = 0; k < RUN && ok; k++) ok = test(b + k);
      if (ok) return b;
    }
    return undefined;
  };
  const end = Math.floor(durationMs / bin);
  const off = [];
  const back = [];
  faults.forEach(([from, to], i) => {
    const b0 = Math.ceil(from / bin);
    const b1 = Math.ceil(to / bin);
    const o = firstRun(b0, b1, low);
    off.push(o === undefined ? null : o * bin - from);
    const nextFrom = i + 1 < faults.length ? Math.ceil(faults[i + 1][0] / bin) : end;
    const r = firstRun(b1, nextFrom, high);
    back.push(r === undefined ? null : r * bin - to);
  });
  const known = (xs) => xs.filter((x) => x !== null);
  return {
    baselineShare: Math.round(baseline * 1000) / 1000,
    offMs: off.length === 1 ? off[0] : known(off).length === off.length ? median(off) : null,
    backMs: back.length === 1 ? back[0] : known(back).length === back.length ? median(back) : null,
    offEach: off,
    backEach: back,
  };
}
