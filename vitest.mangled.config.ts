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
 */
import { transform } from 'esbuild';
import { defineConfig, mergeConfig } from 'vitest/config';
// @ts-expect-error: a plain .mjs script
import { mangleOptions } from './scripts/mangle.mjs';
import base from './vitest.config.js';

const mangle = mangleOptions();
const names = Object.keys(mangle.mangleCache);

export default mergeConfig(
  base,
  defineConfig({
    plugins: [
      {
        name: 'mangle-internal-props',
        enforce: 'pre',
        async transform(code: string, id: string) {
          if (!(process.env['MANGLE_SRC_ONLY'] ? /\/src\/.*\.ts$/ : /\/(src|test)\/.*\.ts$/).test(id)) return null;
          // A test's own objects may use an internal name as a key it also spells as a string
          // (fast-check's `requiredKeys: ['cls']`): such a name stays as it is in that test.
          const own = id.includes('/test/') ? names.filter((n) => code.includes(`'${n}'`) || code.includes(`"${n}"`)) : [];
          const mangleProps = own.length === 0 ? mangle.mangleProps : new RegExp(`^(?:${names.filter((n) => !own.includes(n)).join('|')})$`);
          const out = await transform(code, { loader: 'ts', format: 'esm', target: 'es2022', sourcemap: true, sourcefile: id, mangleProps, mangleCache: { ...mangle.mangleCache } });
          return { code: out.code, map: out.map };
        },
      },
    ],
  }),
);
