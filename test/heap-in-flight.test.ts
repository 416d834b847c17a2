/**
 * Heap per call in flight (issue 16), measured on the built `dist/` as the benchmark does
 * (`bench/overhead/heap-worker.mjs`: 10,000 calls parked in their operation, `heapUsed`
 * after full GCs, read settled, in a fresh process with `--expose-gc`, warm: two rounds of
 * 10,000 calls before the three measured, the least of those reported). The figures are V8's object
 * sizes, so they move by a few bytes between Node versions, not with machine load.
 *
 * Budgets, with the inventory behind them (Node 20, 64-bit, no pointer compression):
 * - `pool-full` (every core option on) measured 1,285 B before issue 16's work, about
 *   1,025 B after its first round, about 870 B after the second (branch perf2), about
 *   806 B after the third (branch heap), about 708 B after the fourth (branch heap4) and
 *   about 699 B after the fifth (branch heap5; read settled, see the worker):
 *   the call, which is its own first attempt (96 B: its flags, current wait and the
 *   attempt's flags share one field, its operation and its lazily made slots (history, wait
 *   slots) share one field, it reaches its pool through its plan, its endpoint and breaker
 *   and credential tickets are one object the endpoint shares, no call number unless
 *   someone listens, the due time derived), one boxed clock reading (16 B: the deadline and
 *   the attempt's start are read through it), the two bound handlers (96 B), the `then`
 *   reaction and derived promise (96 B), the call's promise with its `resolve` and their
 *   context (160 B), plus the benchmark's own wrapper and pending operation (~232 B) and
 *   code compiled during the run (~10 B). Measured warm (eleventh session: the worker warms up
 *   with as many calls as it measures), the same build reads about 640 B: the derived promise
 *   of the `then` (48 B) is not made by optimised code, whose result nobody uses, and the
 *   benchmark's array of parked calls and the code compiled are no longer counted;
 * - `viem-pool` (poolTransport at its defaults over viem `custom`) measured 5,009 B before,
 *   about 3,640 B after the first round, about 3,150 B after the second (a plain request
 *   rides on its call as a tag: no closure and no `then` of its own), about 3,090 B after
 *   the third, about 2,995 B after the fourth and about 2,994 B after the fifth; viem
 *   `custom` alone is about 2,500 B, most of it viem's own request wrapper around each
 *   endpoint transport. What the pool adds per request is the core's objects above.
 *   Since the tenth session (branch viem6) the defaults skip that wrapper too, once viem's
 *   `custom` has been loaded at run time (src/viem/autoload.ts): about 1,000 B, as
 *   `viem-pool-direct`; the benchmark's warm-up calls let the load finish.
 *   Measured warm (eleventh session): about 928 B.
 * - `viem-pool-direct` (poolTransport with viem's `custom` handed in, over two providers:
 *   no viem wrapper per endpoint, src/viem/direct.ts) measured 996-1,034 B when it came
 *   (ninth session), 986 B after the fifth heap round: the core's objects, the provider's
 *   promise, and one `then` with its closure that sends a failure through viem's error mapping;
 *   measured warm (eleventh session), about 926 B.
 * Raise a budget on purpose, never to make a red build green.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const WORKER = join(root, 'bench/overhead/heap-worker.mjs');

/**
 * One process's figure. It used to be the least of two processes: what is left on the heap
 * besides the parked calls (code compiled late, feedback, a collection that ran at another
 * moment) only adds, and moved one process's figure by up to 30 B (801-831 B for the same
 * build) in a full test run. Since the worker reads the heap settled (issue 16's fifth round:
 * the least of three readings a turn of the event loop apart) and warm (the least of three
 * rounds after two rounds of warm-up), processes of one build agree within about 2 B (four
 * processes each at load 8: 638.5-640, 926.3-928.5 and 926.8-928.7 B; bench/notes/leftovers.md),
 * well inside the budgets' margins: the second process only doubled the file's time.
 */
function bytesPerCall(contender: string): number {
  const out = execFileSync(process.execPath, ['--expose-gc', WORKER, JSON.stringify({ contender, calls: 10_000 })], { encoding: 'utf8', timeout: 60_000 });
  return (JSON.parse(out.trim().split('\n').pop()!) as { bytesPerCall: number }).bytesPerCall;
}

describe('heap per call in flight', () => {
  test.each([
    ['pool-full', 652],
    ['viem-pool', 945],
    ['viem-pool-direct', 945],
  ])('%s stays within %i B', (contender, budget) => {
    expect(bytesPerCall(contender)).toBeLessThanOrEqual(budget);
  }, 60_000);
});
