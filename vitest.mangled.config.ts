/**
 * The test suite against sources whose internal property names are shortened as the build
 * shortens them (scripts/mangle.mjs): `npx vitest run -c vitest.mangled.config.ts [files]`.
 * The tests are shortened too, since unit tests call internal methods and hand pure
 * functions objects with internal fields.
 *
 * `MANGLE_SRC_ONLY=1` rewrites src/ alone: a src/ module that reads an internal name from an
 * object a user hands it (an alias table looked up with the user's key, say) fails there,
 * among the unit tests that reach inside (the audit when the map grows: every failure must
 * be one of those).
 *
 * Files that test the built `dist/` alone (whose names the build has shortened already) run
 * exactly as they do in `npm test`, so they are left out here: running them twice proves
 * nothing more and costs CI about a minute.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { transform } from 'esbuild';
import { configDefaults, defineConfig, mergeConfig } from 'vitest/config';
// @ts-expect-error: a plain .mjs script
import { mangleOptions } from './scripts/mangle.mjs';
import base from './vitest.config.js';

const mangle = mangleOptions();
const names = Object.keys(mangle.mangleCache);
// The tests' own objects may use an internal name as a key they also spell as a string
// (fast-check's `requiredKeys: ['cls']`, `Scenario['opts']`): such names stay as they are in
// every test file (one set for all, since helpers and tests share their objects).
const testFiles = readdirSync('test', { recursive: true, encoding: 'utf8' }).filter((f) => /\.[cm]?[jt]s$/.test(f));
const testText = testFiles.map((f) => readFileSync(join('test', f), 'utf8')).join('\n');
const ownKeys = names.filter((n) => testText.includes(`'${n}'`) || testText.includes(`"${n}"`));
const testMangleProps = new RegExp(`^(?:${names.filter((n) => !ownKeys.includes(n)).join('|')})$`);

/** Tests of `dist/` only: the package, its exports and types, the docs' blocks, the bundle, child processes importing the build. */
export const DIST_ONLY = [
  'test/docs.test.ts',
  'test/bundle.test.ts',
  'test/exports.test.ts',
  'test/package.test.ts',
  'test/consumer-types.test.ts',
  'test/heap-in-flight.test.ts',
  'test/soak.test.ts',
  'test/redis/fleet.test.ts',
  'test/examples.test.ts',
];

/**
 * Left out of the default mangled run (FULL_MANGLED=1 runs them): slow randomized and scale
 * files whose src/ blocks, shortened, are all reached by the files kept. Evidence: a
 * MANGLED_COVERAGE run of every file (tools/mangled-coverage; NOTES-ci7.md, re-run on the
 * feature table's build in bench/notes/leftovers.md): leaving these out, the kept files reach every
 * src/ byte the full run reaches. Renaming changes names, not timing: re-running a timing
 * search on shortened names adds nothing where the same code already runs shortened. Files
 * that hand src/ objects of a real library or server (ganache, Redis) stay in even where
 * their bytes are covered: there a shortened name meets an object no test shortened.
 * Together ~115 s of the mangled run's ~450 s of file time (2 workers, load 6-9).
 */
export const MANGLED_SKIP = [
  'test/review/scale.test.ts',
  'test/properties/keypools.test.ts',
  'test/properties/breaker.test.ts',
  'test/properties/liveness.test.ts',
  'test/properties/limits.test.ts',
  'test/properties/retries.test.ts',
  'test/properties/events.test.ts',
  'test/properties/deadlines.test.ts',
];

export default mergeConfig(
  base,
  defineConfig({
    test: {
      exclude: [...configDefaults.exclude, ...DIST_ONLY, ...(process.env['FULL_MANGLED'] ? [] : MANGLED_SKIP)],
      // MANGLED_COVERAGE=dir: per-test-file block coverage of src/ (tools/mangled-coverage).
      setupFiles: process.env['MANGLED_COVERAGE'] ? ['tools/mangled-coverage/setup.ts'] : [],
    },
    plugins: [
      {
        name: 'mangle-internal-props',
        enforce: 'pre',
        async transform(code: string, id: string) {
          if (!(process.env['MANGLE_SRC_ONLY'] ? /\/src\/.*\.ts$/ : /\/(src|test)\/.*\.ts$/).test(id)) return null;
          const mangleProps = id.includes('/test/') ? testMangleProps : mangle.mangleProps;
          const out = await transform(code, { loader: 'ts', format: 'esm', target: 'es2022', sourcemap: true, sourcefile: id, mangleProps, mangleCache: { ...mangle.mangleCache } });
          return { code: out.code, map: out.map };
        },
      },
    ],
  }),
);
