/**
 * Heap bytes per in-flight call, run in a fresh process with --expose-gc by run.mjs:
 *   node --expose-gc heap-worker.mjs '{"contender":"pool-full","calls":10000}'
 * Starts `calls` calls whose operation never settles until released, and compares
 * `heapUsed` before and after, each read settled (see `settledHeapUsed`). Prints `{ bytesPerCall, parked }`.
 */
import { contenders, pathContenders } from './contenders.mjs';

const args = JSON.parse(process.argv[2]);
const { contender, calls = 10_000 } = args;
if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');

const parked = [];
const op = () => new Promise((resolve) => parked.push(resolve));
const c = await (contenders[contender] ?? pathContenders[contender])(op);

// Warm the code paths (and any lazily built state) with a few calls first.
const warm = [];
for (let i = 0; i < 100; i++) warm.push(c.call());
await new Promise((r) => setImmediate(r));
for (const r of parked.splice(0)) r(42);
await Promise.all(warm);

const tick = () => new Promise((r) => setImmediate(r));

/**
 * `heapUsed` after full collections, the least of three readings a turn of the event loop
 * apart. One reading right after `gc()` sometimes counts about 172 KB of old space that
 * holds no live object (V8's object statistics are the same in such a process; the bytes
 * are gone one turn later): over 10,000 calls that moved the figure by +-17 B, in either
 * direction, from process to process on Node 20 (docs/performance.md, fifth heap round). The extra bytes
 * only ever add, so the least reading is the settled one.
 */
async function settledHeapUsed() {
  let least = Infinity;
  for (let k = 0; k < 3; k++) {
    await tick();
    gc();
    gc();
    least = Math.min(least, process.memoryUsage().heapUsed);
  }
  return least;
}

const promises = new Array(calls);
const before = await settledHeapUsed();
for (let i = 0; i < calls; i++) promises[i] = c.call();
await tick();
const after = await settledHeapUsed();
const inFlight = parked.length;
for (const r of parked.splice(0)) r(42);
await Promise.all(promises);
await c.close();
console.log(JSON.stringify({ ...args, parked: inFlight, bytesPerCall: (after - before) / calls }));
