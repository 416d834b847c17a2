/**
 * A scenario simulator for property tests: a random pool configuration, random scripted
 * endpoints, random call arrivals and caller aborts, all on the FakeClock, with every
 * invariant of the pool checked while the run goes (from the event stream) and after it
 * (from the logs and the clock).
 *
 * `simulate()` never throws on a broken invariant: it collects human-readable violations,
 * so a failing property reports every broken rule of the shrunk counterexample at once.
 */
import fc from 'fast-check';
import {
  Pool,
  isPoolError,
  type AttemptContext,
  type BreakerMode,
  type ClassifyResult,
  type Clock,
  type ErrorClass,
  type PoolEvent,
  type RetryMode,
  type TimerHandle,
} from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';

// ---------------------------------------------------------------------------------------
// Scenario shape

export type Beh =
  | { readonly k: 'ok'; readonly d: number; readonly honour: boolean }
  | { readonly k: 'fail'; readonly cls: ErrorClass; readonly d: number; readonly retryAfterMs?: number; readonly honour: boolean }
  | { readonly k: 'hang'; readonly honour: boolean }
  /** The operation throws synchronously (the pool treats it as permanent). */
  | { readonly k: 'throw' }
  /** The operation returns something that is not a promise (also permanent). */
  | { readonly k: 'value' };

export interface EndpointGen {
  readonly priority: 'high' | 'low';
  readonly weight: number;
  readonly rate: { readonly perSecond: number; readonly burst: number | undefined } | undefined;
  readonly maxInFlight: number | undefined;
  readonly script: readonly Beh[];
}

export interface CallGen {
  readonly at: number;
  /** Caller abort, ms after the call starts. */
  readonly abortAfter: number | undefined;
  /** No options at all (the allocation-free path); only generated when the pool deadline is finite. */
  readonly plain: boolean;
  readonly retry: RetryMode | undefined;
  readonly breakerMode: BreakerMode | undefined;
  readonly deadlineMs: number | undefined;
  readonly attemptTimeoutMs: number | undefined;
  readonly pin: number | undefined;
  readonly exclude: readonly number[] | undefined;
  /** Endpoints the call uses only when no other can serve it now (`avoid`). */
  readonly avoid: readonly number[] | undefined;
}

export interface Scenario {
  readonly endpoints: readonly EndpointGen[];
  readonly strategy: 'ordered' | 'round-robin';
  readonly maxAttempts: number;
  readonly attemptTimeoutMs: number;
  readonly deadlineMs: number;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number; readonly jitter: 'none' | 'full' | 'equal' | 'decorrelated' };
  readonly breaker: { readonly threshold: number; readonly cooldownMs: number; readonly maxCooldownMs: number };
  readonly rateLimitCooldownMs: number;
  readonly maxConcurrentCalls: number | undefined;
  readonly permitScope: 'call' | 'attempt';
  readonly breakerMode: BreakerMode;
  readonly calls: readonly CallGen[];
  /** How the run ends: let it drain, or `close()` the pool at `closeAt`. */
  readonly closeAt: number | undefined;
  /** What that `close()` is given as `abortAfterMs` (undefined: nothing). */
  readonly closeAbortMs?: number | undefined;
  /** Time simulated after the last arrival before every remaining call is aborted. */
  readonly tailMs: number;
  readonly seed: number;
}

/** Names that would break a pool keyed by plain objects. */
export const NAMES = ['a', '__proto__', 'constructor', 'hasOwnProperty', 'toString'] as const;

// ---------------------------------------------------------------------------------------
// Arbitraries

export interface Bias {
  /** Relative weight of each behaviour kind. */
  readonly ok?: number;
  readonly transient?: number;
  readonly permanent?: number;
  readonly rateLimited?: number;
  readonly narrower?: number;
  readonly unsupported?: number;
  readonly hang?: number;
  readonly sync?: number;
  /** Probability that an endpoint has a rate limit / an in-flight limit. */
  readonly rateLimit?: number;
  readonly maxInFlight?: number;
  readonly maxCalls?: number;
  /** Probability that a caller aborts its call / that the run ends with `close()`. */
  readonly abort?: number;
  readonly close?: number;
}

const INF = Number.POSITIVE_INFINITY;

/** `arb` with probability `p`, else undefined. */
function maybe<T>(arb: fc.Arbitrary<T>, p: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: Math.round(p * 100), arbitrary: arb }, { weight: Math.round((1 - p) * 100), arbitrary: fc.constant(undefined) });
}

function behaviour(b: Bias): fc.Arbitrary<Beh> {
  const d = fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 5, arbitrary: fc.integer({ min: 1, max: 300 }) });
  const honour = fc.boolean();
  const failWith = (cls: ErrorClass) =>
    fc.record({ k: fc.constant('fail' as const), cls: fc.constant(cls), d, honour }) as fc.Arbitrary<Beh>;
  return fc.oneof(
    { weight: b.ok ?? 6, arbitrary: fc.record({ k: fc.constant('ok' as const), d, honour }) },
    { weight: b.transient ?? 4, arbitrary: failWith('transient') },
    { weight: b.permanent ?? 1, arbitrary: failWith('permanent') },
    {
      weight: b.rateLimited ?? 2,
      arbitrary: fc.record(
        { k: fc.constant('fail' as const), cls: fc.constant('rate-limited' as const), d, honour, retryAfterMs: fc.integer({ min: 0, max: 3000 }) },
        { requiredKeys: ['k', 'cls', 'd', 'honour'] },
      ),
    },
    { weight: b.narrower ?? 1, arbitrary: failWith('retry-narrower') },
    { weight: b.unsupported ?? 1, arbitrary: failWith('unsupported') },
    { weight: b.hang ?? 1, arbitrary: fc.record({ k: fc.constant('hang' as const), honour }) },
    { weight: b.sync ?? 1, arbitrary: fc.constantFrom<Beh>({ k: 'throw' }, { k: 'value' }) },
  );
}

