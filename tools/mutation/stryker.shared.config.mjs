// @ts-check
/**
 * `stryker.config.mjs` with the vitest module isolation off (see vitest.shared.config.ts), for
 * runs narrowed with `--ignoreStatic --testFiles`: per mutant, the covering test files no longer
 * import the core once each.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
import base from './stryker.config.mjs';

export default {
  ...base,
  vitest: { ...base.vitest, configFile: 'tools/mutation/vitest.shared.config.ts' },
  // The sandbox leaves tools/ out; this config file must be in it.
  ignorePatterns: [...(base.ignorePatterns ?? []), '!tools/mutation/vitest.shared.config.ts'],
};
