/**
 * Pools built from generated options, the values a user might pass rather than ours: mostly
 * valid, some at the edges of what the checks accept (1e-300 ms, 2^31 ms, 3e9 ms, 1e300 ms,
 * a rate of 1e-300 per second), some wrong (NaN, -0, a string, a bigint, a symbol, `{}`, a
 * function, an unknown key), on every pool option, endpoint option and per-call option.
 *
 * - A wrong value throws `INVALID_OPTIONS` whose `field` names it and starts its message,
 *   from the constructor or from the call; never another class of error, never a hang.
 * - A pool that builds serves generated calls (answers, each error class, classifier hints
 *   with absurd numbers, a classifier that throws or answers garbage, operations that throw,
 *   return a non-promise or never settle; callers aborting before or during the call;
 *   `setEndpoints`, `enableEndpoint` and `report` with good and bad arguments mid-traffic):
 *   every call rejects only with a `PoolError`, settles by its deadline when that is under
 *   10^7 ms (to the millisecond on the fake clock), and at once when its caller aborts.
 * - `close()` resolves once every call has settled and leaves no timer of the pool's.
 *
 * A plain seeded generator (one seed per run, printed on failure). `FC_SEED` sets the
 * first seed, `FC_OPTIONS_RUNS` the runs (default 1,500: under a second), `FC_VERBOSE` prints
 * what the runs reached. A run whose pool was told to retry with sub-millisecond timeouts and
 * backoff until a far deadline stops after 50,000 timers (about 1 run in 30,000).
 */
import { describe, expect, test } from 'vitest';
import { Pool, PoolError, type PoolOptions } from '../../src/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';
import { seeded } from '../helpers/prng.js';

const RUNS = Number(process.env['FC_OPTIONS_RUNS'] ?? 1500);
const FIRST_SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 20261205;
/** Share of option values drawn from the wrong ones. */
const WRONG = 0.03;

type Rnd = () => number;

const CLASSES = ['transient', 'permanent', 'rate-limited', 'retry-narrower', 'unsupported', 'unauthorized'];
const wrongValues = (): unknown[] => [0, -0, -1, Number.NaN, Number.NEGATIVE_INFINITY, 1e-9, 0.5, 2 ** 53, '5', null, true, {}, [], () => 1, 5n, Symbol('s'), Object.create(null)];

/** One run's draws. */
class Draw {
  constructor(readonly rnd: Rnd) {}
  pick<T>(a: readonly T[]): T {
    return a[Math.floor(this.rnd() * a.length)]!;
  }
  chance(p: number): boolean {
    return this.rnd() < p;
  }
  /** A good value, or now and then a wrong one. */
  value(good: readonly unknown[]): unknown {
    return this.chance(WRONG) ? this.pick(wrongValues()) : this.pick(good);
  }
  num = (): unknown => this.value([1, 2, 3, 5, 10, 50, 100, 250, 1000, 5000, 30_000, 0.5, 1.5]);
  int = (): unknown => this.value([1, 2, 3, 5, 10]);
  dur = (): unknown => this.value([1, 5, 10, 50, 100, 500, 1000, 3000, 10_000, 60_000, 2 ** 31, 3e9, 1e-300, 0.001, 1e15, 1e300]);
  durOrInfinity = (): unknown => (this.chance(0.15) ? Number.POSITIVE_INFINITY : this.dur());
  fraction = (): unknown => this.value([0, 0.01, 0.1, 0.5, 0.9, 1]);
  oneOf = (names: readonly string[]) => (): unknown => this.value(names);
  /** An options object with some of `fields` (a wrong value, or now and then an unknown key, instead). */
  object(fields: Record<string, () => unknown>): unknown {
    if (this.chance(WRONG)) return this.pick(wrongValues());
    const o: Record<string, unknown> = {};
    for (const [k, f] of Object.entries(fields)) if (this.chance(0.4)) o[k] = f();
    if (this.chance(WRONG / 2)) o['bogus'] = 1;
    return o;
  }
  some(into: Record<string, unknown>, fields: Record<string, () => unknown>, p: number): void {
    for (const [k, f] of Object.entries(fields)) if (this.chance(p)) into[k] = f();
  }
}

function endpoint(d: Draw, i: number): Record<string, unknown> {
  const e: Record<string, unknown> = { name: d.chance(WRONG / 2) ? d.pick(['', 'e0', 3, undefined]) : `e${i}`, conn: i };
  d.some(e, {
    priority: d.oneOf(['high', 'low']),
    weight: () => d.value([1, 2, 3, 100]),
    maxInFlight: () => d.value([1, 2, 5, Number.POSITIVE_INFINITY]),
    rateLimit: () =>
      d.object({
        perSecond: () => d.value([0.5, 1, 5, 20, 100, 1e6, 0.001, 1e-300]),
        mode: d.oneOf(['bucket', 'paced']),
        burst: () => d.value([1, 2, 10]),
        marginMs: d.dur,
        perDay: () => d.value([1, 5, 100, 1e5]),
        dailyStopFraction: d.fraction,
        adaptive: () => (d.chance(0.5) ? true : d.object({ min: d.num, max: d.num, decrease: d.fraction, windowMs: d.dur, holdMs: d.dur, maxHoldMs: d.dur, doublingMs: d.dur })),
      }),
  }, 0.3);
  return e;
}