function endpointArb(b: Bias): fc.Arbitrary<EndpointGen> {
  return fc.record({
    priority: fc.constantFrom('high' as const, 'high' as const, 'low' as const),
    weight: fc.integer({ min: 1, max: 3 }),
    rate: fc.oneof(
      { weight: Math.round((1 - (b.rateLimit ?? 0.4)) * 10), arbitrary: fc.constant(undefined) },
      {
        weight: Math.round((b.rateLimit ?? 0.4) * 10),
        arbitrary: fc.record({
          perSecond: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.5, max: 20, noNaN: true })),
          burst: maybe(fc.integer({ min: 1, max: 5 }), 0.5),
        }),
      },
    ),
    maxInFlight: fc.oneof(
      { weight: Math.round((1 - (b.maxInFlight ?? 0.4)) * 10), arbitrary: fc.constant(undefined) },
      { weight: Math.round((b.maxInFlight ?? 0.4) * 10), arbitrary: fc.integer({ min: 1, max: 3 }) },
    ),
    script: fc.array(behaviour(b), { minLength: 1, maxLength: 8 }),
  });
}

function callArb(n: number, finiteDeadline: boolean, b: Bias): fc.Arbitrary<CallGen> {
  return fc.record({
    at: fc.integer({ min: 0, max: 1000 }),
    abortAfter: maybe(fc.integer({ min: 0, max: 1500 }), b.abort ?? 0.15),
    plain: finiteDeadline ? fc.boolean() : fc.constant(false),
    retry: maybe(fc.constantFrom<RetryMode>('none', 'until-deadline', { maxAttempts: 1 }, { maxAttempts: 2 }, { maxAttempts: 6 }), 0.5),
    breakerMode: maybe(fc.constantFrom<BreakerMode>('fail-fast', 'wait'), 0.3),
    deadlineMs: maybe(fc.oneof(fc.integer({ min: 1, max: 2500 }), fc.constant(INF)), 0.25),
    attemptTimeoutMs: maybe(fc.oneof(fc.integer({ min: 1, max: 400 }), fc.constant(INF)), 0.2),
    pin: maybe(fc.integer({ min: 0, max: n - 1 }), 0.08),
    exclude: maybe(fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { maxLength: n }), 0.1),
    avoid: maybe(fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { minLength: 1, maxLength: n }), 0.2),
  });
}

export function scenarioArb(b: Bias = {}): fc.Arbitrary<Scenario> {
  return fc
    .record({
      endpoints: fc.array(endpointArb(b), { minLength: 1, maxLength: 5 }),
      strategy: fc.constantFrom('ordered' as const, 'round-robin' as const),
      maxAttempts: fc.integer({ min: 1, max: 5 }),
      attemptTimeoutMs: fc.oneof(fc.integer({ min: 5, max: 500 }), fc.constant(INF)),
      deadlineMs: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 20, max: 3000 }) }, { weight: 1, arbitrary: fc.constant(INF) }),
      backoff: fc
        .record({ initialMs: fc.integer({ min: 1, max: 100 }), extra: fc.integer({ min: 10, max: 1000 }), jitter: fc.constantFrom('none' as const, 'full' as const, 'equal' as const, 'decorrelated' as const) })
        .map(({ initialMs, extra, jitter }) => ({ initialMs, maxMs: initialMs + extra, jitter })),
      breaker: fc
        .record({ threshold: fc.integer({ min: 1, max: 4 }), cooldownMs: fc.integer({ min: 1, max: 800 }), factor: fc.integer({ min: 1, max: 8 }) })
        .map(({ threshold, cooldownMs, factor }) => ({ threshold, cooldownMs, maxCooldownMs: cooldownMs * factor })),
      rateLimitCooldownMs: fc.integer({ min: 0, max: 500 }),
      maxConcurrentCalls: maybe(fc.integer({ min: 1, max: b.maxCalls ?? 4 }), 0.5),
      permitScope: fc.constantFrom('call' as const, 'attempt' as const),
      breakerMode: fc.constantFrom<BreakerMode>('fail-fast', 'wait'),
      closeAt: maybe(fc.integer({ min: 0, max: 1500 }), b.close ?? 0.15),
      closeAbortMs: fc.oneof(fc.constant(undefined), fc.constant(undefined), fc.constant(0), fc.integer({ min: 1, max: 800 }), fc.constant(INF)),
      tailMs: fc.integer({ min: 0, max: 2500 }),
      seed: fc.integer(),
    })
    .chain((s) =>
      fc.array(callArb(s.endpoints.length, s.deadlineMs !== INF, b), { minLength: 1, maxLength: 25 }).map((calls) => ({ ...s, calls })),
    );
}

/** Healthy endpoints, no deadline, no timeout, nobody giving up (the liveness property's scenarios). */
export function healthyArb(): fc.Arbitrary<Scenario> {
  return scenarioArb({ transient: 0, permanent: 0, rateLimited: 0, narrower: 0, unsupported: 0, hang: 0, sync: 0, rateLimit: 0.6, maxInFlight: 0.6 }).map(
    (s): Scenario => ({
      ...s,
      deadlineMs: INF,
      attemptTimeoutMs: INF,
      closeAt: undefined,
      // 25 calls, each at most 300 ms of work and 2 s of token wait, served one at a time.
      tailMs: 100_000,
      calls: s.calls.map((c) => ({ ...c, plain: false, abortAfter: undefined, deadlineMs: undefined, attemptTimeoutMs: undefined, pin: undefined, exclude: undefined, avoid: undefined })),
    }),
  );
}

/**
 * Every duration an event reports (`*Ms`) and its error's `retryAfterMs` must be a number >= 0,
 * on a moving clock too (two readings must never make one negative): what is not, as messages.
 */
