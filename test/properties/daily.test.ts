/**
 * Properties of daily quotas (`rateLimit.perDay`, `dailyStopFraction`, `dailyResetUtcHour`)
 * over days of traffic on the FakeClock, with the wall clock stepping forward and back
 * while monotonic time runs (`FakeClock.stepWall`), and servers saying the day's quota is
 * spent (`dailyQuotaExhausted`). Endpoints alone or two in a group sharing one quota;
 * `setEndpoints` changes the per-second limit, and dissolves or makes the group again.
 *
 * Checked:
 * - in one provider's day a quota never admits more than its stop (`max(1, floor(perDay ×
 *   fraction))`) attempts. A day starts when the wall passes a reset hour going forward (by
 *   running, or by a step); a step back before that reset undoes it (the days since count
 *   as one with the day the wall is back in). Stepping back is never a reset;
 * - the reset is exact: with the wall clock running alone (no step), every quota's
 *   `dailyCount` is 0 and nothing is `parked` at the reset millisecond, and an endpoint
 *   stopped by its count is `parked` the millisecond before; right after a forward step
 *   across a reset, `dailyCount` is 0;
 * - an endpoint whose server said its day is spent gets no attempt until the reset, measured
 *   from that answer on the monotonic clock (docs/quotas.md), whatever group it joins or leaves;
 * - every call settles once with a documented code, never past its deadline + 1 ms, and
 *   leaves no timer once everything settled.
 *
 * Run twice: on the plain fake clock, and with the monotonic readings up to `FC_JITTER_MS`
 * (default 0.4 ms) ahead of the time while the wall clock stays exact.
 *
 * Seeded: `FC_SEED` (with `FC_PATH`) replays a failure, `FC_DAILY_RUNS` sets the runs.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type ClassifyResult, type EndpointConfig, type PoolEvent, type RateLimitOptions } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { checkSeeded, recordSettlement } from './run.js';
import { seeded } from '../helpers/prng.js';
import { TrackedClock } from './sim.js';

const RUNS = Number(process.env['FC_DAILY_RUNS'] ?? 120);
const SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 20261202;
const DAY = 86_400_000;
const HOUR = 3_600_000;
const NAMES = ['a', 'b', 'c'];

/** The first reset strictly after `wall` (the test's own reckoning, not the library's). */
function nextReset(wall: number, hour: number): number {
  const d = new Date(wall);
  let r = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), hour);
  while (r <= wall) r += DAY;
  while (r - DAY > wall) r -= DAY;
  return r;
}

type Answer = { k: 'ok'; d: number } | { k: 'spent'; d: number } | { k: 'fail'; d: number };

interface Ep {
  readonly perDay: number;
  readonly fraction: number;
  readonly perSecond: number | undefined;
  readonly low: boolean;
  readonly script: readonly Answer[];
}

interface Scenario {
  /** Where in the day (UTC) the run starts. */
  readonly startOffset: number;
  readonly resetHour: number;
  readonly eps: readonly Ep[];
  /** The first two endpoints share one quota. */
  readonly group: boolean;
  readonly calls: readonly { readonly at: number; readonly deadlineMs: number | undefined; readonly retry: boolean }[];
  readonly steps: readonly { readonly at: number; readonly by: number }[];
  readonly spanDays: number;
  /** `setEndpoints` with another per-second limit for every endpoint (same daily quota): each gets a new quota. */
  readonly relimits: readonly { readonly at: number; readonly perSecond: number }[];
  /** With `group`: `setEndpoints` dissolving the group, or making it again (new quotas that carry the day). */
  readonly regroups: readonly number[];
}

const answer: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ k: fc.constant('ok' as const), d: fc.integer({ min: 0, max: 50 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('spent' as const), d: fc.integer({ min: 0, max: 50 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('fail' as const), d: fc.integer({ min: 0, max: 50 }) }) },
);

