/**
 * `npm run bench`: overhead, scale and simulation benchmarks; writes bench/results/*.json,
 * one SVG chart per simulated scenario, and bench/results/summary.md.
 * `npm run bench:smoke` (`--smoke`): a very short version of each, written to a temporary
 * directory; it fails only if something crashes, never on a timing number.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runOverhead } from './overhead/run.mjs';
import { runScale } from './overhead/scale.mjs';
import { renderSummary } from './report.mjs';
import { runSim } from './sim/run.mjs';
import { renderBeyond, runBeyond } from './beyond/sims.mjs';
import { renderKeyPools, runKeyPools } from './sim/keypools-run.mjs';
import { measure as measureWaiters } from './waiters/run.mjs';
import { pathRatios, runPaths } from './paths/run.mjs';
import { markdown as profilesMarkdown, profilePaths } from './paths/profile.mjs';
import { measureBundle } from './bundle.mjs';
import { renderAdaptive, runAdaptiveAll } from './sim/adaptive.mjs';
import { Pool } from '../dist/index.js';
import { FakeClock } from '../dist/testing/index.js';

const smoke = process.argv.includes('--smoke');
const here = path.dirname(fileURLToPath(import.meta.url));
if (!fs.existsSync(path.join(here, '..', 'dist', 'index.js'))) throw new Error('dist/ is missing: run `npm run build` first');
const outDir = smoke ? fs.mkdtempSync(path.join(os.tmpdir(), 'endpoint-pool-bench-')) : path.join(here, 'results');
fs.mkdirSync(outDir, { recursive: true });
const log = (s) => console.log(s);

const settings = smoke
  ? { overhead: { runs: 1, ms: 20, heapCalls: 500, smoke: true }, scale: { runs: 1, ms: 20, smoke: true }, sim: { durationScale: 0.26, keysScale: 0.05 } }
  : { overhead: { runs: 5, ms: 300, heapCalls: 10_000 }, scale: { runs: 5, ms: 300 }, sim: { durationScale: 1 } };

const started = Date.now();
const environment = { node: process.version, platform: `${os.platform()} ${os.arch()}`, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, date: new Date().toISOString(), smoke };
const overhead = await runOverhead({ ...settings.overhead, log });
write('overhead.json', { environment, ...overhead });
const scale = await runScale({ ...settings.scale, log });
write('scale.json', { environment, ...scale });
// The paths users take (issue 16), on this Node and on any others listed in BENCH_NODES (colon-separated binaries).
const nodes = [process.execPath, ...(process.env.BENCH_NODES ?? '').split(':').filter(Boolean)];
const paths = await runPaths({ runs: smoke ? 1 : 5, ms: smoke ? 20 : 300, heapCalls: smoke ? 500 : 10_000, nodes, smoke, log });
write('paths.json', { environment, runs: paths, ratios: paths.map(pathRatios) });
// Where each path's time goes (CPU profiles; the tables of results/profiles.md, whose summary
// is written by hand), and what import { Pool } bundles to (results/bundle.json, read in results/bundle.md).
const profiles = await profilePaths({ ms: smoke ? 100 : 3000, runs: smoke ? 1 : 3, nodes, log });
write('profiles.json', { environment, profiles });
fs.writeFileSync(path.join(outDir, 'profiles-tables.md'), profilesMarkdown(profiles));
write('bundle.json', await measureBundle());
const sim = await runSim({ ...settings.sim, outDir, log });
write('sim.json', { environment, ...sim });
// The recommended key configuration (paced, the account grouped, `health`) must not draw its
// own 429s, and a smoke run is enough to see it: 8 % went unseen for three days when the
// margin's meaning changed under the scenario (docs/performance.md).
const paced = sim.scenarios.find((s) => s.name === 'keys-90')?.results.find((r) => r.contender === 'endpoint-pool-next');
if (paced === undefined || paced.selfInflicted429Pct > 2) throw new Error(`bench: the paced key contender at keys-90 drew ${paced?.selfInflicted429Pct} % self-inflicted 429s (goal ≤ 2 %)`);
const keypools = await runKeyPools(smoke ? { profiles: 2, minutes: 1, log } : { log });
write('keypools.json', { environment, ...keypools });
fs.writeFileSync(path.join(outDir, 'keypools.md'), renderKeyPools(keypools));
// Limits that tune themselves (issue 18): results/adaptive-table.md, read in results/adaptive.md.
const adaptive = await runAdaptiveAll(smoke ? { Pool, FakeClock, rates: [10], seeds: [1], phaseMs: 40_000 } : { Pool, FakeClock });
write('adaptive.json', { environment, ...adaptive });
fs.writeFileSync(path.join(outDir, 'adaptive-table.md'), renderAdaptive(adaptive));
log(`adaptive: ${adaptive.worst.map((w) => `${w.contender}: ${(w.minUtilisationAfter30s * 100).toFixed(1)} %, 429 ${w.maxLimitedPct} %`).join('; ')}`);
const waiters = [];
for (const n of smoke ? [1000] : [10_000, 50_000, 100_000]) waiters.push(await measureWaiters(n, smoke ? 200 : 3000));
write('waiters.json', { environment, waiters });
log(`waiters: ${waiters.map((w) => `${w.waiters}: p99 ${w.loopDelayMs.p99} ms`).join(', ')}`);
const beyond = await runBeyond({ scale: smoke ? 0.1 : 1 });
write('beyond.json', { environment, ...beyond });
fs.writeFileSync(path.join(outDir, 'summary.md'), renderSummary({ environment, overhead, scale, sim }) + '\n' + renderBeyond(beyond));
// Pools of hundreds to thousands of endpoints (docs/performance.md): head routing, a call that
// walks the pool, a method one node serves. Each prints its own table; the smoke runs the smallest.
const largePools = [];
for (const script of ['heads-scale.mjs', 'walk-scale.mjs', 'unsupported-scale.mjs']) {
  const args = smoke ? ['--sizes', '10', '--ms', '100'] : [];
  const out = execFileSync(process.execPath, [path.join(here, 'paths', script), ...args], { encoding: 'utf8' }).trim();
  largePools.push({ script, out });
  log(`${script}:\n${out}`);
}
write('large-pools.json', { environment, largePools });
log(`bench: done in ${Math.round((Date.now() - started) / 1000)} s; results in ${outDir}`);

function write(name, data) {
  fs.writeFileSync(path.join(outDir, name), JSON.stringify(data, null, 1) + '\n');
}