export function negativeDurations(e: PoolEvent): string[] {
  const out: string[] = [];
  for (const [k, x] of Object.entries(e)) if (k.endsWith('Ms') && typeof x === 'number' && !(x >= 0)) out.push(`${e.type}.${k} = ${x}`);
  const err = (e as { error?: unknown }).error;
  if (isPoolError(err) && err.retryAfterMs !== undefined && !(err.retryAfterMs >= 0)) out.push(`${e.type}: error ${err.code} with retryAfterMs ${err.retryAfterMs}`);
  return out;
}

// ---------------------------------------------------------------------------------------
// Running a scenario

export class ScriptError extends Error {
  constructor(readonly verdict: ClassifyResult) {
    super('scripted failure');
  }
}

const classify = (err: unknown): ClassifyResult => (err instanceof ScriptError ? err.verdict : 'permanent');

/** A timer of `TrackedClock`: the FakeClock's timer under it changes when a stall moves the clock on. */
interface TrackedTimer {
  inner: TimerHandle;
  readonly fn: () => void;
  /** When it is due, on the tracked clock. */
  readonly due: number;
  readonly background: boolean | undefined;
  keepAlive: boolean | undefined;
}

/**
 * A clock that delegates to a FakeClock and knows which timers the pool still owns. With
 * `jitterMs`, time passes between two readings as on a real machine: each reading is the fake
 * time plus up to `jitterMs` (never less than the reading before), so a decision taken on one
 * reading may be acted on at a later one, and a timer may seem to fire up to `jitterMs`
 * early (Node's timers run on the loop's whole-millisecond time). With `stallMs`, one timer in
 * twenty fires after a stall of up to `stallMs` (a garbage-collection pause, a busy
 * machine): the clock moves on by that much at once, and every timer due meanwhile fires
 * late, right after it, in order. With `lateStalls`, a stall leaves the readings on the time
 * (for machines that share a store on the exact time: one moved ahead would stay ahead of it
 * for good) and holds this clock's timers instead: none fires before the stall ends, and those
 * due meanwhile fire then, in order; answers that are not timers (a store's, an endpoint's)
 * still come in on time.
 */
export class TrackedClock implements Clock {
  readonly live = new Set<TimerHandle>();
  readonly badDelays: number[] = [];
  #last = -Infinity;
  /** How far the stalls so far moved this clock ahead of the fake one. */
  #ahead = 0;
  /** With `lateStalls`: no timer fires before this fake time (the stall in progress). */
  #busyUntil = -Infinity;
  /** With `lateStalls`: the time spent in stalls so far (they never overlap). */
  stalledMs = 0;
  /** With `lateStalls`: how long the stall in progress still holds the timers (0: none). */
  get stallLeftMs(): number {
    return Math.max(0, this.#busyUntil - this.fake.now());
  }
  readonly #plain: boolean;
  constructor(
    readonly fake: FakeClock,
    readonly jitterMs = 0,
    readonly random: () => number = Math.random,
    readonly stallMs = 0,
    /** Readings are whole multiples of this (a browser's coarsened `performance.now()`): 0, exact. */
    readonly resolutionMs = 0,
    /** Stalls hold the timers and leave the readings on the time (see above). */
    readonly lateStalls = false,
  ) {
    this.#plain = jitterMs === 0 && stallMs === 0 && resolutionMs === 0;
  }
  #coarse(t: number): number {
    return this.resolutionMs > 0 ? Math.floor(t / this.resolutionMs) * this.resolutionMs : t;
  }
  now(): number {
    if (this.#plain) return this.fake.now();
    const t = Math.max(this.#last, this.#coarse(this.fake.now() + this.#ahead + this.jitterMs * this.random()));
    this.#last = t;
    return t;
  }
  /** The time as the pool last saw it (no jitter drawn): for the checks' own timestamps. */
  stamp(): number {
    return this.#plain ? this.fake.now() : Math.max(this.#last, this.#coarse(this.fake.now() + this.#ahead));
  }
  setTimeout(fn: () => void, ms: number, background?: boolean): TimerHandle {
    if (typeof ms !== 'number' || Number.isNaN(ms) || ms < 0 || ms === INF) this.badDelays.push(ms);
    const t: TrackedTimer = { inner: undefined, fn, due: this.stamp() + ms, background, keepAlive: undefined };
    this.#schedule(t, ms);
    this.live.add(t);
    return t;
  }
  #schedule(t: TrackedTimer, ms: number): void {
    const held = this.#busyUntil - this.fake.now();
    t.inner = this.fake.setTimeout(
      () => {
        if (this.lateStalls && this.stallMs > 0 && this.fake.now() >= this.#busyUntil && this.random() < 0.05) {
          // This timer finds the machine busy: it and every timer due before the stall ends wait for it.
          const ms = this.stallMs * this.random();
          this.#busyUntil = this.fake.now() + ms;
          this.stalledMs += ms;
          return this.#hold();
        }
        this.live.delete(t);
        this.unrefed.delete(t);
        if (!this.lateStalls && this.stallMs > 0 && this.random() < 0.05) this.#stall(this.stallMs * this.random());
        t.fn();
      },
      ms < held ? held : ms,
      t.background,
    );
    if (t.keepAlive !== undefined) this.fake.setRef(t.inner, t.keepAlive);
  }
  /** The clock moves on by `ms` at once: every live timer fires when it is due on it (at once if overdue), in order. */
  #stall(ms: number): void {
    this.#ahead += ms;
    this.#reschedule(this.fake.now() + this.#ahead);
  }
  /** A stall holds the timers (`lateStalls`): those due before it ends fire when it ends, in order. */
  #hold(): void {
    this.#reschedule(this.stamp());
  }
  /** Every live timer armed again, in order of due time, for when it is due seen from `now` (at once if overdue). */
  #reschedule(now: number): void {
    const timers = [...(this.live as Set<TrackedTimer>)].sort((a, b) => a.due - b.due);
    for (const t of timers) {
      this.fake.clearTimeout(t.inner);
      this.#schedule(t, Math.max(0, t.due - now));
    }
  }
  clearTimeout(handle: TimerHandle): void {
    this.live.delete(handle);
    this.unrefed.delete(handle);
    this.fake.clearTimeout((handle as TrackedTimer).inner);
  }
  /** Timers the pool marked as not keeping the process alive (the idle shared timeout timer). */
  readonly unrefed = new Set<TimerHandle>();
  setRef(handle: TimerHandle, keepAlive: boolean): void {
    if (keepAlive) this.unrefed.delete(handle);
    else if (this.live.has(handle)) this.unrefed.add(handle);
    (handle as TrackedTimer).keepAlive = keepAlive;
    this.fake.setRef((handle as TrackedTimer).inner, keepAlive);
  }
  /** Live timers that would keep a process alive. */
  get owned(): number {
    let n = 0;
    for (const h of this.live) if (!this.unrefed.has(h)) n++;
    return n;
  }
}

