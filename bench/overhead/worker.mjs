/**
 * One timing measurement, run in a fresh process by run.mjs:
 *   node worker.mjs '{"contender":"pool-full","op":"value","callers":1,"ms":300}'
 * Warms up, then runs the contender for about `ms` milliseconds of wall time with
 * `callers` concurrent loops, and prints `{ nsPerOp, ops, windowUs }` as one JSON line
 * (`windowUs`: the measured time's start and end on the monotonic clock, for profile.mjs).
 */
import { contenders, operations, pathContenders } from './contenders.mjs';

const args = JSON.parse(process.argv[2]);
const { contender, op: opName, callers = 1, ms = 300, warmupMs = 150 } = args;

const op = operations[opName]();
const c = await (contenders[contender] ?? pathContenders[contender])(op, args);

async function loop(n) {
  for (let i = 0; i < n; i++) await c.call();
}

/** Runs batches of `batch` ops per caller until `budgetMs` passed; returns [ops, elapsedNs]. */
async function runFor(budgetMs, batch) {
  let ops = 0;
  const start = process.hrtime.bigint();
  const budget = BigInt(Math.round(budgetMs * 1e6));
  for (;;) {
    const loops = [];
    for (let k = 0; k < callers; k++) loops.push(loop(batch));
    await Promise.all(loops);
    ops += batch * callers;
    const elapsed = process.hrtime.bigint() - start;
    if (elapsed >= budget) return [ops, Number(elapsed)];
  }
}

const batch = args.batch ?? (callers === 1 ? 2_000 : 100);
await runFor(warmupMs, batch);
// The measured window on the monotonic clock, µs (the clock of a `--cpu-prof` profile's timestamps).
const startUs = Number(process.hrtime.bigint() / 1000n);
const [ops, ns] = await runFor(ms, batch);
await c.close();
console.log(JSON.stringify({ ...args, ops, nsPerOp: ns / ops, windowUs: [startUs, startUs + Math.round(ns / 1000)] }));
