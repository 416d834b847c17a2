/**
 * Heap per call in flight (issue 16), measured on the built `dist/` as the benchmark does
 * (`bench/overhead/heap-worker.mjs`: 10,000 calls parked in their operation, `heapUsed`
 * after two full GCs, in a fresh process with `--expose-gc`). The figures are V8's object
 * sizes, so they move by a few bytes between Node versions, not with machine load.
 *
 * Budgets, with the inventory behind them (Node 20, 64-bit, no pointer compression):
 * - `pool-full` (every core option on) measured 1,285 B before issue 16's work, about
 *   1,025 B after its first round and about 860 B after the second (branch perf2): the call
 *   (136 B: flags and attempt count in one field, the rarely used lists in the lazy
 *   history, no class brand from \`Waiting\`), its attempt (120 B), the two bound handlers (96 B), the call's
 *   promise with only its `resolve` kept (~160 B), the `then` on the operation's promise
 *   (~96 B), two boxed clock readings (32 B), plus the benchmark's own wrapper and pending
 *   operation (~230 B);
 * - `viem-pool` (poolTransport at its defaults over viem `custom`) measured 5,009 B before,
 *   about 3,640 B after the first round and about 3,150 B after the second (a plain request
 *   rides on its call as a tag: no closure and no `then` of its own); viem `custom` alone is
 *   about 2,500 B, most of it viem's own request wrapper around each endpoint transport.
 * Raise a budget on purpose, never to make a red build green.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const WORKER = join(root, 'bench/overhead/heap-worker.mjs');

function bytesPerCall(contender: string): number {
  const out = execFileSync(process.execPath, ['--expose-gc', WORKER, JSON.stringify({ contender, calls: 10_000 })], { encoding: 'utf8', timeout: 60_000 });
  return (JSON.parse(out.trim().split('\n').pop()!) as { bytesPerCall: number }).bytesPerCall;
}

describe('heap per call in flight', () => {
  test.each([
    ['pool-full', 920],
    ['viem-pool', 3_300],
  ])('%s stays within %i B', (contender, budget) => {
    expect(bytesPerCall(contender)).toBeLessThanOrEqual(budget);
  }, 60_000);
});
