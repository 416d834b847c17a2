// @ts-check
/**
 * Mutation testing of the core modules (`npm run mutation`; not part of `npm test`).
 * Uses the vitest runner with `vitest.mutation.config.ts` (unit + seeded property tests).
 * Stryker lives in this folder's own package.json, installed on demand by `npm run mutation`;
 * it runs from the repository root, so the paths below are relative to the root.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  // Issue 15's groups: the breaker, the selectors, the limiters, backoff and the call loop. On a
  // shared 2-core machine run one group at a time: `--mutate <files> --ignoreStatic --testFiles <subset>`
  // (docs/guarantees.md#mutation-testing lists the subsets used).
  mutate: ['src/health/breaker.ts', 'src/selection/*.ts', 'src/limits/*.ts', 'src/call/backoff.ts', 'src/call/call.ts', 'src/call/attempt.ts', 'src/call/outcome.ts', 'src/call/plan.ts'],
  checkers: [],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 20_000,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  thresholds: { high: 90, low: 85, break: 85 },
  ignorePatterns: ['dist', 'reports', 'coverage', '.stryker-tmp', 'tools'],
  // Re-runs only mutants whose code or covering tests changed since the last run.
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
};