function poolOptions(d: Draw, clock: FakeClock): Record<string, unknown> {
  const endpoints = Array.from({ length: 1 + Math.floor(d.rnd() * 4) }, (_, i) => endpoint(d, i));
  const classify = (err: unknown): unknown => {
    const kind = (err as { kind?: unknown } | undefined)?.kind;
    if (kind === 'throw') throw new Error('the classifier broke');
    return kind ?? 'transient';
  };
  const o: Record<string, unknown> = { endpoints, clock, classify };
  d.some(o, {
    strategy: d.oneOf(['ordered', 'round-robin', 'random', 'health', 'latency']),
    maxAttempts: d.int,
    attemptTimeoutMs: d.durOrInfinity,
    deadlineMs: d.durOrInfinity,
    backoff: () => d.object({ initialMs: d.dur, maxMs: d.dur, jitter: d.oneOf(['none', 'full', 'equal', 'decorrelated']) }),
    breaker: () =>
      d.object({ threshold: d.num, cooldownMs: d.dur, maxCooldownMs: d.dur, mode: d.oneOf(['consecutive', 'failure-rate']), failureRate: d.fraction, windowMs: d.dur, minThroughput: d.num, slowCallMs: d.dur, ejectionGrowth: () => d.value([true, false]), jitter: d.fraction }),
    rateLimitCooldownMs: d.dur,
    maxQueueWaitMs: d.durOrInfinity,
    ceilingRecovery: () => d.object({ quietMs: d.dur, stepMs: d.dur, stepFraction: d.fraction }),
    maxConcurrentCalls: () => d.value([1, 2, 5, Number.POSITIVE_INFINITY]),
    permitScope: d.oneOf(['call', 'attempt']),
    breakerMode: d.oneOf(['fail-fast', 'wait']),
    dailyResetUtcHour: () => d.value([0, 5, 23]),
    health: () => d.object({ windowMs: d.dur, longWindowMs: d.dur, maxWaitForHealthyMs: d.dur }),
    retryBudget: () => d.object({ ratio: d.fraction, minPerSecond: d.num, windowMs: d.dur }),
    maxEjectedPercent: () => d.value([0, 10, 50, 100]),
    latency: () => d.object({ decayMs: d.dur, failurePenaltyMs: d.dur, coldStartMs: d.dur }),
    hedge: () => d.object({ afterMs: d.dur, percentile: () => d.value([0.5, 0.9, 0.99, 1e-9]), maxHedges: () => d.value([1, 2, 3]) }),
  }, 0.25);
  if (d.chance(0.2)) o['groups'] = [endpoints.slice(0, 2).map((e) => e['name'])];
  return o;
}

function callOptions(d: Draw, names: readonly unknown[]): unknown {
  if (d.chance(0.3)) return undefined;
  return d.object({
    pin: () => d.value([...names, 'nope']),
    exclude: () => (d.chance(WRONG) ? d.pick(wrongValues()) : [d.pick(names)]),
    deadlineMs: d.durOrInfinity,
    attemptTimeoutMs: d.durOrInfinity,
    retry: () => d.value(['none', 'until-deadline', { maxAttempts: 1 }, { maxAttempts: 5 }, { maxAttempts: 0 }]),
    breakerMode: d.oneOf(['fail-fast', 'wait']),
    backoff: () => d.object({ initialMs: d.dur, maxMs: d.dur }),
    idempotent: () => d.value([true, false]),
    hedge: () => (d.chance(0.5) ? d.value([true, false]) : d.object({ afterMs: d.dur, maxHedges: () => d.value([1, 2]) })),
  });
}

/** Timers the generated operations set on the pool's clock, which close() does not own. */
interface OwnTimers {
  n: number;
}

/** A fake clock that counts the timers it fired. */
class CountingClock extends FakeClock {
  fired = 0;
  override setTimeout(fn: () => void, ms: number, background?: boolean) {
    return super.setTimeout(() => {
      this.fired++;
      fn();
    }, ms, background);
  }
}
/** Timers a run may fire before it stops moving time. */
const TIMER_BUDGET = 50_000;

