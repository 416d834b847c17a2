/**
 * One timing measurement, run in a fresh process by run.mjs:
 *   node worker.mjs '{"contender":"pool-full","op":"value","callers":1,"ms":300}'
 * Warms up, then runs the contender for about `ms` milliseconds of wall time with
 * `callers` concurrent loops, and prints `{ nsPerOp, ops }` as one JSON line.
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
const [ops, ns] = await runFor(ms, batch);
await c.close();
console.log(JSON.stringify({ ...args, ops, nsPerOp: ns / ops }));
