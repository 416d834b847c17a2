/**
 * Internal property names that the build shortens (issue 16: `import { Pool }` carried about
 * 20 KB of property names, most of them internal fields and methods).
 *
 * `scripts/mangle-cache.json` maps each internal name to its short name. tsup hands the same
 * map to esbuild for the ESM and the CJS build (tsup.config.ts), so every entry and chunk of
 * both formats agrees, and an object made by one entry can be read by another. Names not in
 * the map are never shortened: new code is safe by default and only misses the saving.
 *
 * A name is internal when nothing outside this package can spell it:
 *   - it is not a word of the published declarations (dist/**\/*.d.ts, comments and
 *     `private` members aside): option keys, event fields, stats, errors, adapters' types;
 *   - it is not a word of the declarations of the platform and the libraries the adapters
 *     talk to (TypeScript's lib, @types/node, viem, ethers, ioredis, redis, OpenTelemetry,
 *     prom-client): properties of objects we are handed;
 *   - it never appears as a quoted string in src/ (`o['name']`, `'name' in o`, a key list),
 *     nor as a key with a string value (an alias table, `{ rps: 'perSecond' }`, is looked up
 *     with the key the user wrote);
 *   - it is not in RESERVED below.
 * A word of those libraries that src/ only uses on its own objects may be listed in REVIEWED.
 *
 *   node scripts/mangle.mjs           checks the map against these rules (test/bundle.test.ts)
 *   node scripts/mangle.mjs --write   rebuilds the map from the current sources (run `npm run
 *                                     build` first: the rules read dist/**\/*.d.ts)
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
export const CACHE_FILE = path.join(root, 'scripts/mangle-cache.json');

/**
 * Keys of tables that a user's string is looked up in, with a value the rules above miss; and
 * names of undici's dispatcher and handler API (src/fetch/dispatcher.ts), which undici calls
 * but whose declarations are not among the libraries read here.
 */
const RESERVED = [
  // Called by name from a test of the read layer (test/mutants/reads.test.ts), which the suite on shortened names runs too.
  'isPlain',
  'perMinute',
  'perHour',
  'dispatch',
  'isMockActive',
  'onBodySent',
  'onComplete',
  'onConnect',
  'onData',
  'onError',
  'onHeaders',
  'onRequestSent',
  'onRequestStart',
  'onRequestUpgrade',
  'onResponseData',
  'onResponseEnd',
  'onResponseError',
  'onResponseStart',
  'onResponseStarted',
  'onUpgrade',
];

/**
 * Words of some platform or library declaration (the DOM's `quota`, Node's `emit`, ...) that
 * src/ uses only as properties of its own objects: read by hand (grep `\.name\b` in src/) when
 * added. The other rules still apply to them.
 */
const REVIEWED = ['quota', 'opts', 'emit', 'plan', 'waiting', 'lastError', 'owner', 'settled', 'queued', 'ticket', 'running', 'timeouts', 'admitting', 'refreshed', 'anchor', 'configured', 'permits', 'hold', 'timer', 'probes', 'resume', 'estimate', 'grouped', 'problem', 'fails', 'learn', 'own', 'bits', 'live', 'usage', 'controller', 'release', 'lazy', 'slots', 'generation', 'launched', 'valid'];

/** The entries tsup builds (tsup.config.ts reads them from here). */
export const ENTRIES = {
  index: 'src/index.ts',
  'testing/index': 'src/testing/index.ts',
  'fetch/index': 'src/fetch/index.ts',
  'keys/index': 'src/keys/index.ts',
  'viem/index': 'src/viem/index.ts',
  'prometheus/index': 'src/prometheus/index.ts',
  'otel/index': 'src/otel/index.ts',
  'redis/index': 'src/redis/index.ts',
  'ethers/index': 'src/ethers/index.ts',
};

/** The map (name -> short name) and the esbuild options that apply it. */
export function mangleOptions() {
  const cache = JSON.parse(fs.readFileSync(CACHE_FILE, 'utf8'));
  const names = Object.keys(cache).map((n) => n.replace(/\$/g, '\\$'));
  return { mangleProps: new RegExp(`^(?:${names.join('|')})$`), mangleCache: { ...cache } };
}

function walk(dir, test, out = []) {
  for (const f of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, f.name);
    if (f.isDirectory()) walk(p, test, out);
    else if (test(f.name)) out.push(p);
  }
  return out;
}
const addWords = (text, set) => {
  for (const m of text.matchAll(/[A-Za-z_$][\w$]*/g)) set.add(m[0]);
  return set;
};
const isDts = (n) => /\.d\.[cm]?ts$/.test(n);

