/**
 * What `import { Pool } from 'endpoint-pool'` costs in a bundle, file by file (issue 16):
 *   node bench/bundle.mjs [--out bench/results/bundle.json]
 * esbuild bundles the entry twice, minified: from `dist/` (what users bundle: the headline
 * size and its gzip), and from `src/` with a metafile, which says how many output bytes each
 * source module contributes. Modules are grouped by the feature they carry, so the share an
 * optional feature would save when unused can be read off directly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The feature each module carries (`core`: needed by any call). */
export const FEATURES = {
  'src/call/hedging.ts': 'hedging',
  'src/selection/hedge.ts': 'hedging',
  'src/selection/latency.ts': 'latency-aware selection',
  'src/limits/budget.ts': 'retry budget',
  'src/call/admission.ts': 'shared store (Redis)',
  'src/limits/store.ts': 'shared store (Redis)',
  'src/call/auth.ts': 'credential refresh',
  'src/limits/ceiling.ts': 'learned ceilings',
  'src/call/ceilings.ts': 'learned ceilings',
  'src/limits/daily.ts': 'daily quotas',
  'src/limits/paced.ts': 'paced / windowed rate limits',
  'src/limits/window.ts': 'paced / windowed rate limits',
  'src/limits/waiters.ts': 'rate-limit wait queues',
  'src/limits/quota.ts': 'rate limits',
  'src/limits/bucket.ts': 'rate limits',
  'src/health/probe.ts': 'health probes',
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

export async function measureBundle() {
  const entry = "import { Pool } from './dist/index.js'; globalThis.keep = Pool;";
  const dist = await build({ stdin: { contents: entry, resolveDir: root, loader: 'js' }, bundle: true, minify: true, format: 'esm', write: false });
  const code = dist.outputFiles[0].contents;
  const src = await build({
    stdin: { contents: entry.replace('./dist/index.js', './src/index.ts'), resolveDir: root, loader: 'ts' },
    bundle: true,
    minify: true,
    format: 'esm',
    write: false,
    metafile: true,
  });
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
}
