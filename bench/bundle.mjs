/**
 * What `import { Pool } from 'endpoint-pool'` costs in a bundle, file by file (issue 16):
 *   node bench/bundle.mjs [--out bench/results/bundle.json] [--lean] [--core]
 * esbuild bundles the entry twice, minified: from `dist/` (what users bundle: the headline
 * size and its gzip; run `npm run build` first), and from `src/` with a metafile, which says
 * how many output bytes each source module contributes. The `src/` build shortens the same
 * internal property names as the package build (scripts/mangle.mjs), so its total matches
 * `dist/` to within a few bytes. Modules are grouped by the feature they carry, so the share
 * an optional feature would save when unused can be read off directly.
 *
 * `--lean` also measures the core that a pool with default options needs: every module of
 * an optional feature (LEAN_STUBS) is replaced by a stub that exports the same names as
 * `undefined`, so only the core's own code, its wiring of the features included, is left.
 * That is the size an API in which each option carries its feature's code (`hedge:
 * hedging({...})`) would start from, before any of that wiring moved out.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { mangleOptions } from '../scripts/mangle.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The feature each module carries (`core`: needed by any call). */
export const FEATURES = {
  'src/call/hedging.ts': 'hedging',
  'src/selection/hedge.ts': 'hedging',
  'src/selection/latency.ts': 'latency-aware selection',
  'src/selection/latency-selector.ts': 'latency-aware selection',
  'src/selection/health.ts': 'health-ranked selection',
  'src/selection/random.ts': 'random selection',
  'src/selection/panic.ts': 'panic mode',
  'src/health/failure-rate.ts': 'failure-rate breakers',
  'src/limits/budget.ts': 'retry budget',
  'src/call/admission.ts': 'shared store (Redis)',
  'src/limits/store.ts': 'shared store (Redis)',
  'src/limits/fleet.ts': 'shared store (Redis)',
  'src/call/auth.ts': 'credential refresh',
  'src/limits/ceiling.ts': 'learned ceilings',
  'src/call/ceilings.ts': 'learned ceilings',
  'src/limits/daily.ts': 'daily quotas',
  'src/limits/paced.ts': 'paced / windowed rate limits',
  'src/limits/adaptive.ts': 'adaptive rate limits',
  'src/call/adaptive.ts': 'adaptive rate limits',
  'src/limits/waiters.ts': 'rate-limit wait queues',
  'src/limits/quota.ts': 'rate limits',
  'src/limits/groups.ts': 'rate limits',
  'src/limits/capacity.ts': 'rate limits',
  'src/limits/bucket.ts': 'rate limits',
  'src/health/probe.ts': 'health probes',
  'src/call/permit-queue.ts': 'concurrency limits',
  'src/call/routing.ts': 'call routing (pin, exclude)',
  'src/base/signals.ts': 'reusable attempt signals',
  'src/base/metric-catalog.ts': 'metrics',
  'src/base/metrics.ts': 'metrics',
  'src/base/events.ts': 'events',
  'src/options/validate.ts': 'option checking',
  'src/options/resolve.ts': 'option checking',
  'src/options/options.ts': 'option checking',
  'src/options/defaults.ts': 'option checking',
  'src/base/errors.ts': 'errors',
};

/** `entry` bundled from the sources as the package build shortens them, minified, with a metafile. */
function bundleSrc(contents, plugins = []) {
  return build({ stdin: { contents, resolveDir: root, loader: 'ts' }, bundle: true, minify: true, format: 'esm', write: false, metafile: true, plugins, ...mangleOptions() });
}

/**
 * The modules of features a pool with default options never runs. Not stubbed: option
 * checking (the lean core checks its own options), events, errors, metrics names, and the
 * rolling counter (limits/window.ts), which the breaker's failure-rate mode and the
 * endpoint's health share.
 */
export const LEAN_STUBS = [
  'src/call/hedging.ts',
  'src/selection/hedge.ts',
  'src/selection/latency.ts',
  'src/limits/budget.ts',
  'src/call/admission.ts',
  'src/limits/store.ts',
  'src/limits/fleet.ts',
  'src/call/auth.ts',
  'src/limits/ceiling.ts',
  'src/call/ceilings.ts',
  'src/limits/adaptive.ts',
  'src/call/adaptive.ts',
  'src/limits/daily.ts',
  'src/limits/paced.ts',
  'src/limits/waiters.ts',
  'src/limits/quota.ts',
  'src/limits/groups.ts',
  'src/limits/capacity.ts',
  'src/limits/bucket.ts',
  'src/health/probe.ts',
  'src/base/signals.ts',
];

