import { defineConfig } from 'tsup';
// @ts-expect-error: a plain .mjs script, shared with test/bundle.test.ts
import { ENTRIES, mangleOptions } from './scripts/mangle.mjs';

export default defineConfig({
  entry: ENTRIES,
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  splitting: true,
  treeshake: true,
  // Internal property names are shortened with one fixed map for both formats and every
  // entry (scripts/mangle.mjs says which names, and why they are internal).
  esbuildOptions(options) {
    Object.assign(options, mangleOptions());
  },
});
