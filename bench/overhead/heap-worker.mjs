/**
 * Heap bytes per in-flight call, run in a fresh process with --expose-gc by run.mjs:
 *   node --expose-gc heap-worker.mjs '{"contender":"pool-full","calls":10000}'
 * Starts `calls` calls whose operation never settles until released, and compares
 * `heapUsed` (after a full GC) before and after. Prints `{ bytesPerCall, parked }`.
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
const promises = new Array(calls);
await tick();
gc();
gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < calls; i++) promises[i] = c.call();
await tick();
await tick();
gc();
gc();
const after = process.memoryUsage().heapUsed;
const inFlight = parked.length;
for (const r of parked.splice(0)) r(42);
await Promise.all(promises);
await c.close();
console.log(JSON.stringify({ ...args, parked: inFlight, bytesPerCall: (after - before) / calls }));