import { seeded } from '../helpers/prng.js';
export { seeded };

interface SimEndpoint {
  readonly name: string;
  readonly gen: EndpointGen;
  calls: number;
}

interface CallRecord {
  readonly id: number;
  readonly gen: CallGen;
  readonly startedAt: number;
  readonly deadlineMs: number;
  readonly maxAttempts: number;
  readonly controller: AbortController | undefined;
  attempts: number;
  /** Set by the call's last event (`attempt-success` or `call-failed`). */
  endedAt: number | undefined;
  endedBy: 'success' | 'failure' | undefined;
  failedError: unknown;
  settled: 'resolved' | 'rejected' | undefined;
  settledCount: number;
  rejection: unknown;
  /** The class of the last attempt-failure, when it was permanent or retry-narrower. */
  final: string | undefined;
  readonly unsupported: Set<string>;
  /** Endpoints the call has started an attempt on. */
  readonly tried: Set<string>;
  /** Endpoints the call waited for a turn on (rate-limit-wait): the turn, once it comes, is taken without a new selection. */
  readonly waited: Set<string>;
}

export interface Outcome {
  readonly violations: string[];
  readonly events: number;
  readonly attempts: number;
  readonly calls: number;
  readonly probes: number;
  /** `probe-lost` events: probes presumed lost, whose slot went to another. */
  readonly lostProbes: number;
  /** How each call ended: `ok` or the PoolError code. */
  readonly endings: Record<string, number>;
}

/** Where `simulate` reports to, for tests that want to break the pool on purpose. */
export interface SimHooks {
  /** Wraps the operation (e.g. to misbehave) before the pool sees it. */
  /** Sees every event with the simulated time (for tracing a counterexample). */
  readonly trace?: (now: number, e: PoolEvent) => void;
  readonly wrapOp?: (op: (ep: SimEndpoint, ctx: AttemptContext) => Promise<unknown>) => (ep: SimEndpoint, ctx: AttemptContext) => Promise<unknown>;
  /** Time that passes between two readings of the clock, at most (`TrackedClock`). */
  readonly jitterMs?: number;
  /** The longest stall a timer may find when it fires (`TrackedClock`). */
  readonly stallMs?: number;
  /** The clock's resolution (`TrackedClock`): 0, exact. */
  readonly resolutionMs?: number;
}