const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({
    startOffset: fc.integer({ min: 0, max: DAY - 1 }),
    resetHour: fc.integer({ min: 0, max: 23 }),
    eps: fc.array(
      fc.record({
        perDay: fc.integer({ min: 1, max: 12 }),
        fraction: fc.constantFrom(1, 0.95, 0.5),
        perSecond: fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 5 })),
        low: fc.boolean(),
        script: fc.array(answer, { minLength: 1, maxLength: 6 }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    group: fc.boolean(),
    spanDays: fc.integer({ min: 1, max: 3 }),
    steps: fc.array(
      fc.record({
        at: fc.integer({ min: 0, max: 3 * DAY }),
        by: fc.oneof(
          fc.integer({ min: -30 * HOUR, max: 30 * HOUR }),
          fc.integer({ min: -120_000, max: 120_000 }),
          fc.constantFrom(-DAY, DAY, HOUR, -HOUR),
        ),
      }),
      { maxLength: 3 },
    ),
    forwardOnly: fc.boolean(),
    relimits: fc.array(fc.record({ at: fc.integer({ min: 0, max: 3 * DAY }), perSecond: fc.integer({ min: 1, max: 6 }) }), { maxLength: 2 }),
    regroups: fc.array(fc.integer({ min: 0, max: 3 * DAY }), { maxLength: 3 }),
    noSteps: fc.boolean(),
  })
  .chain((s) =>
    fc
      .array(
        fc.record({
          // Bunched near the start of each hour, so quotas fill and resets are crossed with calls waiting.
          at: fc.oneof(fc.integer({ min: 0, max: s.spanDays * DAY }), fc.integer({ min: 0, max: s.spanDays * 24 }).chain((h) => fc.integer({ min: h * HOUR - 2000, max: h * HOUR + 2000 }))),
          deadlineMs: fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 20 * 60_000 }), fc.constant(2 * DAY)),
          retry: fc.boolean(),
        }),
        { minLength: 5, maxLength: 60 },
      )
      .map((calls) => ({
        startOffset: s.startOffset,
        resetHour: s.resetHour,
        eps: s.eps,
        group: s.group && s.eps.length >= 2,
        calls: calls.map((c) => ({ ...c, at: Math.max(0, c.at) })),
        steps: s.noSteps ? [] : s.forwardOnly ? s.steps.map((x) => ({ ...x, by: Math.abs(x.by) })) : s.steps,
        spanDays: s.spanDays,
        relimits: s.relimits,
        regroups: s.group && s.eps.length >= 2 ? s.regroups : [],
      })),
  );

class Spent extends Error {
  constructor(readonly verdict: ClassifyResult) {
    super('scripted');
  }
}

const CODES = new Set(['RETRIES_EXHAUSTED', 'DEADLINE_EXCEEDED', 'NO_ENDPOINT', 'RATE_LIMITED', 'CLOSED']);

