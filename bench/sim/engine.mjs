/**
 * Runs one scenario for a set of contenders at once, on one fresh FakeClock, and returns
 * what each contender's recorder saw.
 *
 * All contenders see the same arrival times (one Poisson process at the scenario's
 * rate), each against its own copies of the endpoints, so their results differ only by
 * what they do. Running them on one clock also lets same-millisecond events of different
 * contenders share one clock tick. After the last arrival the clock runs on until every
 * call has settled, or a drain limit passes, after which a call still open is reported
 * as `unsettled`.
 */
import { FakeClock } from '../../dist/testing/index.js';
import { Rng } from './prng.mjs';
import { Recorder } from './recorder.mjs';
import { Scheduler } from './scheduler.mjs';
import { shiftTimes } from './shift.mjs';

export const BIN_MS = 250;
const DRAIN_MS = 180_000;

/**
 * @param {object} scenario from scenarios.mjs
 * @param {{ name: string, create: Function }[]} contenders
 * @param {{ durationScale?: number }} [o] shortens the run (smoke tests)
 */
export async function simulate(scenario, contenders, o = {}) {
  const durationMs = Math.round(scenario.durationMs * (o.durationScale ?? 1));
  const clock = new FakeClock(0);
  const sched = new Scheduler(clock);
  const root = new Rng(scenario.seed);
  const runs = contenders.map((contender) => {
    const rng = root.fork(contender.name);
    const recorder = new Recorder(BIN_MS, durationMs + DRAIN_MS);
    const upstreams = scenario.endpoints({ sched, rng: rng.fork('upstreams'), recorder, durationMs: scenario.durationMs });
    recorder.setEndpoints(upstreams.map((u) => u.name));
    const c = contender.create({ sched, clock, rng: rng.fork('contender'), upstreams });
    return { contender, recorder, c, open: 0 };
  });
  const load = root.fork('load');
  const rate = typeof scenario.ratePerSec === 'function' ? scenario.ratePerSec(scenario.durationMs) : scenario.ratePerSec;
  const meanGapMs = 1000 / rate;

  const start = (run) => {
    const t0 = sched.now();
    run.open++;
    const settle = (ok) => {
      run.open--;
      run.recorder.call(t0, sched.now() - t0, ok, scenario.deadlineMs);
    };
    run.c.call().then(
      () => settle(true),
      () => settle(false),
    );
  };
  const arrive = () => {
    for (const run of runs) start(run);
    const next = sched.now() + load.exponential(meanGapMs);
    if (next < durationMs) sched.at(next, arrive);
  };
  sched.at(load.exponential(meanGapMs), arrive);

  const wallStart = performance.now();
  await clock.advance(durationMs);
  const anyOpen = () => runs.some((r) => r.open > 0);
  for (let waited = 0; anyOpen() && waited < DRAIN_MS; waited += 1000) await clock.advance(1000);
  const wallMs = performance.now() - wallStart;
  for (const run of runs) await run.c.close?.();

  const results = runs.map((run) => ({
    scenario: scenario.name,
    contender: run.contender.name,
    durationMs,
    offeredPerSec: Math.round(rate * 100) / 100,
    ...run.recorder.summary(),
    unsettled: run.open,
    shift: shiftTimes(run.recorder, scenario, durationMs),
    cooldownAtRecoveryMs: cooldownAtRecovery(run.c.openings, scenario, durationMs),
    series: run.recorder.series(Math.round(5000 / BIN_MS)),
  }));
  const calls = results.reduce((n, r) => n + r.calls, 0);
  return { results, calls, wallMs: Math.round(wallMs), callsPerWallSec: Math.round(calls / (wallMs / 1000)) };
}

/** The breaker cooldown in force on the failing endpoint when its last fault window ended (pool contenders only). */
function cooldownAtRecovery(openings, scenario, durationMs) {
  if (openings === undefined || scenario.faults.length === 0) return undefined;
  const end = Math.min(scenario.faults[scenario.faults.length - 1][1], durationMs);
  let last;
  for (const o of openings) if (o.t <= end && o.endpoint === scenario.faultEndpointName) last = o;
  return last?.cooldownMs ?? null;
}
