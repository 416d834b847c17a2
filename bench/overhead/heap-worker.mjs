/**
 * Heap bytes per in-flight call, run in a fresh process with --expose-gc by run.mjs:
 *   node --expose-gc heap-worker.mjs '{"contender":"pool-full","calls":10000}'
 * Starts `calls` calls whose operation never settles until released, and compares
 * `heapUsed` before and after, each read settled (see `settledHeapUsed`). Prints `{ bytesPerCall, parked }`.
 *
 * What is measured is a warm process: the calls' code optimised, as in a service that has been
 * serving for a while. The worker first runs `warm` rounds of `calls` calls (2 unless given),
 * then measures `rounds` rounds (3) and reports the least (`bytesPerCall`) with each round's
 * figure (`byRound`). Until the eleventh session it warmed up with 100 calls and measured once:
 * that counted code still running unoptimised (on Node 20 one more promise per call, 48 B:
 * optimised code does not make the promise a `then` returns when nothing uses it), the
 * benchmark's own array of parked calls growing (8 B) and code compiled during the run
 * (~10 B), for every contender alike (docs/performance.md, "Heap per call, measured warm").
 * V8 optimises on a background thread, so on a busy machine a round can still run cold
 * code: such a round only adds, hence the least.
 */
import { contenders, pathContenders } from './contenders.mjs';

const args = JSON.parse(process.argv[2]);
const { contender, calls = 10_000, warm = 2, rounds = 3 } = args;
if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');

const parked = [];
const op = () => new Promise((resolve) => parked.push(resolve));
const c = await (contenders[contender] ?? pathContenders[contender])(op);

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

/** One round: `calls` calls parked, the heap read settled before and with them in flight, then all released. */
async function round() {
  const before = await settledHeapUsed();
  for (let i = 0; i < calls; i++) promises[i] = c.call();
  await tick();
  const after = await settledHeapUsed();
  const inFlight = parked.length;
  for (const r of parked.splice(0)) r(42);
  await Promise.all(promises);
  return { inFlight, bytes: (after - before) / calls };
}

for (let w = 0; w < warm; w++) await round();
const byRound = [];
let inFlight = 0;
for (let m = 0; m < rounds; m++) {
  const r = await round();
  byRound.push(Math.round(r.bytes * 10) / 10);
  inFlight = r.inFlight;
}
await c.close();
console.log(JSON.stringify({ ...args, parked: inFlight, bytesPerCall: Math.min(...byRound), byRound }));
