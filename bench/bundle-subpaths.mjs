/**
 * What each entry of the package costs a bundle (issue 16):
 *   node bench/bundle-subpaths.mjs [dist folder, default dist]
 * Every export of each entry bundled by esbuild from the built files, minified, ESM, with the
 * peer libraries (viem, ethers, redis clients) left external; and the core as
 * test/bundle.test.ts measures it (dist/index.js with the chunks it imports, unminified,
 * gzipped at level 9).
 */
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const dist = path.resolve(process.argv[2] ?? new URL('../dist', import.meta.url).pathname);
const entries = ['index', 'testing/index', 'fetch/index', 'keys/index', 'viem/index', 'prometheus/index', 'otel/index', 'redis/index', 'ethers/index'];

function withChunks(file, seen = new Set()) {
  if (seen.has(file)) return [];
  seen.add(file);
  const code = fs.readFileSync(path.join(dist, file), 'utf8');
  for (const m of code.matchAll(/from\s*["']\.\/([^"']+)["']/g)) withChunks(m[1], seen);
  return [...seen];
}

const rows = [];
const pool = await build({ stdin: { contents: "import { Pool } from './index.js'; globalThis.keep = Pool;", resolveDir: dist, loader: 'js' }, bundle: true, minify: true, format: 'esm', write: false });
rows.push(['import { Pool }', pool.outputFiles[0].contents.length, gzipSync(pool.outputFiles[0].contents, { level: 9 }).length]);
for (const e of entries) {
  const out = await build({ stdin: { contents: `export * from './${e}.js';`, resolveDir: dist, loader: 'js' }, bundle: true, minify: true, format: 'esm', write: false, logLevel: 'error', external: ['viem', 'viem/*', 'ethers', 'redis', 'ioredis', '@opentelemetry/api', 'prom-client'] });
  rows.push([`export * from '${e === 'index' ? 'endpoint-pool' : `endpoint-pool/${e.replace('/index', '')}`}'`, out.outputFiles[0].contents.length, gzipSync(out.outputFiles[0].contents, { level: 9 }).length]);
}
const core = withChunks('index.js');
const coreGz = gzipSync(Buffer.concat(core.map((f) => fs.readFileSync(path.join(dist, f)))), { level: 9 }).length;
for (const [name, min, gz] of rows) console.log(`${String(min).padStart(7)} B min  ${String(gz).padStart(6)} B gzip  ${name}`);
console.log(`${String(coreGz).padStart(24)} B gzip  dist/index.js with ${core.length - 1} chunk(s), unminified (test/bundle.test.ts)`);