export async function simulate(sc: Scenario, hooks: SimHooks = {}): Promise<Outcome> {
  const fake = new FakeClock(1_000_000);
  const clock = new TrackedClock(fake, hooks.jitterMs ?? 0, seeded((sc.seed ^ 0x2545f491) | 0), hooks.stallMs ?? 0, hooks.resolutionMs ?? 0);
  const violations: string[] = [];
  const v = (msg: string): void => {
    if (violations.length < 20) violations.push(`[t=${fake.now() - 1_000_000}] ${msg}`);
  };

  const eps: SimEndpoint[] = sc.endpoints.map((gen, i) => ({ name: NAMES[i]!, gen, calls: 0 }));
  const limits = new Map<string, number>(eps.map((e) => [e.name, e.gen.maxInFlight ?? INF] as const));
  const inFlight = new Map<string, number>(eps.map((e) => [e.name, 0]));
  const probesOut = new Map<string, number>(eps.map((e) => [e.name, 0]));
  /** Per endpoint: probes let through beside one of the same period still out, whose `probe-lost` is due. */
  const lostDue = new Map<string, number>(eps.map((e) => [e.name, 0]));
  /** Per endpoint: the attempt holding the probe slot (the last probe let through in this period, still out). */
  const slotHolder = new Map<string, string>();
  const starts = new Map(eps.map((e) => [e.name, [] as number[]] as const));
  /** Open periods of each breaker, counted from breaker-opened / breaker-closed events. */
  const periods = new Map<string, number>(eps.map((e) => [e.name, 0]));
  const open = new Map<string, { endpoint: string; probe: boolean; period: number; at: number }>();
  /** Each breaker's current open period (from breaker-opened). */
  const periodLen = new Map<string, number>(eps.map((e) => [e.name, 0]));
  /**
   * A probe out this long is presumed lost and another may go (forty-first session): the open
   * period and the pool's bound on an attempt (its timeout, else the deadline; none: 0).
   */
  const poolBound = Math.min(sc.attemptTimeoutMs, sc.deadlineMs);
  const lostAfter = (endpoint: string): number => Math.max(periodLen.get(endpoint)!, poolBound === INF ? 0 : poolBound);
  const closedKeys = new Set<string>();
  const calls = new Map<number, CallRecord>();
  let eventCount = 0;
  let attemptCount = 0;
  let probeCount = 0;
  let lostCount = 0;
  const maxCalls = sc.maxConcurrentCalls ?? INF;

  // eslint-disable-next-line prefer-const
  let pool: Pool<SimEndpoint>;

  /**
   * For an attempt of call `c` (with `avoid`) on `endpoint`: an endpoint it passed over that could
   * plainly serve it at this moment (untried, not excluded or refused by the call; breaker closed,
   * status ok, below its maxInFlight, no rate limit). On an avoided endpoint, one not avoided; on a
   * retry (an endpoint tried already), any: a fresh endpoint beats a retry, avoided or not. Tiers
   * as the pool's: a low endpoint serves only once no high one the call may use admits calls (one
   * cooling, waiting for a turn or tried already still does; its breaker open does not). Checked
   * only where the selection and the attempt's start are one moment: no pin, no turn waited for
   * (a rate limit or maxInFlight of its own, a cooldown), no permit per attempt.
   */
  const passedOver = (c: CallRecord, endpoint: string): string | undefined => {
    const avoid: readonly string[] | undefined = c.gen.avoid?.map((i) => NAMES[i]!);
    if (avoid === undefined || c.gen.pin !== undefined) return undefined;
    const avoided = avoid.includes(endpoint);
    if (!avoided && !c.tried.has(endpoint)) return undefined;
    if (sc.permitScope === 'attempt' && sc.maxConcurrentCalls !== undefined) return undefined;
    const own = eps.find((e) => e.name === endpoint)!.gen;
    // Once the call has waited for a turn, a later turn may be taken without a new selection
    // (one wait for a cooldown is told, the next not), so the moments part: no check after it.
    if (own.rate !== undefined || own.maxInFlight !== undefined || c.waited.size > 0) return undefined;
    const stats = pool.stats();
    const stat = (name: string) => stats.find((x) => x.name === name)!;
    const usable = (name: string) => (!avoided || !avoid.includes(name)) && !c.unsupported.has(name) && c.gen.exclude?.some((i) => NAMES[i] === name) !== true;
    const highAdmits = eps.some((ep) => ep.gen.priority === 'high' && usable(ep.name) && stat(ep.name).breaker.state !== 'open' && (stat(ep.name).status === 'ok' || stat(ep.name).status === 'cooling'));
    for (const ep of eps) {
      const name = ep.name;
      if (!usable(name) || c.tried.has(name) || (ep.gen.priority === 'low' && highAdmits)) continue;
      if (ep.gen.rate !== undefined || inFlight.get(name)! >= limits.get(name)!) continue;
      const st = stat(name);
      if (st.status === 'ok' && st.breaker.state === 'closed') return `${name} (${avoid.includes(name) ? 'avoided' : 'not avoided'}, untried)`;
    }
    return undefined;
  };

  const checkPermits = (where: string): void => {
    // 'call': a permit per call in progress; 'attempt': a permit per attempt being sent.
    const holding = sc.permitScope === 'attempt' ? open.size : pool.activeCalls - pool.pendingCalls;
    if (holding > maxCalls) v(`${where}: ${holding} ${sc.permitScope === 'attempt' ? 'attempts' : 'calls'} hold permits, limit ${maxCalls}`);
  };

  const onEvent = (e: PoolEvent): void => {
    eventCount++;
    hooks.trace?.(fake.now() - 1_000_000, e);
    for (const m of negativeDurations(e)) v(m);
    if ('callId' in e) {
      const c = calls.get(e.callId);
      if (c === undefined) v(`event ${e.type} for unknown call ${e.callId}`);
      else if (c.endedBy !== undefined) v(`event ${e.type} for call ${e.callId} after it ended (${c.endedBy})`);
    }
    switch (e.type) {
      case 'attempt-start': {
        attemptCount++;
        const key = `${e.callId}/${e.attempt}`;
        if (open.has(key) || closedKeys.has(key)) v(`attempt ${key} started twice`);
        open.set(key, { endpoint: e.endpoint, probe: e.probe, period: periods.get(e.endpoint)!, at: clock.stamp() });
        const n = inFlight.get(e.endpoint)! + 1;
        inFlight.set(e.endpoint, n);
        if (n > limits.get(e.endpoint)!) v(`endpoint ${e.endpoint}: ${n} attempts in flight, maxInFlight ${limits.get(e.endpoint)}`);
        const stat = pool.stats().find((s) => s.name === e.endpoint);
        if (stat?.inFlight !== n) v(`endpoint ${e.endpoint}: stats().inFlight ${stat?.inFlight} but ${n} open attempts`);
        if (e.probe) {
          probeCount++;
          const p = probesOut.get(e.endpoint)! + 1;
          probesOut.set(e.endpoint, p);
          // The breaker knows only the probe that holds the slot: one let through beside it, and not beside an earlier one whose slot was given back, took it from a lost one.
          if (slotHolder.has(e.endpoint)) lostDue.set(e.endpoint, lostDue.get(e.endpoint)! + 1);
          slotHolder.set(e.endpoint, key);
          if (p > 1) {
            // Only a probe presumed lost (out for lostAfter on the pool's clock) gives up its slot. The
            // breaker read the clock as it let each probe through; this check reads it a little later
            // (by up to a jitter and a resolution step), so it allows that much.
            const slack = clock.jitterMs + clock.resolutionMs;
            for (const [k, o] of open) {
              if (k === key || !o.probe || o.endpoint !== e.endpoint || o.period !== periods.get(e.endpoint)) continue;
              const out = clock.stamp() - o.at;
              if (out < lostAfter(e.endpoint) - slack) v(`endpoint ${e.endpoint}: ${p} half-open probes at once in one open period (${k} out for ${out} ms of ${lostAfter(e.endpoint)})`);
            }
          }
        }
        starts.get(e.endpoint)!.push(clock.stamp());
        const c = calls.get(e.callId);
        if (c !== undefined) {
          c.attempts++;
          if (e.attempt !== c.attempts) v(`call ${e.callId}: attempt numbered ${e.attempt}, expected ${c.attempts}`);
          if (c.attempts > c.maxAttempts) v(`call ${e.callId}: attempt ${c.attempts} exceeds the limit of ${c.maxAttempts}`);
          if (c.final !== undefined) v(`call ${e.callId}: retried after a ${c.final} failure`);
          if (c.unsupported.has(e.endpoint)) v(`call ${e.callId}: went back to ${e.endpoint} after it answered unsupported`);
          if (c.gen.pin !== undefined && e.endpoint !== NAMES[c.gen.pin]) v(`call ${e.callId}: pinned to ${NAMES[c.gen.pin]} but went to ${e.endpoint}`);
          if (c.gen.exclude?.some((i) => NAMES[i] === e.endpoint) === true) v(`call ${e.callId}: went to excluded ${e.endpoint}`);
          const over = passedOver(c, e.endpoint);
          if (over !== undefined) v(`call ${e.callId}: went to ${e.endpoint} (${c.tried.has(e.endpoint) ? 'tried' : 'avoided'}) while ${over} could serve it`);
          c.tried.add(e.endpoint);
        }
        checkPermits('attempt-start');
        break;
      }
      case 'attempt-success':
      case 'attempt-failure':
      case 'attempt-cancelled': {
        const key = `${e.callId}/${e.attempt}`;
        const a = open.get(key);
        if (a === undefined) {
          v(`${e.type} for ${key} ${closedKeys.has(key) ? 'after its terminal event' : 'without attempt-start'}`);
          break;
        }
        open.delete(key);
        closedKeys.add(key);
        if (a.endpoint !== e.endpoint) v(`${e.type} for ${key} names ${e.endpoint}, started on ${a.endpoint}`);
        inFlight.set(a.endpoint, inFlight.get(a.endpoint)! - 1);
        if (a.probe && a.period === periods.get(a.endpoint)) probesOut.set(a.endpoint, probesOut.get(a.endpoint)! - 1);
        if (slotHolder.get(a.endpoint) === key) slotHolder.delete(a.endpoint);
        const stat = pool.stats().find((s) => s.name === a.endpoint);
        if (stat?.inFlight !== inFlight.get(a.endpoint)) v(`endpoint ${a.endpoint}: stats().inFlight ${stat?.inFlight} after ${e.type}, expected ${inFlight.get(a.endpoint)}`);
        if (e.durationMs < 0) v(`${key}: negative duration`);
        const c = calls.get(e.callId);
        if (c === undefined) break;
        if (e.type === 'attempt-success') {
          c.endedBy = 'success';
          c.endedAt = fake.now();
        } else if (e.type === 'attempt-failure') {
          if (e.errorClass === 'permanent' || e.errorClass === 'retry-narrower') c.final = e.errorClass;
          if (e.errorClass === 'unsupported') c.unsupported.add(e.endpoint);
        }
        break;
      }
      case 'breaker-opened':
      case 'breaker-closed':
        // A new period: a probe admitted in an earlier half-open period that is still out no
        // longer holds the slot (the breaker closed, or re-opened, since it was let through).
        probesOut.set(e.endpoint, 0);
        slotHolder.delete(e.endpoint);
        periods.set(e.endpoint, periods.get(e.endpoint)! + 1);
        if (e.type === 'breaker-opened') periodLen.set(e.endpoint, e.cooldownMs);
        break;
      case 'rate-limit-wait': {
        calls.get(e.callId)?.waited.add(e.endpoint);
        break;
      }
      case 'probe-lost': {
        const due = lostDue.get(e.endpoint)!;
        if (due === 0) v(`probe-lost on ${e.endpoint} with no other probe of its half-open period out`);
        else lostDue.set(e.endpoint, due - 1);
        lostCount++;
        if (!(e.outMs > 0 && e.outMs < INF)) v(`probe-lost on ${e.endpoint}: outMs ${e.outMs}`);
        break;
      }
      case 'call-failed': {
        const c = calls.get(e.callId);
        if (c === undefined) break;
        c.endedBy = 'failure';
        c.endedAt = fake.now();
        c.failedError = e.error;
        if (c.final === 'permanent' && e.error.code !== 'PERMANENT' && e.error.code !== 'ABORTED') v(`call ${e.callId}: permanent failure ended as ${e.error.code}`);
        if (c.final === 'retry-narrower' && e.error.code !== 'RETRY_NARROWER') v(`call ${e.callId}: retry-narrower failure ended as ${e.error.code}`);
        checkPermits('call-failed');
        break;
      }
      default:
        break;
    }
  };

  const op = (ep: SimEndpoint, ctx: AttemptContext): Promise<unknown> => {
    checkPermits('operation');
    const b = ep.gen.script[ep.calls++ % ep.gen.script.length]!;
    if (b.k === 'throw') throw new ScriptError('transient');
    if (b.k === 'value') return 42 as unknown as Promise<unknown>;
    return new Promise((resolve, reject) => {
      if (b.honour) ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
      if (b.k === 'hang') return;
      const settle = (): void => {
        if (b.k === 'ok') resolve(ep.name);
        else reject(new ScriptError(b.retryAfterMs === undefined ? b.cls : { class: b.cls, retryAfterMs: b.retryAfterMs }));
      };
      if (b.d === 0) settle();
      else fake.setTimeout(settle, b.d);
    });
  };

  pool = new Pool<SimEndpoint>({
    endpoints: eps.map((ep) => ({
      name: ep.name,
      conn: ep,
      priority: ep.gen.priority,
      weight: ep.gen.weight,
      ...(ep.gen.rate === undefined ? {} : { rateLimit: ep.gen.rate.burst === undefined ? { perSecond: ep.gen.rate.perSecond } : { perSecond: ep.gen.rate.perSecond, burst: ep.gen.rate.burst } }),
      ...(ep.gen.maxInFlight === undefined ? {} : { maxInFlight: ep.gen.maxInFlight }),
    })),
    classify,
    strategy: sc.strategy,
    maxAttempts: sc.maxAttempts,
    attemptTimeoutMs: sc.attemptTimeoutMs,
    deadlineMs: sc.deadlineMs,
    backoff: sc.backoff,
    breaker: sc.breaker,
    rateLimitCooldownMs: sc.rateLimitCooldownMs,
    ...(sc.maxConcurrentCalls === undefined ? {} : { maxConcurrentCalls: sc.maxConcurrentCalls }),
    permitScope: sc.permitScope,
    breakerMode: sc.breakerMode,
    clock,
    random: seeded(sc.seed),
    onEvent,
  });
  const runOp = hooks.wrapOp ? hooks.wrapOp(op) : op;

  const promises: Promise<void>[] = [];
  const startCall = (given: CallGen): void => {
    // A plain call passes no options, so none of the per-call fields apply.
    const gen: CallGen = given.plain ? { ...given, retry: undefined, breakerMode: undefined, deadlineMs: undefined, attemptTimeoutMs: undefined, pin: undefined, exclude: undefined, avoid: undefined, abortAfter: undefined } : given;
    const controller = gen.plain ? undefined : new AbortController();
    const maxAttempts =
      gen.plain || gen.retry === undefined ? sc.maxAttempts : gen.retry === 'none' ? 1 : gen.retry === 'until-deadline' ? INF : gen.retry.maxAttempts;
    const deadlineMs = gen.plain || gen.deadlineMs === undefined ? sc.deadlineMs : gen.deadlineMs;
    const id = calls.size + 1;
    const rec: CallRecord = { ...blankCall(id, fake.now()), gen, deadlineMs, maxAttempts, controller };
    calls.set(id, rec);
    let p: Promise<unknown>;
    if (controller === undefined) {
      p = pool.execute(runOp);
    } else {
      p = pool.execute(runOp, {
        signal: controller.signal,
        ...(gen.retry === undefined ? {} : { retry: gen.retry }),
        ...(gen.breakerMode === undefined ? {} : { breakerMode: gen.breakerMode }),
        ...(gen.deadlineMs === undefined ? {} : { deadlineMs: gen.deadlineMs }),
        ...(gen.attemptTimeoutMs === undefined ? {} : { attemptTimeoutMs: gen.attemptTimeoutMs }),
        ...(gen.pin === undefined ? {} : { pin: NAMES[gen.pin]! }),
        ...(gen.exclude === undefined ? {} : { exclude: gen.exclude.map((i) => NAMES[i]!) }),
        ...(gen.avoid === undefined ? {} : { avoid: (name: string) => gen.avoid!.some((i) => NAMES[i] === name) }),
      });
      if (gen.abortAfter !== undefined) fake.setTimeout(() => controller.abort(new Error('caller gave up')), gen.abortAfter);
    }
    promises.push(
      p.then(
        () => {
          rec.settledCount++;
          rec.settled = 'resolved';
        },
        (err: unknown) => {
          rec.settledCount++;
          rec.settled = 'rejected';
          rec.rejection = err;
        },
      ),
    );
  };

  const ordered = [...sc.calls].sort((x, y) => x.at - y.at);
  for (const gen of ordered) fake.setTimeout(() => startCall(gen), gen.at);
  let closing: Promise<void> | undefined;
  let closeResolvedWithTimers = -1;
  let closeResolvedAt: number | undefined;
  let closeCalledAt = 0;
  if (sc.closeAt !== undefined) {
    fake.setTimeout(() => {
      closeCalledAt = fake.now();
      closing = pool.close(sc.closeAbortMs === undefined ? undefined : { abortAfterMs: sc.closeAbortMs });
      void closing.then(() => {
        closeResolvedWithTimers = clock.live.size;
        closeResolvedAt = fake.now();
      });
    }, sc.closeAt);
  }

  const lastArrival = ordered.at(-1)!.at;
  await fake.advance(Math.max(lastArrival, sc.closeAt ?? 0) + sc.tailMs);
  // End of the scenario: every caller that can gives up; calls without a signal run to their (finite) deadline.
  for (const c of calls.values()) c.controller?.abort(new Error('end of scenario'));
  // A coarse clock reads up to its resolution behind the fake one: its deadlines come that much later.
  await fake.advance(Number.isFinite(sc.deadlineMs) ? sc.deadlineMs + 1 + 2 * (hooks.resolutionMs ?? 0) : 0);
  // A call still running now outlived its deadline: move on in whole seconds (up to 20 s) so the
  // checks below report it, rather than waiting for it for ever.
  for (let guard = 0; guard < 20 && [...calls.values()].some((c) => c.settledCount === 0); guard++) await fake.advance(1000);
  await Promise.race([Promise.all(promises), fake.flush()]);
  if (closing !== undefined) {
    await closing;
    if (closeResolvedWithTimers !== 0) v(`close() resolved while the pool still owned ${closeResolvedWithTimers} timer(s)`);
    // With abortAfterMs, close() resolves by then (a coarse clock reads up to its resolution behind).
    const by = closeCalledAt + (sc.closeAbortMs ?? INF) + (hooks.resolutionMs ?? 0);
    if (closeResolvedAt !== undefined && closeResolvedAt > by) v(`close() resolved at ${closeResolvedAt}, past abortAfterMs ${sc.closeAbortMs} (by ${by})`);
  }

  // --- after every call settled
  for (const c of calls.values()) {
    if (c.settledCount !== 1) v(`call ${c.id} settled ${c.settledCount} times`);
    if (c.settled === 'resolved' && c.endedBy !== 'success') v(`call ${c.id} resolved without attempt-success (ended by ${c.endedBy})`);
    if (c.settled === 'rejected') {
      if (c.endedBy !== 'failure') v(`call ${c.id} rejected without call-failed (ended by ${c.endedBy})`);
      if (c.failedError !== c.rejection) v(`call ${c.id}: rejection is not the error in call-failed`);
      if (!isPoolError(c.rejection)) v(`call ${c.id} rejected with a non-PoolError`);
      else if (c.final === 'permanent' && c.rejection.code !== 'PERMANENT') v(`call ${c.id}: ${c.rejection.code} after permanent`);
    }
    if (c.endedAt !== undefined && c.deadlineMs !== INF && c.endedAt - c.startedAt > c.deadlineMs + 1 + (hooks.resolutionMs ?? 0)) {
      v(`call ${c.id} ended ${c.endedAt - c.startedAt} ms after it started, deadline ${c.deadlineMs} ms`);
    }
  }
  for (const [key, a] of open) v(`attempt ${key} on ${a.endpoint} has no terminal event`);
  for (const s of pool.stats()) if (s.inFlight !== 0) v(`endpoint ${s.name}: ${s.inFlight} in flight when idle`);
  if (pool.activeCalls !== 0) v(`activeCalls ${pool.activeCalls} when idle`);
  if (pool.pendingCalls !== 0) v(`pendingCalls ${pool.pendingCalls} when idle`);
  if (clock.owned !== 0) v(`the pool still owns ${clock.owned} timer(s) after every call settled`);
  if (clock.badDelays.length > 0) v(`timers scheduled with bad delays: ${clock.badDelays.slice(0, 3).join(', ')}`);

  // Token buckets: in every window [t_i, t_j], at most burst + rate × window attempts started.
  for (const ep of eps) {
    const rate = ep.gen.rate;
    if (rate === undefined) continue;
    const burst = rate.burst ?? Math.max(1, Math.ceil(rate.perSecond));
    const ts = starts.get(ep.name)!;
    outer: for (let i = 0; i < ts.length; i++) {
      for (let j = i; j < ts.length; j++) {
        // Start times are stamped after the pool's reading, by up to `jitterMs`.
        const allowed = burst + (rate.perSecond * (ts[j]! - ts[i]! + (hooks.jitterMs ?? 0) + (hooks.resolutionMs ?? 0))) / 1000 + 1e-9;
        if (j - i + 1 > allowed) {
          v(`endpoint ${ep.name}: ${j - i + 1} attempts in ${ts[j]! - ts[i]!} ms, limit ${rate.perSecond}/s burst ${burst}`);
          break outer;
        }
      }
    }
  }

  // Late results of cancelled attempts, pending abort timers: nothing may happen in the pool.
  const before = eventCount;
  await fake.runAll(100_000);
  if (eventCount !== before) v(`${eventCount - before} event(s) after every call had settled`);
  if (fake.pendingTimers !== 0) v(`${fake.pendingTimers} timer(s) left on the fake clock`);

  // Permits all came back, and no more than the limit: an idle pool admits exactly maxConcurrentCalls.
  if (closing === undefined && maxCalls !== INF) {
    const probes: AbortController[] = [];
    const waits: Promise<unknown>[] = [];
    const hold = (_: SimEndpoint, ctx: AttemptContext): Promise<unknown> =>
      new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    for (let i = 0; i <= maxCalls; i++) {
      const ac = new AbortController();
      probes.push(ac);
      calls.set(calls.size + 1, { ...blankCall(calls.size + 1, fake.now()), maxAttempts: INF });
      waits.push(pool.execute(hold, { signal: ac.signal, deadlineMs: INF, breakerMode: 'wait', retry: 'until-deadline' }).catch(() => undefined));
      const expected = i < maxCalls ? 0 : 1;
      // Under 'attempt' a call queues for a permit only once an endpoint is ready (a full or
      // rate-limited endpoint parks it first): there, only the bound on attempts is checked.
      if (sc.permitScope === 'attempt') {
        if (open.size > maxCalls) v(`idle pool: ${open.size} attempts hold permits, limit ${maxCalls}`);
      } else if (pool.pendingCalls !== expected) v(`idle pool: after ${i + 1} calls, ${pool.pendingCalls} wait for a permit (expected ${expected}, limit ${maxCalls})`);
    }
    for (const ac of probes) ac.abort();
    await fake.flush();
    await Promise.all(waits);
    if (pool.activeCalls !== 0 || pool.pendingCalls !== 0) v('idle-permit check left calls behind');
    if (clock.owned !== 0) v('idle-permit check left timers behind');
  }
  await pool.close();
  for (const [name, due] of lostDue) if (due !== 0) v(`endpoint ${name}: ${due} probes went beside a lost one with no probe-lost`);
  const endings: Record<string, number> = {};
  for (const c of calls.values()) {
    const k = c.settled === 'resolved' ? 'ok' : isPoolError(c.rejection) ? c.rejection.code : c.settled === undefined ? 'idle-check' : 'other';
    endings[k] = (endings[k] ?? 0) + 1;
  }
  return { violations, events: eventCount, attempts: attemptCount, calls: calls.size, probes: probeCount, lostProbes: lostCount, endings };
}

function blankCall(id: number, now: number): CallRecord {
  return {
    id,
    gen: { at: 0, abortAfter: undefined, plain: false, retry: 'until-deadline', breakerMode: 'wait', deadlineMs: INF, attemptTimeoutMs: undefined, pin: undefined, exclude: undefined, avoid: undefined },
    startedAt: now,
    deadlineMs: INF,
    maxAttempts: INF,
    controller: undefined,
    attempts: 0,
    endedAt: undefined,
    endedBy: undefined,
    failedError: undefined,
    settled: undefined,
    settledCount: 0,
    rejection: undefined,
    final: undefined,
    unsupported: new Set(),
    tried: new Set(),
    waited: new Set(),
  };
}