async function run(sc: Scenario, jitterMs = 0): Promise<{ violations: string[]; endings: Record<string, number>; attempts: number; capped: number }> {
  const T0 = Date.UTC(2026, 11, 1) + sc.startOffset;
  const fake = new FakeClock(T0);
  // With `jitterMs`, the monotonic readings run up to that much ahead of the time (the wall
  // clock stays exact): a decision on one reading is acted on at a later one.
  const base = new TrackedClock(fake, jitterMs, seeded(sc.startOffset));
  const clock = Object.assign(base, { wallNow: () => fake.wallNow() });
  const violations: string[] = [];
  const v = (m: string): void => {
    if (violations.length < 20) violations.push(`[t=${fake.now() - T0} wall=${new Date(fake.wallNow()).toISOString()}] ${m}`);
  };
  const n = sc.eps.length;
  const names = NAMES.slice(0, n);
  /** Whether a and b share one quota now (regroups toggle it). */
  let grouped = sc.group;
  /** Which quota each endpoint counts against (b has a's limits in a group scenario, grouped or not). */
  const quotaOf = (i: number): number => (grouped && i === 1 ? 0 : i);
  const limitsOf = (i: number): number => (sc.group && i === 1 ? 0 : i);
  const stopOf = (q: number): number => Math.max(1, Math.floor(sc.eps[limitsOf(q)]!.perDay * sc.eps[limitsOf(q)]!.fraction));
  const cursors = names.map(() => 0);
  const configs: EndpointConfig<number>[] = sc.eps.map((e, i) => {
    const src = sc.eps[limitsOf(i)]!;
    const rl: RateLimitOptions = { perDay: src.perDay, dailyStopFraction: src.fraction, ...(src.perSecond === undefined ? {} : { perSecond: src.perSecond }) };
    return { name: names[i]!, conn: i, priority: e.low ? 'low' : 'high', rateLimit: rl };
  });
  // The days as the provider sees them: a new one at each reset crossed going forward; a
  // step back before a day's start undoes that reset (the provider never saw it), so its
  // attempts count with the day before. Each day: the wall time it started at, count per quota.
  const period = (wall: number): number => Math.floor((wall - sc.resetHour * HOUR) / DAY);
  const days: { start: number; counts: number[] }[] = [{ start: Number.NEGATIVE_INFINITY, counts: names.map(() => 0) }];
  let sinceReset = days[0]!.counts;
  let lastWall = fake.wallNow();
  const crossed = (): void => {
    const w = fake.wallNow();
    // A step forward over several resets starts a day at each of them: a step back to one of
    // them (seed 20261202, run 1267: over two, then back to the first) undoes only the later ones.
    if (w > lastWall) for (let p = period(lastWall) + 1; p <= period(w); p++) days.push({ start: p * DAY + sc.resetHour * HOUR, counts: names.map(() => 0) });
    while (w < lastWall && days.length > 1 && days[days.length - 1]!.start > w) {
      const undone = days.pop()!;
      const into = days[days.length - 1]!;
      undone.counts.forEach((c, q) => (into.counts[q]! += c));
    }
    sinceReset = days[days.length - 1]!.counts;
    lastWall = w;
  };
  /** Per endpoint: no attempt before this monotonic time (the server said its day is spent). */
  const spentUntil = names.map(() => 0);
  let attempts = 0;
  let capped = 0;
  const calls: { id: number; startedAt: number; deadline: number; settled: number; settledAt?: number; error?: unknown }[] = [];
  const onEvent = (e: PoolEvent): void => {
    // The pool heard the server say the day is spent (a late answer of a cancelled attempt is not heard).
    if (e.type === 'attempt-failure' && e.error instanceof Spent && typeof e.error.verdict === 'object') {
      const w = fake.wallNow();
      const i = names.indexOf(e.endpoint);
      spentUntil[i] = Math.max(spentUntil[i]!, fake.now() + (nextReset(w, sc.resetHour) - w));
    }
    if (e.type !== 'attempt-start') return;
    crossed();
    attempts++;
    const i = names.indexOf(e.endpoint);
    const q = quotaOf(i);
    sinceReset[q]!++;
    if (sinceReset[q]! > stopOf(q)) v(`quota of ${names[q]}: ${sinceReset[q]} attempts in the provider's day, stop at ${stopOf(q)}`);
    if (sinceReset[q] === stopOf(q)) capped++;
    if (fake.now() + jitterMs < spentUntil[i]!) v(`${e.endpoint}: attempt ${spentUntil[i]! - fake.now()} ms before the reset its server announced`);
  };
  const pool = new Pool<number>({
    endpoints: configs,
    ...(sc.group ? { groups: [[names[0]!, names[1]!]] } : {}),
    classify: (err) => (err instanceof Spent ? err.verdict : 'permanent'),
    dailyResetUtcHour: sc.resetHour,
    attemptTimeoutMs: 1000,
    deadlineMs: 60_000,
    maxAttempts: 3,
    breaker: { threshold: 1000 },
    clock,
    // Its own draws (backoff jitter), so that a counterexample replays.
    random: seeded(104_729),
    onEvent,
  });
  const op = (i: number): Promise<unknown> => {
    const a = sc.eps[i]!.script[cursors[i]!++ % sc.eps[i]!.script.length]!;
    return new Promise((resolve, reject) => {
      const go = (): void => {
        if (a.k === 'ok') resolve(i);
        else if (a.k === 'fail') reject(new Spent('transient'));
        else reject(new Spent({ class: 'rate-limited', dailyQuotaExhausted: true }));
      };
      if (a.d === 0) go();
      else fake.setTimeout(go, a.d);
    });
  };
  const promises: Promise<void>[] = [];
  // Samples at each reset the wall clock reaches by running (scheduled first: they run before calls due the same ms).
  const steps = [...sc.steps].sort((x, y) => x.at - y.at);
  const horizon = sc.spanDays * DAY + 2 * DAY;
  if (steps.length === 0) {
    for (let r = nextReset(T0, sc.resetHour); r - T0 < horizon; r += DAY) {
      fake.setTimeout(() => {
        crossed();
        for (const st of pool.stats()) {
          const stopped = (st.dailyCount ?? 0) >= stopOf(quotaOf(names.indexOf(st.name)));
          if (stopped && st.status !== 'parked' && st.status !== 'disabled') v(`${st.name}: dailyCount ${st.dailyCount} reached its stop, status ${st.status} just before the reset`);
        }
      }, r - 1 - T0);
      fake.setTimeout(() => {
        crossed();
        for (const st of pool.stats()) {
          if (st.dailyCount !== 0) v(`${st.name}: dailyCount ${st.dailyCount} at the reset`);
          // Parked until a monotonic time read up to `jitterMs` ahead of the wall's reset.
          if (st.status === 'parked' && !(st.parkedUntilMs !== undefined && st.parkedUntilMs - base.stamp() <= jitterMs)) v(`${st.name}: still parked at the reset (until ${st.parkedUntilMs === undefined ? '-' : st.parkedUntilMs - fake.now()} ms more)`);
        }
      }, r - T0);
    }
  }
  for (const s of steps) {
    fake.setTimeout(() => {
      crossed();
      const before = fake.wallNow();
      fake.stepWall(s.by);
      const after = fake.wallNow();
      // A read of the counters after every step (a counter sees the wall only when it is read).
      pool.stats();
      crossed();
      if (after > before && period(after) > period(before)) {
        for (const st of pool.stats()) if (st.dailyCount !== 0) v(`${st.name}: dailyCount ${st.dailyCount} right after the wall stepped ${s.by} ms across a reset`);
      }
    }, s.at);
  }
  let configsNow = configs;
  for (const r of sc.relimits) {
    fake.setTimeout(() => {
      crossed();
      configsNow = configs.map((c) => ({ ...c, rateLimit: { ...c.rateLimit!, perSecond: r.perSecond } }));
      pool.setEndpoints(configsNow);
    }, r.at);
  }
  for (const at of sc.regroups) {
    fake.setTimeout(() => {
      crossed();
      grouped = !grouped;
      // A new group has spent what its members spent; a member leaving it, what the group spent (docs/calls.md).
      for (const d of days) {
        if (grouped) d.counts[0]! += d.counts[1]!;
        else d.counts[1] = d.counts[0]!;
      }
      pool.setEndpoints(configsNow, grouped ? [[names[0]!, names[1]!]] : []);
    }, at);
  }
  let seq = 0;
  for (const c of [...sc.calls].sort((x, y) => x.at - y.at)) {
    fake.setTimeout(() => {
      crossed();
      const rec: (typeof calls)[number] = { id: ++seq, startedAt: fake.now(), deadline: c.deadlineMs ?? 60_000, settled: 0 };
      calls.push(rec);
      const p = pool.execute((i) => op(i), { ...(c.deadlineMs === undefined ? {} : { deadlineMs: c.deadlineMs }), ...(c.retry ? { retry: 'until-deadline' as const } : {}) });
      promises.push(recordSettlement(p, rec, () => fake.now()));
    }, c.at);
  }
  // Run in hour steps, noting every crossing on the way (a wall that runs passes each reset).
  for (let t = 0; t < horizon + 2 * DAY; t += HOUR / 4) {
    await fake.advance(HOUR / 4);
    crossed();
  }
  const endings: Record<string, number> = {};
  for (const r of calls) {
    const code = r.settled === 0 ? 'unsettled' : r.error === undefined ? 'ok' : isPoolError(r.error) ? r.error.code : 'other';
    endings[code] = (endings[code] ?? 0) + 1;
    if (r.settled === 0) v(`call ${r.id} never settled`);
    else if (r.settled > 1) v(`call ${r.id} settled ${r.settled} times`);
    else {
      if (r.error !== undefined && !(isPoolError(r.error) && CODES.has(r.error.code))) v(`call ${r.id}: ${String(r.error)}`);
      if (r.settledAt! - r.startedAt > r.deadline + 1 + jitterMs) v(`call ${r.id} settled ${r.settledAt! - r.startedAt} ms after it started, deadline ${r.deadline}`);
    }
  }
  if (pool.activeCalls !== 0) v(`${pool.activeCalls} call(s) still active`);
  if (base.owned !== 0) v(`the pool owns ${base.owned} timer(s) once every call settled`);
  await pool.close();
  if (base.live.size !== 0) v(`${base.live.size} timer(s) left after close()`);
  if (base.badDelays.length !== 0) v(`timers asked for bad delays ${JSON.stringify(base.badDelays.slice(0, 5))}`);
  return { violations, endings, attempts, capped };
}

