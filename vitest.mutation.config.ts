/**
 * The test set Stryker runs against each mutant (`npm run mutation`): the fake-clock unit
 * tests and the property tests at 25 runs with a fixed seed (so a mutant's verdict is
 * reproducible). Loopback, soak, package and Redis fleet tests are left out: they are slow, need the
 * build, and test the same code through the real clock.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Also left out: the queue-scaling timing test, the tests of the built package (dist/ is not in the sandbox: consumer types, exports, heap per call), the adapters' loopback tests (not the core), the Redis fleet test (it runs dist/) and the house rules (they read the instrumented sources).
    exclude: ['test/faults/**', 'test/soak.test.ts', 'test/package.test.ts', 'test/bundle.test.ts', 'test/consumer-types.test.ts', 'test/exports.test.ts', 'test/heap-in-flight.test.ts', 'test/review/scale.test.ts', 'test/review/adapters.test.ts', 'test/redis/fleet.test.ts', 'test/house/**', 'node_modules/**'],
    testTimeout: 60_000,
    pool: 'forks',
    env: { FC_RUNS: '25', FC_SEED: '20240607', FC_SHRINK: '0' },
  },
});
