/**
 * The overhead benchmark on every runtime the package supports: the same worker
 * (worker.mjs, one fresh process per measurement) under Node (this one and any given with
 * `--node`), Bun and Deno (installed in scripts/runtimes by `npm ci --prefix scripts/runtimes`).
 * Runs are rotated (run 1 of every runtime and contender, then run 2, ...) so that a noisy
 * neighbour hits them alike; medians per case, and each contender's ratio to `pool-full` on
 * the same runtime.
 *
 *   npm run build && node bench/overhead/runtimes.mjs [--runs 5] [--ms 600] [--warmup 400] [--node <path>]
 *     [--contenders a,b] [--out file.json]
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runChild } from '../lib/child.mjs';
import { median, round } from '../lib/stats.mjs';

const WORKER = fileURLToPath(new URL('./worker.mjs', import.meta.url));
const BIN = fileURLToPath(new URL('../../scripts/runtimes/node_modules/.bin/', import.meta.url));

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i < 0 ? dflt : argv[i + 1];
};
const runs = Number(opt('--runs', 5));
const ms = Number(opt('--ms', 600));
// Bun's JIT tiers up later than V8's: a short warm-up measures its baseline tier.
const warmupMs = Number(opt('--warmup', 400));
const out = opt('--out', undefined);
const CONTENDERS = (opt('--contenders', undefined)?.split(',')) ?? ['bare', 'pool-full', 'pool-default', 'pool-full-signal', 'cockatiel-no-timeout', 'cockatiel', 'opossum'];
const CALLERS = [1, 100];

/** Each runtime: how to start a worker under it (`runChild`'s binary and flags). */
const runtimes = [{ name: 'Node', bin: process.execPath, flags: [] }];
for (let i = 0; i < argv.length; i++) if (argv[i] === '--node') runtimes.push({ name: 'Node', bin: argv[i + 1], flags: [] });
if (fs.existsSync(BIN + 'node')) runtimes.push({ name: 'Node', bin: BIN + 'node', flags: [] });
if (fs.existsSync(BIN + 'bun')) runtimes.push({ name: 'Bun', bin: BIN + 'bun', flags: [] });
if (fs.existsSync(BIN + 'deno')) runtimes.push({ name: 'Deno', bin: BIN + 'deno', flags: ['run', '-A'] });

/** The runtime's own version (`--version`'s first line). */
function version(rt) {
  return new Promise((resolve) => execFile(rt.bin, ['--version'], (error, stdout) => resolve(error ? '?' : stdout.split('\n')[0].trim())));
}
for (const rt of runtimes) {
  const v = await version(rt);
  rt.name = `${rt.name} ${v.replace(/^(deno|v)\s*/i, '').split(' ')[0]}`;
}

const samples = new Map();
const key = (rt, c, callers) => `${rt.name}|${c}|${callers}`;
for (let r = 0; r < runs; r++) {
  process.stderr.write(`run ${r + 1}/${runs}\n`);
  for (const callers of CALLERS) {
    for (const c of CONTENDERS) {
      for (const rt of runtimes) {
        const k = key(rt, c, callers);
        try {
          const res = await runChild(WORKER, { contender: c, op: 'value', callers, ms, warmupMs }, rt.flags, rt.bin);
          (samples.get(k) ?? samples.set(k, []).get(k)).push(res.nsPerOp);
        } catch (e) {
          process.stderr.write(`${k}: ${String(e.message).split('\n')[0]}\n`);
        }
      }
    }
  }
}

const rows = [];
for (const callers of CALLERS) {
  for (const c of CONTENDERS) {
    const row = { contender: c, callers };
    for (const rt of runtimes) {
      const xs = samples.get(key(rt, c, callers));
      const pool = samples.get(key(rt, 'pool-full', callers));
      row[rt.name] = xs === undefined ? undefined : { ns: round(median(xs), 0), vsPoolFull: pool === undefined ? undefined : round(median(xs) / median(pool), 2) };
    }
    rows.push(row);
  }
}

const head = `| contender, callers | ${runtimes.map((rt) => rt.name).join(' | ')} |`;
const lines = [head, `|---|${runtimes.map(() => '---').join('|')}|`];
for (const row of rows) {
  const cells = runtimes.map((rt) => (row[rt.name] === undefined ? '–' : `${row[rt.name].ns} ns (${row[rt.name].vsPoolFull}×)`));
  lines.push(`| ${row.contender}, ${row.callers} | ${cells.join(' | ')} |`);
}
console.log(`ns per call, median of ${runs} fresh processes of ${ms} ms after ${warmupMs} ms of warm-up; in brackets, the ratio to pool-full on the same runtime\n`);
console.log(lines.join('\n'));
if (out !== undefined) fs.writeFileSync(out, JSON.stringify({ runs, ms, warmupMs, date: new Date().toISOString(), runtimes: runtimes.map(({ name }) => name), rows }, null, 2) + '\n');
