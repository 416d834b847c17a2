/**
 * The files of the suite that meet what differs between runtimes (their fetch, its errors and
 * retries, WebSocket, timers, AbortSignal, promise bookkeeping), run by `.ci/run` on Bun, on
 * Deno and on Node 24, the LTS between the two Nodes the whole suite runs on (`npm run
 * test:runtimes` runs them on the Node at hand). The whole suite runs there too,
 * by hand (`deno run -A node_modules/vitest/vitest.mjs run`, `bun --bun …`): it found the defects
 * these files now hold (Deno's words for a refused connection and a reset body, its quadratic
 * mass rejection), and otherwise fails only where a test reads Node itself (undici's dispatcher,
 * V8's natives and GC, listener introspection, `node` command lines, ganache on Deno).
 */
import { defineConfig } from 'vitest/config';

/** Node's own files: undici's dispatcher and a Request's signal after a forced GC (Node 24 broke the first: `.ci/run`). */
const onNode = !('Bun' in globalThis) && !('Deno' in globalThis);
const nodeOnly = onNode ? ['test/fetch-dispatcher.test.ts', 'test/fetch-request-signal.test.ts'] : [];

export default defineConfig({
  test: {
    include: [
      ...nodeOnly,
      'test/fetch-dispatcher-undici7.test.ts',
      'test/fetch-cost.test.ts',
      'test/signals.test.ts',
      'test/fetch.test.ts',
      'test/fetch-replay.test.ts',
      'test/fetch-token.test.ts',
      'test/viem.test.ts',
      'test/viem-direct.test.ts',
      'test/ethers-classify.test.ts',
      'test/cancellation.test.ts',
      'test/timeouts.test.ts',
      'test/liveness.test.ts',
      'test/mass-failure.test.ts',
      'test/review/scale.test.ts',
      'test/faults/loopback.test.ts',
      'test/faults/generated.test.ts',
      'test/faults/fuzz4.test.ts',
    ],
    testTimeout: 20_000,
    pool: 'forks',
  },
});