/** A call's deadline when finite and shorter than 10^7 ms (the checks hold it to it). */
function finiteDeadline(c: CallRecord, o: Record<string, unknown>): number | undefined {
  const d = (c.options as { deadlineMs?: unknown } | undefined)?.deadlineMs ?? o['deadlineMs'] ?? 30_000;
  return typeof d === 'number' && d > 0 && d < 1e7 ? d : undefined;
}

function operation(d: Draw, clock: FakeClock, own: OwnTimers): (conn: unknown) => unknown {
  const kind = d.pick(['ok', 'ok', 'ok', 'fail', 'fail', 'hang', 'slow', 'throw', 'value']);
  const ms = d.pick([0, 1, 10, 100, 1000, 20_000]) * (kind === 'slow' ? 10 : 1);
  const failure = (): Error & { kind?: unknown } => {
    const e: Error & { kind?: unknown } = new Error('generated failure');
    if (d.chance(0.1)) e.kind = d.pick<unknown>(['throw', 'weird', 42, null, { class: 'nope' }]);
    else if (d.chance(0.2)) e.kind = { class: 'rate-limited', retryAfterMs: d.pick([1, 1e9, -1, Number.NaN]), ceilingPerSecond: d.pick([1e12, 0, -5, Number.NaN, 3]) };
    else e.kind = d.pick(CLASSES);
    return e;
  };
  const err = failure();
  return (conn) => {
    if (kind === 'throw') throw err;
    if (kind === 'value') return 42;
    if (kind === 'hang') return new Promise(() => {});
    return new Promise((resolve, reject) => {
      own.n++;
      clock.setTimeout(() => {
        own.n--;
        if (kind === 'fail') reject(err);
        else resolve(conn);
      }, ms);
    });
  };
}

interface CallRecord {
  readonly options: unknown;
  readonly start: number;
  done: boolean;
  at?: number;
  error?: unknown;
  /** When the caller will abort (from the call's start), if it will. */
  abortAt?: number;
  abortedAt?: number;
}

const fieldFirst = (e: PoolError): boolean => typeof e.field === 'string' && e.message.startsWith(`${e.field}:`);

