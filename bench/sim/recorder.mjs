/**
 * What a simulation run observed: every call (start, latency, outcome) and every upstream
 * attempt (endpoint, time, fate), binned by virtual time for the time series and the
 * traffic-shift measurements.
 */
import { percentiles, percentileSorted, round } from '../lib/stats.mjs';

const FATES = ['ok', 'down', 'hang', 'ceiling', 'throttled'];

export class Recorder {
  constructor(binMs, durationMs) {
    this.binMs = binMs;
    this.bins = Math.ceil(durationMs / binMs) + 1;
    this.latencies = [];
    this.failures = 0;
    this.calls = 0;
    this.deadlineMisses = 0;
    this.fates = Object.fromEntries(FATES.map((f) => [f, 0]));
    this.attempts = 0;
    /** attemptsByBin[endpoint][bin] */
    this.attemptsByBin = [];
    this.callsByBin = new Float64Array(this.bins);
    this.failuresByBin = new Float64Array(this.bins);
    this.latencyByBin = Array.from({ length: this.bins }, () => []);
  }

  setEndpoints(names) {
    this.names = names;
    this.attemptsByBin = names.map(() => new Float64Array(this.bins));
    this.fatesByEndpoint = names.map(() => Object.fromEntries(FATES.map((f) => [f, 0])));
  }

  attempt(endpoint, t, fate) {
    this.attempts++;
    this.fates[fate]++;
    this.fatesByEndpoint[endpoint][fate]++;
    const b = Math.min(this.bins - 1, Math.floor(t / this.binMs));
    this.attemptsByBin[endpoint][b]++;
  }

  call(start, latency, ok, deadlineMs) {
    this.calls++;
    if (!ok) this.failures++;
    if (latency > deadlineMs) this.deadlineMisses++;
    this.latencies.push(latency);
    const b = Math.min(this.bins - 1, Math.floor(start / this.binMs));
    this.callsByBin[b]++;
    if (!ok) this.failuresByBin[b]++;
    this.latencyByBin[b].push(latency);
  }

  /** The headline figures of a run. */
  summary() {
    const [p50, p99, max] = percentiles(this.latencies, [50, 99, 100]);
    const successes = this.calls - this.failures;
    return {
      calls: this.calls,
      failureRatePct: round((100 * this.failures) / this.calls, 3),
      upstreamPerSuccess: round(this.attempts / Math.max(1, successes), 3),
      selfInflicted429Pct: round((100 * this.fates.ceiling) / Math.max(1, this.attempts), 3),
      throttled429Pct: round((100 * this.fates.throttled) / Math.max(1, this.attempts), 3),
      p50Ms: round(p50, 1),
      p99Ms: round(p99, 1),
      maxMs: round(max, 1),
      deadlineMisses: this.deadlineMisses,
      upstreamAttempts: this.attempts,
      fates: this.fates,
      byEndpoint: Object.fromEntries(this.names.map((n, i) => [n, this.fatesByEndpoint[i]])),
    };
  }

  /** Failure rate (%) and p99 latency per group of `group` bins, for the charts. */
  series(group) {
    const out = [];
    for (let b = 0; b < this.bins; b += group) {
      let calls = 0;
      let fails = 0;
      const lat = [];
      for (let k = b; k < Math.min(this.bins, b + group); k++) {
        calls += this.callsByBin[k];
        fails += this.failuresByBin[k];
        for (const x of this.latencyByBin[k]) lat.push(x);
      }
      if (calls === 0) continue;
      const sorted = Float64Array.from(lat).sort();
      out.push({ t: ((b + group / 2) * this.binMs) / 1000, failurePct: round((100 * fails) / calls, 2), p99Ms: round(percentileSorted(sorted, 99), 1) });
    }
    return out;
  }

  /** Share of upstream attempts that went to `endpoint` in each bin (NaN where none went anywhere). */
  share(endpoint) {
    const out = new Float64Array(this.bins);
    for (let b = 0; b < this.bins; b++) {
      let total = 0;
      for (const row of this.attemptsByBin) total += row[b];
      out[b] = total === 0 ? Number.NaN : this.attemptsByBin[endpoint][b] / total;
    }
    return out;
  }
}