/** A plugin that replaces each module of `stubs` with one exporting its names as `undefined`. */
async function stubPlugin(stubs) {
  const exportsOf = {};
  for (const f of stubs) {
    const one = await build({ entryPoints: [path.join(root, f)], bundle: false, write: false, metafile: true, format: 'esm', outdir: '/tmp' });
    exportsOf[path.join(root, f)] = Object.values(one.metafile.outputs).flatMap((o) => o.exports);
  }
  return {
    name: 'lean-stubs',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        const names = exportsOf[args.path];
        if (names === undefined) return undefined;
        return { contents: names.map((n) => `export const ${n} = undefined;`).join('\n'), loader: 'ts' };
      });
    },
  };
}

/** `import { Pool }` with every module of LEAN_STUBS stubbed out, minified and gzipped. */
export async function measureLean(stubs = LEAN_STUBS) {
  const r = await bundleSrc("import { Pool } from './src/index.ts'; globalThis.keep = Pool;", [await stubPlugin(stubs)]);
  const code = r.outputFiles[0].contents;
  const output = Object.values(r.metafile.outputs)[0];
  const modules = Object.entries(output.inputs)
    .map(([file, v]) => ({ file, bytes: v.bytesInOutput, feature: FEATURES[file] ?? 'core' }))
    .filter((m) => m.bytes > 0 && !stubs.includes(m.file))
    .sort((a, b) => b.bytes - a.bytes);
  return { bytes: code.length, gzipBytes: gzipSync(code, { level: 9 }).length, stubs, modules };
}

/**
 * `PoolCore` built with no optional feature (features.ts): what a pool bundles once the core
 * reaches its features only through the table, with no stubs. Every module still in it is
 * listed; a feature module here is one still imported by the core directly.
 */
export async function measureCore() {
  const r = await bundleSrc("import { PoolCore } from './src/pool-core.ts'; globalThis.keep = PoolCore;");
  const code = r.outputFiles[0].contents;
  const output = Object.values(r.metafile.outputs)[0];
  const modules = Object.entries(output.inputs)
    .map(([file, v]) => ({ file, bytes: v.bytesInOutput, feature: FEATURES[file] ?? 'core' }))
    .filter((m) => m.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
  return { bytes: code.length, gzipBytes: gzipSync(code, { level: 9 }).length, modules };
}

export async function measureBundle() {
  const entry = "import { Pool } from './dist/index.js'; globalThis.keep = Pool;";
  const dist = await build({ stdin: { contents: entry, resolveDir: root, loader: 'js' }, bundle: true, minify: true, format: 'esm', write: false });
  const code = dist.outputFiles[0].contents;
  const src = await bundleSrc(entry.replace('./dist/index.js', './src/index.ts'));
  const output = Object.values(src.metafile.outputs)[0];
  const modules = Object.entries(output.inputs)
    .map(([file, v]) => ({ file, bytes: v.bytesInOutput, feature: FEATURES[file] ?? 'core' }))
    .filter((m) => m.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
  const byFeature = {};
  for (const m of modules) byFeature[m.feature] = (byFeature[m.feature] ?? 0) + m.bytes;
  return {
    distBytes: code.length,
    distGzipBytes: gzipSync(code, { level: 9 }).length,
    srcBytes: output.bytes,
    modules,
    byFeature: Object.fromEntries(Object.entries(byFeature).sort((a, b) => b[1] - a[1])),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await measureBundle();
  const i = process.argv.indexOf('--out');
  if (i > 0) fs.writeFileSync(path.resolve(process.argv[i + 1]), JSON.stringify(r, null, 1) + '\n');
  console.log(`import { Pool }: ${(r.distBytes / 1024).toFixed(1)} KB minified, ${(r.distGzipBytes / 1024).toFixed(1)} KB gzip (from src: ${(r.srcBytes / 1024).toFixed(1)} KB, ${r.modules.length} modules)`);
  for (const [f, b] of Object.entries(r.byFeature)) console.log(`${(b / 1024).toFixed(1).padStart(6)} KB  ${f}`);
  console.log('');
  for (const m of r.modules) console.log(`${String(m.bytes).padStart(6)}  ${m.file}  (${m.feature})`);
  if (process.argv.includes('--core')) {
    const core = await measureCore();
    console.log(`\nPoolCore with no feature: ${(core.bytes / 1024).toFixed(1)} KB minified, ${(core.gzipBytes / 1024).toFixed(1)} KB gzip`);
    for (const m of core.modules) if (m.feature !== 'core') console.log(`${String(m.bytes).padStart(6)}  ${m.file}  (${m.feature}: still reached)`);
  }
  if (process.argv.includes('--lean')) {
    const lean = await measureLean();
    console.log(`\nlean core (${lean.stubs.length} optional modules stubbed): ${(lean.bytes / 1024).toFixed(1)} KB minified, ${(lean.gzipBytes / 1024).toFixed(1)} KB gzip`);
    for (const m of lean.modules) console.log(`${String(m.bytes).padStart(6)}  ${m.file}  (${m.feature})`);
  }
}
