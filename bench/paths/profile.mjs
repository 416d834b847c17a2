/**
 * CPU profiles of the paths users take (issue 16), summarised as markdown:
 *   node bench/paths/profile.mjs [--ms 3000] [--runs 3] [--node /path/to/node ...] [--out file.md] [--json file.json]
 * Each path runs alone in a fresh process under `node --cpu-prof` (bench/overhead/worker.mjs,
 * one caller): the core with every option on (`pool-full`), the same with an operation that
 * reads `ctx.signal` (`pool-signal`), viem's `client.request` over `poolTransport` at its
 * defaults (`viem-pool`: no `custom` handed in, so the adapter imports viem itself and, once it
 * has, calls each endpoint's provider directly), and `endpoint-pool/fetch` against a loopback
 * server in a child process (`fetch-pooled`, `server: 'child'`: the server's frames are not in
 * the client's profile).
 *
 * Only the samples of the worker's measured window count (`windowUs`): start-up, module
 * loading, warm-up and close are left out. Shares are of the busy samples (all but `(idle)`,
 * the thread waiting; its share of the window is given apart). Frames of endpoint-pool's
 * `dist/` are named by their place in `src/` through the build's source maps (and by their
 * name in `src/` where the build shortened it, scripts/mangle-cache.json). Each (node, path)
 * runs `runs` times, rounds rotated; the tables give the median share and the range over runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';

const WORKER = fileURLToPath(new URL('../overhead/worker.mjs', import.meta.url));
export const PATHS = [
  { name: 'core', contender: 'pool-full', op: 'value' },
  { name: 'signal', contender: 'pool-signal', op: 'value' },
  { name: 'viem', contender: 'viem-pool', op: 'value' },
  { name: 'fetch', contender: 'fetch-pooled', op: 'value', server: 'child' },
];
const ORIGINS = ['endpoint-pool', 'viem', 'node', 'gc', 'program', 'benchmark', 'other'];

function originOf(url, fn) {
  if (fn === '(garbage collector)') return 'gc';
  if (fn === '(program)') return 'program';
  if (url.includes('/dist/')) return 'endpoint-pool';
  if (url.includes('/viem/')) return 'viem';
  if (url.startsWith('node:') || url.includes('undici') || url === '') return 'node';
  if (url.includes('/bench/')) return 'benchmark';
  return 'other';
}

const B64 = Object.fromEntries([...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].map((c, i) => [c, i]));

/** Decodes a source map's `mappings` into, per generated line, `[column, sourceIndex, line][]`. */
function decodeMappings(mappings) {
  const lines = [];
  let source = 0;
  let line = 0;
  for (const text of mappings.split(';')) {
    const segs = [];
    let col = 0;
    for (const seg of text.split(',')) {
      if (seg === '') continue;
      const v = [];
      let value = 0;
      let shift = 0;
      for (const ch of seg) {
        const d = B64[ch];
        value += (d & 31) << shift;
        if (d & 32) shift += 5;
        else {
          v.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      col += v[0];
      if (v.length >= 4) {
        source += v[1];
        line += v[2];
        segs.push([col, source, line]);
      }
    }
    lines.push(segs);
  }
  return lines;
}

/** The build shortens internal property names (scripts/mangle.mjs): short name -> name in src/. */
let unmangle;
function sourceName(fn) {
  unmangle ??= (() => {
    try {
      return new Map(Object.entries(JSON.parse(fs.readFileSync(new URL('../../scripts/mangle-cache.json', import.meta.url), 'utf8'))).map(([k, v]) => [v, k]));
    } catch {
      return new Map();
    }
  })();
  return unmangle.get(fn) ?? fn;
}

const maps = new Map();
/** `src/…:line` of a frame of endpoint-pool's dist, from the build's source map; undefined without one. */
function original(url, line, column) {
  if (!maps.has(url)) {
    let map;
    try {
      const m = JSON.parse(fs.readFileSync(`${fileURLToPath(url)}.map`, 'utf8'));
      map = { sources: m.sources.map((s) => s.replace(/^(\.\.\/)+/, '')), lines: decodeMappings(m.mappings) };
    } catch {
      map = undefined;
    }
    maps.set(url, map);
  }
  const map = maps.get(url);
  const segs = map?.lines[line];
  if (!segs?.length) return undefined;
  let hit = segs[0];
  for (const s of segs) if (s[0] <= column) hit = s;
  return `${map.sources[hit[1]]}:${hit[2] + 1}`;
}

/**
 * Self samples per function, per origin and per source file of endpoint-pool, as shares of
 * the busy samples in `window` (µs, the monotonic clock; the whole profile without it).
 */
export function summarise(profile, window) {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const origins = Object.fromEntries(ORIGINS.map((o) => [o, 0]));
  const files = new Map();
  let ts = profile.startTime;
  let busy = 0;
  let idle = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    ts += profile.timeDeltas[i] ?? 0;
    if (window && (ts < window[0] || ts > window[1])) continue;
    // Samples are counted, not weighted by the time since the previous one: on a loaded machine
    // that time includes whatever the thread was descheduled for, charged to the frame it
    // happened to resume in; a count follows the thread's own running time.
    const dt = 1;
    const f = byNode.get(profile.samples[i]).callFrame;
    let fn = f.functionName || '(anonymous)';
    if (fn === '(idle)') {
      idle += dt;
      continue;
    }
    busy += dt;
    const origin = originOf(f.url ?? '', fn);
    origins[origin] += dt;
    let where = f.url ? `${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}` : '';
    if (origin === 'endpoint-pool') {
      const src = original(f.url, f.lineNumber, f.columnNumber);
      fn = sourceName(fn);
      if (src) {
        where = src;
        const file = src.replace(/:\d+$/, '');
        files.set(file, (files.get(file) ?? 0) + dt);
      }
    }
    const key = `${fn} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  const pct = (x) => (100 * x) / busy;
  const shares = (m) => Object.fromEntries([...m].map(([k, v]) => [k, pct(v)]));
  return { busySamples: busy, idlePct: (100 * idle) / (busy + idle), origins: shares(Object.entries(origins)), files: shares(files), functions: shares(self) };
}

const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Median and range over runs of each key's share (a key missing from a run counts 0). */
function spread(maps) {
  const keys = new Set(maps.flatMap((m) => Object.keys(m)));
  return [...keys]
    .map((k) => {
      const v = maps.map((m) => m[k] ?? 0);
      return { key: k, median: median(v), min: Math.min(...v), max: Math.max(...v) };
    })
    .sort((a, b) => b.median - a.median);
}

/** `first`: the number of the first run (the order of the paths rotates with it). */
export async function profilePaths({ ms, runs = 3, first = 0, nodes, log }) {
  const versions = [];
  for (const node of nodes) versions.push((await runChild(fileURLToPath(new URL('./version.mjs', import.meta.url)), {}, [], node)).version);
  const raw = new Map();
  for (let r = first; r < first + runs; r++) {
    // Rotate the order from run to run, so that no path always runs first or last.
    const order = PATHS.map((_, i) => PATHS[(i + r) % PATHS.length]);
    for (const [n, node] of nodes.entries()) {
      for (const p of order) {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ep-prof-'));
        const args = { contender: p.contender, op: p.op, callers: 1, ms, warmupMs: 300, ...(p.server ? { server: p.server } : {}) };
        const res = await runChild(WORKER, args, ['--cpu-prof', `--cpu-prof-dir=${dir}`], node);
        const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
        const summary = summarise(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')), res.windowUs);
        fs.rmSync(dir, { recursive: true, force: true });
        log(`${versions[n]} ${p.name} run ${r + 1}: ${Math.round(res.nsPerOp)} ns per call, endpoint-pool ${summary.origins['endpoint-pool'].toFixed(1)} % of busy samples`);
        const key = `${versions[n]} ${p.name}`;
        if (!raw.has(key)) raw.set(key, { node: versions[n], path: p.name, contender: p.contender, runs: [] });
        raw.get(key).runs.push({ nsPerOp: Math.round(res.nsPerOp), ...summary });
      }
    }
  }
  return aggregate([...raw.values()]);
}

/**
 * Median and range over runs of each (node, path)'s shares; `entries` are `{ node, path,
 * contender, runs }`, `runs` as summarise returns them plus `nsPerOp` (profilePaths's own
 * results qualify, so runs of several invocations can be pooled).
 */
export function aggregate(entries) {
  return entries.map((x) => ({
    ...x,
    nsPerOp: median(x.runs.map((r) => r.nsPerOp)),
    idlePct: spread(x.runs.map((r) => ({ idle: r.idlePct })))[0],
    origins: spread(x.runs.map((r) => r.origins)),
    // The collector's share swings with the machine's load (the main thread waits for its helper
    // threads, which wait for a core): the other origins as shares of the samples outside it.
    originsExGc: spread(x.runs.map((r) => Object.fromEntries(Object.entries(r.origins).filter(([k]) => k !== 'gc').map(([k, v]) => [k, (100 * v) / (100 - r.origins.gc)])))),
    files: spread(x.runs.map((r) => r.files)),
    functions: spread(x.runs.map((r) => r.functions)),
    // Each run's own heaviest functions, for sums over a group of frames (the clock, say).
    runs: x.runs.map((run) => ({ ...run, functions: Object.fromEntries(Object.entries(run.functions).sort((a, b) => b[1] - a[1]).slice(0, 40)) })),
  }));
}

const f1 = (x) => x.toFixed(1);
const range = (s) => `${f1(s.min)}–${f1(s.max)}`;

export function markdown(results, { rows = 14, files = 6 } = {}) {
  const lines = [];
  for (const r of results) {
    lines.push(`### ${r.path} (\`${r.contender}\`), Node ${r.node}: ${r.nsPerOp.toLocaleString('en')} ns per call (median of ${r.runs.length} runs)`, '');
    lines.push(`By origin, median share of busy samples [range over runs]: ${r.origins.filter((o) => o.max >= 0.05).map((o) => `${o.key} ${f1(o.median)} % [${range(o)}]`).join(', ')}.` + (r.idlePct.max >= 0.5 ? ` Idle (waiting): ${f1(r.idlePct.median)} % of the window [${range(r.idlePct)}].` : ''), '');
    lines.push(`Outside the collector: ${r.originsExGc.filter((o) => o.max >= 0.05).map((o) => `${o.key} ${f1(o.median)} % [${range(o)}]`).join(', ')}.`, '');
    if (r.files.length) lines.push(`endpoint-pool by source file: ${r.files.slice(0, files).map((o) => `\`${o.key}\` ${f1(o.median)} %`).join(', ')}.`, '');
    lines.push('| self % (median) | range | function |', '|---:|---:|---|');
    for (const t of r.functions.slice(0, rows)) lines.push(`| ${f1(t.median)} | ${range(t)} | \`${t.key.replace(/\|/g, '\\|')}\` |`);
    lines.push('');
  }
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, d) => {
    const i = process.argv.indexOf(name);
    return i < 0 ? d : process.argv[i + 1];
  };
  const nodes = process.argv.flatMap((a, i) => (process.argv[i - 1] === '--node' ? [a] : []));
  const results = await profilePaths({ ms: Number(arg('--ms', 3000)), runs: Number(arg('--runs', 3)), nodes: nodes.length ? nodes : [process.execPath], log: console.log });
  const json = arg('--json', undefined);
  if (json) fs.writeFileSync(json, JSON.stringify(results, null, 1));
  const md = markdown(results);
  const file = arg('--out', undefined);
  if (file) fs.writeFileSync(file, md);
  else console.log(md);
}