describe('daily quotas across resets and wall-clock steps', () => {
  test(`never over the stop between resets; resets exactly at the hour (${RUNS} runs)`, async () => {
    const endings: Record<string, number> = {};
    let capped = 0;
    await checkSeeded('daily', scenarioArb, run, {
      seed: SEED,
      runs: RUNS,
      seen: (o) => {
    capped += o.capped;
    for (const [k, x] of Object.entries(o.endings)) endings[k] = (endings[k] ?? 0) + x;
      },
    });
    console.log('daily endings', JSON.stringify(endings), 'quotas filled', capped);
    expect(capped).toBeGreaterThan(RUNS / 2);
    expect(endings['NO_ENDPOINT'] ?? 0).toBeGreaterThan(0);
  }, 120_000);

  // The same on a monotonic clock read up to FC_JITTER_MS (default 0.4 ms) ahead of the time,
  // the wall clock exact: the reset-hour checks allow the pool's parking, measured on the
  // monotonic clock, to end up to that much after the wall's reset.
  const jitterMs = Number(process.env['FC_JITTER_MS'] ?? 0.4);
  test(`the same with monotonic readings up to ${jitterMs} ms ahead (${RUNS} runs)`, async () => {
    let capped = 0;
    await checkSeeded('daily-jittered', scenarioArb, (sc) => run(sc, jitterMs), { seed: SEED + 1, offset: 1, runs: RUNS, seen: (o) => (capped += o.capped) });
    expect(capped).toBeGreaterThan(RUNS / 2);
  }, 120_000);
});
