/**
 * Runs every scenario for every contender, returns the results, and writes one SVG chart
 * per scenario (failure rate and p99 latency over time, one line per contender).
 */
import fs from 'node:fs';
import path from 'node:path';
import { chart } from '../lib/svg.mjs';
import { contendersFor } from './contenders/index.mjs';
import { simulate } from './engine.mjs';
import { SCENARIOS } from './scenarios.mjs';

/**
 * @param {{ durationScale: number, keysScale?: number, outDir: string | undefined, log: (s: string) => void }} o
 * `keysScale` (default `durationScale`) shortens the long API-key scenarios separately.
 */
export async function runSim(o) {
  const scenarios = [];
  let calls = 0;
  let wallMs = 0;
  for (const scenario of SCENARIOS) {
    const contenders = contendersFor(scenario);
    const scale = scenario.name.startsWith('keys') ? (o.keysScale ?? o.durationScale) : o.durationScale;
    const run = await simulate(scenario, contenders, { durationScale: scale });
    calls += run.calls;
    wallMs += run.wallMs;
    o.log(`sim: ${scenario.name}: ${run.calls} calls in ${run.wallMs} ms of wall time (${run.callsPerWallSec} calls/s)`);
    for (const r of run.results) if (r.unsettled > 0) throw new Error(`sim: ${scenario.name}/${r.contender}: ${r.unsettled} calls never settled`);
    let chartFile;
    if (o.outDir !== undefined) {
      chartFile = `sim-${scenario.name}.svg`;
      fs.writeFileSync(path.join(o.outDir, chartFile), renderChart(scenario, run.results, scale));
    }
    scenarios.push({ name: scenario.name, description: scenario.description, calls: run.calls, wallMs: run.wallMs, callsPerWallSec: run.callsPerWallSec, chart: chartFile, results: run.results });
  }
  return { durationScale: o.durationScale, calls, wallMs, callsPerWallSec: Math.round(calls / (wallMs / 1000)), scenarios };
}

function renderChart(scenario, results, scale) {
  const xMax = Math.round((scenario.durationMs * scale) / 1000);
  const bands = scenario.faults.map(([a, b]) => [a / 1000, b / 1000]).filter(([a]) => a < xMax).map(([a, b]) => [a, Math.min(b, xMax)]);
  const inRun = (pt) => pt.t <= xMax;
  return chart({
    title: `${scenario.name}: ${scenario.description}`,
    names: results.map((r) => r.contender),
    panels: [
      { title: 'caller-visible failures (% of calls started in each 5 s)', yLabel: '%', xLabel: 'virtual time (s)', xMax, bands, series: results.map((r) => ({ name: r.contender, points: r.series.filter(inRun).map((p) => [p.t, p.failurePct]) })) },
      { title: 'p99 call latency (ms, calls started in each 5 s)', yLabel: 'ms', xLabel: 'virtual time (s)', xMax, bands, series: results.map((r) => ({ name: r.contender, points: r.series.filter(inRun).map((p) => [p.t, p.p99Ms]) })) },
    ],
  });
}
