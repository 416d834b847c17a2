/**
 * CPU profiles of the paths users take (issue 16), summarised as markdown:
 *   node bench/paths/profile.mjs [--ms 3000] [--node /path/to/node ...] [--out bench/results/profiles.md]
 * Each path runs alone in a fresh process under `node --cpu-prof` (bench/overhead/worker.mjs,
 * one caller): the core with every option on (`pool-full`), the same with an operation that
 * reads `ctx.signal` (`pool-signal`), viem's `client.request` over `poolTransport` at its
 * defaults (`viem-pool`), and `endpoint-pool/fetch` against a loopback server in the same
 * process (`fetch-pooled`). For each: the share of self time by origin (endpoint-pool's
 * `dist/`, viem, Node and undici, the garbage collector, the rest) and the heaviest
 * functions by self time.
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
  { name: 'fetch', contender: 'fetch-pooled', op: 'value' },
];

function originOf(url, fn) {
  if (fn === '(garbage collector)') return 'gc';
  if (url.includes('/dist/')) return 'endpoint-pool';
  if (url.includes('/viem/')) return 'viem';
  if (url.startsWith('node:') || url.includes('undici') || url === '' && fn !== '(program)' && fn !== '(idle)') return 'node';
  if (url.includes('/bench/')) return 'benchmark';
  return 'other';
}

/** Self time per function and per origin, as shares of all samples. */
export function summarise(profile, rows = 12) {
  const t = new Map();
  for (let i = 0; i < profile.samples.length; i++) t.set(profile.samples[i], (t.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const self = new Map();
  const origins = new Map();
  let total = 0;
  for (const n of profile.nodes) {
    const dt = t.get(n.id) ?? 0;
    if (dt === 0) continue;
    total += dt;
    const f = n.callFrame;
    const fn = f.functionName || '(anonymous)';
    const where = f.url ? `${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}` : '';
    const key = `${fn} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + dt);
    const o = originOf(f.url ?? '', fn);
    origins.set(o, (origins.get(o) ?? 0) + dt);
  }
  const pct = (x) => Math.round((1000 * x) / total) / 10;
  return {
    origins: Object.fromEntries([...origins].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, pct(v)])),
    top: [...self].sort((a, b) => b[1] - a[1]).slice(0, rows).map(([fn, v]) => ({ fn, selfPct: pct(v) })),
  };
}

export async function profilePaths({ ms, nodes, log }) {
  const out = [];
  for (const node of nodes) {
    for (const p of PATHS) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ep-prof-'));
      const res = await runChild(WORKER, { contender: p.contender, op: p.op, callers: 1, ms, warmupMs: 300 }, ['--cpu-prof', `--cpu-prof-dir=${dir}`], node);
      const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
      const summary = summarise(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')));
      fs.rmSync(dir, { recursive: true, force: true });
      const version = (await runChild(fileURLToPath(new URL('./version.mjs', import.meta.url)), {}, [], node)).version;
      log(`${version} ${p.name}: ${Math.round(res.nsPerOp)} ns per call`);
      out.push({ node: version, path: p.name, contender: p.contender, nsPerOp: Math.round(res.nsPerOp), ...summary });
    }
  }
  return out;
}

export function markdown(results) {
  const lines = [
    '# CPU profiles of the paths users take',
    '',
    'Written by `node bench/paths/profile.mjs` (one caller, one fresh process per path, `node --cpu-prof`).',
    'Self time as a share of all samples, while the path runs in a loop (warm-up included). On a',
    'shared, loaded machine the shares are what to read; the ns per call are indicative only.',
    '',
  ];
  for (const r of results) {
    lines.push(`## ${r.path} (\`${r.contender}\`), Node ${r.node}: ${r.nsPerOp.toLocaleString('en')} ns per call`, '');
    lines.push(`By origin: ${Object.entries(r.origins).map(([k, v]) => `${k} ${v} %`).join(', ')}.`, '');
    lines.push('| self % | function |', '|---:|---|');
    for (const t of r.top) lines.push(`| ${t.selfPct} | \`${t.fn.replace(/\|/g, '\\|')}\` |`);
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
  const results = await profilePaths({ ms: Number(arg('--ms', 3000)), nodes: nodes.length ? nodes : [process.execPath], log: console.log });
  const md = markdown(results);
  const file = arg('--out', undefined);
  if (file) fs.writeFileSync(file, md);
  else console.log(md);
}