/** One generated pool and its calls; the violations found. */
async function runOne(seed: number, totals: Record<string, number>): Promise<string[]> {
  const d = new Draw(seeded(seed));
  const bad: string[] = [];
  const clock = new CountingClock(1_000_000);
  const start = clock.now();
  const own: OwnTimers = { n: 0 };
  const o = poolOptions(d, clock);
  let pool: Pool<unknown>;
  try {
    pool = new Pool(o as unknown as PoolOptions<unknown>);
  } catch (e) {
    if (!(e instanceof PoolError) || e.code !== 'INVALID_OPTIONS') bad.push(`the constructor threw ${String(e)}`);
    else if (!fieldFirst(e)) bad.push(`INVALID_OPTIONS whose field (${String(e.field)}) does not start its message: ${e.message}`);
    totals['refused'] = (totals['refused'] ?? 0) + 1;
    return bad;
  }
  totals['built'] = (totals['built'] ?? 0) + 1;
  const names = (o['endpoints'] as { name: unknown }[]).map((e) => e.name);
  const guard = (what: string, f: () => void) => () => {
    try {
      f();
    } catch (e) {
      if (!(e instanceof PoolError)) bad.push(`${what} threw ${String(e)}`);
    }
  };
  if (d.chance(0.3)) clock.setTimeout(guard('setEndpoints', () => pool.setEndpoints((d.chance(0.8) ? [endpoint(d, 0), endpoint(d, 5)] : d.pick(wrongValues())) as never)), d.pick([0, 5, 100]));
  if (d.chance(0.2)) clock.setTimeout(guard('enableEndpoint', () => pool.enableEndpoint(d.pick([...names, 'zz', 3]) as string)), 10);
  if (d.chance(0.2)) clock.setTimeout(guard('report', () => pool.report(d.pick([...names, 'zz']) as string, d.pick(['invalid-key', 'x', 3]) as string, d.pick([1, -1, Number.NaN, 1e9]))), 10);

  const calls: CallRecord[] = [];
  const n = 1 + Math.floor(d.rnd() * 6);
  for (let i = 0; i < n; i++) {
    let options = callOptions(d, names);
    let ac: AbortController | undefined;
    if (d.chance(0.25) && (options === undefined || (typeof options === 'object' && options !== null && !Array.isArray(options)))) {
      ac = new AbortController();
      if (d.chance(0.2)) ac.abort(new Error('gave up before calling'));
      options = { ...(options as object | undefined), signal: ac.signal };
    }
    const rec: CallRecord = { options, start: clock.now(), done: false };
    if (ac !== undefined && !ac.signal.aborted && d.chance(0.6)) {
      const controller = ac;
      rec.abortAt = d.pick([0, 1, 50, 5000]);
      clock.setTimeout(() => {
        rec.abortedAt = clock.now();
        controller.abort(new Error('gave up'));
      }, rec.abortAt);
    }
    let p: Promise<unknown>;
    try {
      p = pool.execute(operation(d, clock, own) as never, options as never);
    } catch (e) {
      bad.push(`execute threw synchronously: ${String(e)}`);
      continue;
    }
    p.then(
      () => Object.assign(rec, { done: true, at: clock.now() }),
      (error: unknown) => Object.assign(rec, { done: true, at: clock.now(), error }),
    );
    calls.push(rec);
  }
  // Up to 10 hours of fake time: every finite deadline the checks below read is shorter. A
  // pool told to retry until a far deadline with sub-millisecond timeouts and backoff sets
  // timers ever closer together; the steps shrink with it, and past `TIMER_BUDGET` timers the
  // run stops (counted: such runs must stay rare, and their calls are left to close()).
  const checked = (c: CallRecord) => c.abortedAt !== undefined || c.abortAt !== undefined || finiteDeadline(c, o) !== undefined;
  let step = 60_000;
  while (calls.some((c) => !c.done && checked(c)) && clock.now() - start < 36e6) {
    const before = clock.fired;
    await clock.advance(step);
    if (clock.fired > TIMER_BUDGET) break;
    if (clock.fired - before > 1000) step = Math.max(step / 10, 0.01);
  }
  const spun = clock.fired > TIMER_BUDGET;
  if (spun) totals['spun'] = (totals['spun'] ?? 0) + 1;

  for (const c of calls) {
    const deadline = finiteDeadline(c, o);
    const name = c.done ? (c.error === undefined ? 'ok' : ((c.error as PoolError).code ?? 'other')) : 'pending';
    totals[name] = (totals[name] ?? 0) + 1;
    if (c.error !== undefined && !(c.error instanceof PoolError)) bad.push(`a call rejected with ${String(c.error)}`);
    if (c.error instanceof PoolError && c.error.code === 'INVALID_OPTIONS') {
      if (!fieldFirst(c.error)) bad.push(`a call's INVALID_OPTIONS whose field (${String(c.error.field)}) does not start its message: ${c.error.message}`);
      continue;
    }
    if (spun && !c.done) continue;
    if (c.abortedAt !== undefined && (!c.done || c.at! > c.abortedAt)) bad.push(`a call aborted at ${c.abortedAt} settled at ${c.done ? c.at : 'never'}`);
    if (deadline !== undefined) {
      if (!c.done) bad.push(`a call with a deadline of ${deadline} ms never settled`);
      else if (c.at! - c.start > deadline + 1) bad.push(`a call with a deadline of ${deadline} ms settled after ${c.at! - c.start} ms (${name})`);
    }
  }
  try {
    pool.stats();
    pool.capacity();
  } catch (e) {
    bad.push(`stats() or capacity() threw ${String(e)}`);
  }
  let closed = false;
  void pool.close().then(() => (closed = true));
  await clock.advance(0);
  await clock.advance(100_000);
  const drained = calls.every((c) => c.done);
  if (drained && !closed) bad.push('close() did not resolve with every call settled');
  if (closed && clock.pendingTimers !== own.n) bad.push(`${clock.pendingTimers - own.n} timer(s) of the pool's left after close()`);
  return bad;
}

describe('pools built from generated options (valid, at the edges and wrong)', () => {
  test(`wrong values are refused naming their field; calls settle by their deadline and at an abort; close() leaves no timer (${RUNS} runs)`, async () => {
    const totals: Record<string, number> = {};
    for (let run = 0; run < RUNS; run++) {
      const seed = FIRST_SEED + run;
      const bad = await runOne(seed, totals);
      if (bad.length > 0) expect.fail(`FC_SEED=${seed} FC_OPTIONS_RUNS=1: ${bad.join('; ')}`);
    }
    // The generator reaches what it means to: pools refused and built, calls of each ending
    // (not read when replaying a few runs).
    if (process.env['FC_VERBOSE'] !== undefined) console.log(JSON.stringify(totals));
    if (RUNS < 500) return;
    expect(totals['refused']).toBeGreaterThan(RUNS / 4);
    expect(totals['built']).toBeGreaterThan(RUNS / 5);
    expect(totals['spun'] ?? 0, 'runs stopped by the timer budget').toBeLessThan(Math.max(2, RUNS / 200));
    for (const code of ['ok', 'INVALID_OPTIONS', 'ABORTED', 'DEADLINE_EXCEEDED', 'RETRIES_EXHAUSTED', 'PERMANENT', 'PIN_UNAVAILABLE', 'NO_ENDPOINT']) {
      expect(totals[code] ?? 0, code).toBeGreaterThan(RUNS / 500);
    }
  }, Math.max(120_000, RUNS * 20));
});
