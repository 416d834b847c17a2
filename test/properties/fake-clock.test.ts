/**
 * `FakeClock` on generated programs, the way a user's own test drives it: timers of every
 * delay (0, fractions, negative, NaN, Infinity, a billion ms), cleared before or after they
 * fire, callbacks that schedule and clear more timers and start an `advance` of their own
 * without awaiting it, two `advance` calls running side by side, `runAll` and
 * `runUntilSettled`.
 *
 * Checked against a model of the timers (due time and creation order): `now()` never goes back,
 * at any reading; timers fire in order of due time, then creation, each once, each with
 * `now()` at its due time; a cleared timer never fires and an infinite one is never pending;
 * after an awaited `advance(ms)` with nothing else running, exactly the timers due by then have
 * fired and `now()` is its target; `pendingTimers` and `nextTimerInMs()` agree with the model
 * after every step; and in the end `runAll` leaves nothing pending.
 *
 * Seeded: `FC_SEED` sets the first seed, `FC_CLOCK_RUNS` the runs (default 400).
 */
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { seeded } from '../helpers/prng.js';

const RUNS = Number(process.env['FC_CLOCK_RUNS'] ?? 400);
const FIRST_SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 2026120639;

type Rnd = () => number;
const pick = <T,>(r: Rnd, a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
const DELAYS = [0, 0, 1, 1, 2, 5, 10, 10, 25, 0.5, 7.25, -3, Number.NaN, Number.POSITIVE_INFINITY, 1e9, 100];
const STEPS = [0, 0, 1, 3, 5, 10, 20, 50, 0.25, 100];

interface Timer {
  readonly id: number;
  readonly due: number;
  handle: unknown;
  fired: boolean;
  cleared: boolean;
}

async function run(seed: number): Promise<string[]> {
  const r = seeded(seed);
  const clock = new FakeClock(pick(r, [0, 1_000_000, -50]));
  const problems: string[] = [];
  const v = (m: string): void => {
    if (problems.length < 10) problems.push(m);
  };
  let lastRead = clock.now();
  const read = (where: string): number => {
    const now = clock.now();
    if (now < lastRead) v(`${where}: now() ${now} after ${lastRead}`);
    lastRead = now;
    return now;
  };
  const timers: Timer[] = [];
  let lastFired: Timer | undefined;
  /** Advances started by callbacks and not awaited: while any runs, the step checks are off. */
  const loose: Promise<void>[] = [];
  let looseRunning = 0;

  const schedule = (ms: number, depth: number): void => {
    const now = read('setTimeout');
    const t: Timer = { id: timers.length, due: Number.isFinite(ms) && ms > 0 ? now + ms : ms === Number.POSITIVE_INFINITY ? Infinity : now, handle: undefined, fired: false, cleared: false };
    timers.push(t);
    t.handle = clock.setTimeout(() => fire(t, depth), ms);
  };
  const fire = (t: Timer, depth: number): void => {
    const now = read(`timer ${t.id}`);
    if (t.fired) v(`timer ${t.id} fired twice`);
    if (t.cleared) v(`timer ${t.id} fired after clearTimeout`);
    if (now !== t.due) v(`timer ${t.id} fired at ${now}, due ${t.due}`);
    if (lastFired !== undefined && (t.due < lastFired.due || (t.due === lastFired.due && t.id < lastFired.id))) v(`timer ${t.id} (due ${t.due}) fired after timer ${lastFired.id} (due ${lastFired.due})`);
    t.fired = true;
    lastFired = t;
    // What a callback does: more timers, a clear, now and then an advance of its own.
    if (depth < 3) {
      const n = Math.floor(r() * 3);
      for (let k = 0; k < n; k++) schedule(pick(r, DELAYS), depth + 1);
    }
    if (r() < 0.2 && timers.length > 0) clear(pick(r, timers));
    if (r() < 0.05) {
      looseRunning++;
      loose.push(clock.advance(pick(r, STEPS)).then(() => {
        looseRunning--;
        read('end of a loose advance');
      }));
    }
  };
  const clear = (t: Timer): void => {
    clock.clearTimeout(t.handle as never);
    if (!t.fired) t.cleared = true;
  };
  const pending = (): Timer[] => timers.filter((t) => !t.fired && !t.cleared && t.due !== Infinity);
  const checkState = (where: string): void => {
    const now = read(where);
    const p = pending();
    if (clock.pendingTimers !== p.length) v(`${where}: pendingTimers ${clock.pendingTimers}, model ${p.length}`);
    const next = p.length === 0 ? undefined : Math.min(...p.map((t) => t.due)) - now;
    if (clock.nextTimerInMs() !== next) v(`${where}: nextTimerInMs ${clock.nextTimerInMs()}, model ${next}`);
  };

  const steps = 3 + Math.floor(r() * 12);
  for (let s = 0; s < steps && problems.length === 0; s++) {
    const op = r();
    if (op < 0.4) {
      const n = 1 + Math.floor(r() * 3);
      for (let k = 0; k < n; k++) schedule(pick(r, DELAYS), 0);
    } else if (op < 0.5 && timers.length > 0) {
      clear(pick(r, timers));
    } else if (op < 0.8) {
      const ms = pick(r, STEPS);
      const target = read('before advance') + ms;
      await clock.advance(ms);
      read('after advance');
      if (looseRunning === 0) {
        if (clock.now() !== Math.max(target, lastRead)) v(`advance(${ms}) ended at ${clock.now()}, target ${target}`);
        for (const t of timers) {
          if (!t.cleared && !t.fired && t.due <= clock.now()) v(`timer ${t.id} due ${t.due} not fired by advance(${ms}) to ${clock.now()}`);
          if (t.fired && t.due > clock.now()) v(`timer ${t.id} due ${t.due} fired by advance(${ms}) to ${clock.now()}`);
        }
      }
    } else if (op < 0.9) {
      // Two advances side by side, as `Promise.all([a(), b()])` over helpers that each move the clock.
      const a = pick(r, STEPS);
      const b = pick(r, STEPS);
      const start = read('before two advances');
      await Promise.all([clock.advance(a).then(() => read('end of the first of two')), clock.advance(b).then(() => read('end of the second of two'))]);
      if (clock.now() < start + Math.max(a, b)) v(`advance(${a}) beside advance(${b}) from ${start} ended at ${clock.now()}`);
    } else if (op < 0.95) {
      await clock.runAll(10_000);
      read('after runAll');
    } else {
      let done = false;
      const ms = pick(r, [1, 5, 30]);
      clock.setTimeout(() => (done = true), ms);
      timers.push({ id: timers.length, due: read('runUntilSettled') + ms, handle: undefined, fired: false, cleared: false });
      const mine = timers[timers.length - 1]!;
      const settle = new Promise<void>((resolve) => {
        const poll = (): void => (done ? resolve() : void Promise.resolve().then(poll));
        poll();
      });
      await clock.runUntilSettled(settle).catch((e: unknown) => v(`runUntilSettled: ${String(e)}`));
      // The model's entry for that timer: fired with it (it has no callback of the model's).
      mine.fired = true;
      if (lastFired === undefined || mine.due > lastFired.due) lastFired = mine;
    }
    if (looseRunning === 0) checkState(`after step ${s}`);
  }
  await Promise.all(loose);
  await clock.runAll(100_000);
  await Promise.all(loose);
  checkState('at the end');
  for (const t of timers) if (!t.cleared && !t.fired && t.due !== Infinity) v(`timer ${t.id} (due ${t.due}) never fired`);
  if (clock.pendingTimers !== 0) v(`${clock.pendingTimers} timer(s) pending after runAll`);
  return problems;
}

describe('FakeClock on generated programs', () => {
  test(`timers, clears, nested and side-by-side advances agree with the model (${RUNS} runs)`, async () => {
    for (let k = 0; k < RUNS; k++) {
      const seed = FIRST_SEED + k;
      const problems = await run(seed);
      expect(problems, `seed ${seed} (replay: FC_SEED=${seed} FC_CLOCK_RUNS=1)`).toEqual([]);
    }
  });
});