/** Every property name in the sources' output, and the sets that make a name not internal. */
export async function inventory() {
  const { build } = await import('esbuild');
  const entryPoints = Object.fromEntries(Object.entries(ENTRIES).map(([k, v]) => [k, path.join(root, v)]));
  const out = await build({ entryPoints, bundle: true, splitting: true, format: 'esm', outdir: path.join(root, 'dist'), write: false, packages: 'external', mangleProps: /^/, mangleCache: {}, logLevel: 'silent' });
  const all = Object.keys(out.mangleCache);

  const outside = new Set();
  const nm = path.join(root, 'node_modules');
  for (const d of ['typescript/lib', '@types/node', 'viem/_types', 'ethers/lib.esm', 'ioredis/built', '@redis/client/dist', '@opentelemetry/api/dist', 'prom-client']) {
    const p = path.join(nm, d);
    if (!fs.existsSync(p)) throw new Error(`scripts/mangle.mjs: ${d} is missing (npm ci)`);
    for (const f of walk(p, isDts)) addWords(fs.readFileSync(f, 'utf8'), outside);
  }
  const published = new Set();
  const distDts = walk(path.join(root, 'dist'), isDts);
  if (distDts.length === 0) throw new Error('scripts/mangle.mjs: no dist/**/*.d.ts (npm run build first)');
  for (const f of distDts) {
    const text = fs.readFileSync(f, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/.*$/gm, '')
      .replace(/^\s*private\s+(?:static\s+)?(?:readonly\s+)?[A-Za-z_$][\w$]*\??;?\s*$/gm, '');
    addWords(text, published);
  }
  const quoted = new Set(RESERVED);
  const ts = (await import('typescript')).default;
  const printer = ts.createPrinter({ removeComments: true });
  for (const f of walk(path.join(root, 'src'), (n) => n.endsWith('.ts'))) {
    // Comments aside: a name in backticks in a doc comment is prose, not a string the code reads.
    const text = printer.printFile(ts.createSourceFile(f, fs.readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS));
    for (const m of text.matchAll(/(['"`])([A-Za-z_$][\w$]*)\1/g)) quoted.add(m[2]);
    // A key whose value is a string: an alias table (`{ rps: 'perSecond' }`) is looked up
    // with the key the user wrote.
    for (const m of text.matchAll(/(?<![\w$.])([A-Za-z_$][\w$]*):\s*['"`]/g)) quoted.add(m[1]);
  }
  const internal = all.filter((n) => (!outside.has(n) || REVIEWED.includes(n)) && !published.has(n) && !quoted.has(n)).sort();
  return { all, internal, outside, published, quoted };
}

/** What is wrong with the map: names that are no longer internal, short names that collide. */
export async function checkCache() {
  const cache = JSON.parse(fs.readFileSync(CACHE_FILE, 'utf8'));
  const { all, internal } = await inventory();
  const ok = new Set(internal);
  const problems = [];
  for (const n of Object.keys(cache)) if (!ok.has(n) && all.includes(n)) problems.push(`${n} is no longer internal (published, quoted, or a platform/library name)`);
  const kept = new Set(all.filter((n) => !(n in cache)));
  for (const [n, short] of Object.entries(cache)) if (kept.has(short)) problems.push(`${n} -> ${short} collides with the property ${short}`);
  const missed = internal.filter((n) => !(n in cache));
  return { problems, missed, size: Object.keys(cache).length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes('--write')) {
    const { build } = await import('esbuild');
    const { internal } = await inventory();
    // One build of every entry at once, so esbuild gives the most frequent names the shortest
    // short names, avoiding every property name the build keeps.
    const entryPoints = Object.fromEntries(Object.entries(ENTRIES).map(([k, v]) => [k, path.join(root, v)]));
    const names = internal.map((n) => n.replace(/\$/g, '\\$'));
    const out = await build({ entryPoints, bundle: true, splitting: true, minify: true, format: 'esm', outdir: path.join(root, 'dist'), write: false, packages: 'external', mangleProps: new RegExp(`^(?:${names.join('|')})$`), mangleCache: {}, logLevel: 'silent' });
    const cache = Object.fromEntries(Object.entries(out.mangleCache).filter(([, v]) => v !== false).sort(([a], [b]) => (a < b ? -1 : 1)));
    fs.writeFileSync(CACHE_FILE, JSON.stringify(cache, null, 1) + '\n');
    console.log(`${CACHE_FILE}: ${Object.keys(cache).length} internal names`);
  } else {
    const r = await checkCache();
    console.log(`${r.size} names in the map; ${r.missed.length} internal names not in it${r.missed.length ? `: ${r.missed.join(' ')}` : ''}`);
    for (const p of r.problems) console.log(`problem: ${p}`);
    process.exit(r.problems.length === 0 ? 0 : 1);
  }
}
