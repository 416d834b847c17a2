/**
 * A second scenario generator and simulator for property tests, for the options that
 * `sim.ts` leaves out: every strategy (`random`, `health`, `latency` too), hedging (pool
 * and per call, fixed and on a percentile, with retry budgets), failure-rate breakers with
 * slow calls, ejection growth, jitter and `maxEjectedPercent`, every kind of rate limit
 * (bucket, paced, daily, adaptive) alone and shared by groups, classifier hints (learned
 * ceilings, daily exhaustion, disabled keys), `unauthorized` answers with and without
 * `refreshAuth`, operations that answer after their signal aborted (with an error of their
 * own), callers sharing one `AbortSignal`, `setEndpoints` and `probeHealth` in the middle of
 * traffic, and `close()`. All on the FakeClock. With `MixBias.reentrant`, those actions run
 * from inside an event listener instead (see `MixScenario.reentrant`).
 *
 * Checked while it runs (from the event stream and the operation's own view) and after:
 * every call settles once with a documented code that its scenario can produce, never
 * later than its deadline (+1 ms, the timer tick); an abort settles the call at once; an
 * attempt never goes to an endpoint that was removed or replaced; hedges only for calls
 * that may hedge, at most `maxHedges`, never on an endpoint the call is already using;
 * nothing starts after `close()`; in-flight limits hold; `stats()` agrees with the events
 * per endpoint (attempts, successes, failures, 429s, in flight); a late answer of a replaced or
 * removed endpoint emits no ceiling, park, recovery or breaker event (under the name the live one has);
 * in the end no call, permit,
 * slot, timer or abort listener is left, and nothing happens after every call settled.
 */
import fc from 'fast-check';
import {
  Pool,
  isPoolError,
  type AttemptContext,
  type BreakerMode,
  type ClassifyResult,
  type EndpointConfig,
  type ErrorClass,
  type ExecuteOptions,
  type PoolEvent,
  type PoolOptions,
  type RateLimitOptions,
  type RetryMode,
  type Strategy,
} from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { TrackedClock, negativeDurations, seeded } from './sim.js';
import { MetricsTally } from './metrics-tally.js';

const INF = Number.POSITIVE_INFINITY;
/** With `MixScenario.reentrant`, an action no listener ran by then runs this much after its time. */
const REENTRANT_FALLBACK_MS = 250;
/** Events that tell what an answer did to its endpoint, delivered before that answer's attempt-failure or -success. */
const ANSWER_NEWS = new Set<PoolEvent['type']>(['breaker-opened', 'breaker-closed', 'endpoint-parked', 'endpoint-recalibrated', 'endpoint-disabled', 'endpoint-cooling', 'endpoint-adapted']);
export const MIX_NAMES = ['a', '__proto__', 'constructor', 'to String" 🙂'] as const;

// ---------------------------------------------------------------------------------------
// Scenario shape

/** What an attempt does when its signal aborts before it answered. */
export type OnAbort = 'ignore' | 'reason' | 'own-error' | 'late-error';

export type Fault =
  | { readonly k: 'ok'; readonly d: number; readonly onAbort: OnAbort }
  | {
      readonly k: 'fail';
      readonly d: number;
      readonly cls: ErrorClass;
      readonly onAbort: OnAbort;
      readonly retryAfterMs?: number;
      readonly ceiling?: number;
      readonly scope?: 'key' | 'group';
      readonly daily?: boolean;
      readonly disable?: boolean;
    }
  | { readonly k: 'hang'; readonly onAbort: OnAbort }
  | { readonly k: 'throw' }
  | { readonly k: 'value' };

export interface MixEndpoint {
  readonly priority: 'high' | 'low';
  readonly weight: number;
  readonly maxInFlight: number | undefined;
  readonly rateLimit: RateLimitOptions | undefined;
  readonly script: readonly Fault[];
}

export interface MixCall {
  readonly at: number;
  /** Index of the caller signal (calls may share one), or none. */
  readonly signal: number | undefined;
  readonly deadlineMs: number | undefined;
  readonly attemptTimeoutMs: number | undefined;
  readonly retry: RetryMode | undefined;
  readonly breakerMode: BreakerMode | undefined;
  readonly idempotent: boolean;
  readonly hedge: boolean | { readonly afterMs?: number; readonly percentile?: number; readonly maxHedges?: number } | undefined;
  readonly pin: number | undefined;
  readonly exclude: readonly number[] | undefined;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number } | undefined;
}

/** A change of the endpoint set: per name, absent, kept as it is, or replaced (a new connection, maybe new settings). */
export interface MixChange {
  readonly at: number;
  readonly slots: readonly ('absent' | 'keep' | 'replace' | 'limit' | 'settings')[];
  readonly priority: 'high' | 'low';
}

export interface MixScenario {
  /** Time that passes between two readings of the clock, at most (`TrackedClock`); none when absent. */
  readonly jitterMs?: number;
  /** The longest stall a timer may find when it fires (`TrackedClock`); none when absent. */
  readonly stallMs?: number;
  /** The clock's resolution (`TrackedClock`): absent, exact. */
  readonly resolutionMs?: number;
  readonly endpoints: readonly MixEndpoint[];
  readonly group: readonly number[] | undefined;
  readonly strategy: Strategy;
  readonly maxAttempts: number | undefined;
  readonly attemptTimeoutMs: number;
  readonly deadlineMs: number;
  readonly breaker: Record<string, unknown>;
  readonly maxEjectedPercent: number | undefined;
  readonly rateLimitCooldownMs: number;
  readonly maxQueueWaitMs: number | undefined;
  readonly ceilingRecovery: { readonly quietMs: number; readonly stepMs: number; readonly stepFraction: number } | undefined;
  readonly maxConcurrentCalls: number | undefined;
  readonly permitScope: 'call' | 'attempt';
  readonly breakerMode: BreakerMode;
  readonly retryBudget: { readonly ratio: number; readonly minPerSecond: number; readonly windowMs: number } | undefined;
  readonly hedge: { readonly afterMs: number; readonly percentile?: number; readonly maxHedges: number } | undefined;
  readonly auth: { readonly d: number; readonly ok: boolean } | 'hang' | undefined;
  readonly calls: readonly MixCall[];
  /** When each caller signal aborts (ms from the start), or never. */
  readonly aborts: readonly (number | undefined)[];
  readonly changes: readonly MixChange[];
  readonly probes: readonly { readonly at: number; readonly d: number; readonly timeoutMs: number }[];
  readonly closeAt: number | undefined;
  /** `close({ abortAfterMs })` at `closeAt` (undefined: `close()`), and optionally a second `close()` `laterMs` after it. */
  readonly closeAbort?: { readonly afterMs: number | undefined; readonly later: { readonly laterMs: number; readonly afterMs: number | undefined } | undefined };
  readonly seed: number;
  /** With `MixBias.hints`: `enableEndpoint`, `report()` and group toggles by `setEndpoints` in the middle of traffic. */
  readonly hints?: MixHints;
  /**
   * With `MixBias.reentrant`: the scenario's actions (calls, aborts, `setEndpoints`, hints,
   * probes, `close()`) run inside an event listener, synchronously, on the first event of one
   * of these types delivered once their time came (`'any'`: any type), or by a timer 250 ms
   * later if none comes.
   */
  readonly reentrant?: 'any' | readonly ReentrantKind[];
}

/** Where the actions of a `reentrant` scenario may run: inside an event of that type, the operation, the classifier, `refreshAuth`, the operation's abort listener or a metrics sink's record (`metric`). */
export type ReentrantKind = PoolEvent['type'] | 'operation' | 'classify' | 'refresh' | 'abort' | 'metric';

export interface MixHints {
  readonly enables: readonly { readonly at: number; readonly ep: number }[];
  readonly reports: readonly { readonly at: number; readonly ep: number; readonly value: number }[];
  /** When `setEndpoints` (same endpoints) toggles the group of the first two. */
  readonly regroups: readonly number[];
}

// ---------------------------------------------------------------------------------------
// Arbitraries

export interface MixBias {
  readonly hang?: number;
  readonly rateLimited?: number;
  readonly unauthorized?: number;
  readonly change?: number;
  readonly close?: number;
  readonly hedge?: number;
  readonly limits?: number;
  /** Calls arrive within this many ms (default 2000). */
  readonly spread?: number;
  /** Weight of "invalid key" answers (`disableEndpoint`), default 1. */
  readonly disable?: number;
  /** Generate `MixScenario.hints`. */
  readonly hints?: boolean;
  /** Share of scenarios with a `ceilingRecovery` of their own (short quiet periods), default 0.3. */
  readonly recovery?: number;
  /** Slow successes (up to 1.5 s) and changes that mostly replace: answers arrive from replaced endpoints. */
  readonly late?: boolean;
  /** Generate `MixScenario.reentrant`: the actions run inside event listeners. */
  readonly reentrant?: boolean;
  /** Weight of a pool with no attempt timeout (against 1 for a finite one; default 1). */
  readonly endless?: number;
}

/** What a scenario's `close()` is given as `abortAfterMs`: nothing (3 runs in 8), at once, a time, or `Infinity`. */
const abortAfterArb = fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 1000 }) }, { weight: 1, arbitrary: fc.constant(INF) });

function maybe<T>(arb: fc.Arbitrary<T>, p: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: Math.round(p * 100), arbitrary: arb }, { weight: Math.round((1 - p) * 100), arbitrary: fc.constant(undefined) });
}

const onAbort = fc.constantFrom<OnAbort>('ignore', 'reason', 'reason', 'own-error', 'late-error');
const delay = fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 4, arbitrary: fc.integer({ min: 1, max: 400 }) });

function faultArb(b: MixBias): fc.Arbitrary<Fault> {
  const fail = (cls: ErrorClass) => fc.record({ k: fc.constant('fail' as const), cls: fc.constant(cls), d: delay, onAbort }) as fc.Arbitrary<Fault>;
  return fc.oneof(
    { weight: 8, arbitrary: fc.record({ k: fc.constant('ok' as const), d: b.late === true ? fc.integer({ min: 0, max: 1500 }) : delay, onAbort }) },
    { weight: 4, arbitrary: fail('transient') },
    { weight: 1, arbitrary: fail('permanent') },
    { weight: 1, arbitrary: fail('unsupported') },
    { weight: 1, arbitrary: fail('retry-narrower') },
    { weight: b.unauthorized ?? 1, arbitrary: fail('unauthorized') },
    {
      weight: b.rateLimited ?? 3,
      arbitrary: fc.record(
        {
          k: fc.constant('fail' as const),
          cls: fc.constant('rate-limited' as const),
          d: delay,
          onAbort,
          retryAfterMs: fc.integer({ min: 0, max: 2000 }),
          ceiling: fc.oneof(fc.double({ min: 0.2, max: 30, noNaN: true }), fc.integer({ min: 1, max: 50 })),
          scope: fc.constantFrom('key' as const, 'group' as const),
          daily: fc.boolean(),
        },
        { requiredKeys: ['k', 'cls', 'd', 'onAbort'] },
      ),
    },
    {
      weight: b.disable ?? 1,
      arbitrary: fc.record({ k: fc.constant('fail' as const), cls: fc.constant('permanent' as const), d: delay, onAbort, disable: fc.constant(true) }),
    },
    { weight: b.hang ?? 2, arbitrary: fc.record({ k: fc.constant('hang' as const), onAbort }) },
    { weight: 1, arbitrary: fc.constantFrom<Fault>({ k: 'throw' }, { k: 'value' }) },
  );
}

const rateLimitArb: fc.Arbitrary<RateLimitOptions> = fc.oneof(
  fc.record({ perSecond: fc.integer({ min: 1, max: 40 }), burst: maybe(fc.integer({ min: 1, max: 4 }), 0.5) }).map((r) => (r.burst === undefined ? { perSecond: r.perSecond } : { perSecond: r.perSecond, burst: r.burst })),
  fc.record({ perSecond: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.double({ min: 0.5, max: 10, noNaN: true })), marginMs: fc.integer({ min: 0, max: 50 }) }).map((r) => ({ ...r, mode: 'paced' as const })),
  fc.record({ perDay: fc.integer({ min: 1, max: 30 }), dailyStopFraction: fc.constantFrom(1, 0.9, 0.5) }),
  fc.record({ perSecond: fc.integer({ min: 1, max: 20 }), perDay: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ perSecond: fc.integer({ min: 2, max: 30 }), windowMs: fc.integer({ min: 100, max: 3000 }) }).map((r) => ({
    perSecond: r.perSecond,
    adaptive: { min: 1, max: r.perSecond * 2, windowMs: r.windowMs, holdMs: 500 },
  })),
  fc.constant<RateLimitOptions>({ perSecond: 5, adaptive: true }),
);

function endpointArb(b: MixBias): fc.Arbitrary<MixEndpoint> {
  return fc.record({
    priority: fc.constantFrom('high' as const, 'high' as const, 'low' as const),
    weight: fc.integer({ min: 1, max: 3 }),
    maxInFlight: maybe(fc.integer({ min: 1, max: 3 }), 0.3),
    rateLimit: maybe(rateLimitArb, b.limits ?? 0.4),
    script: fc.array(faultArb(b), { minLength: 1, maxLength: 6 }),
  });
}

function callArb(n: number, signals: number, b: MixBias): fc.Arbitrary<MixCall> {
  const hedgeOpt = fc.oneof(
    fc.constant(true),
    fc.record({ afterMs: fc.integer({ min: 0, max: 300 }), percentile: fc.double({ min: 0.05, max: 0.99, noNaN: true }), maxHedges: fc.integer({ min: 1, max: 3 }) }, { requiredKeys: [] }),
  );
  return fc
    .record({
      at: fc.integer({ min: 0, max: b.spread ?? 2000 }),
      signal: maybe(fc.integer({ min: 0, max: signals - 1 }), 0.5),
      deadlineMs: maybe(fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.constant(INF)), 0.4),
      attemptTimeoutMs: maybe(fc.oneof(fc.integer({ min: 1, max: 500 }), fc.constant(INF)), 0.3),
      retry: maybe(fc.constantFrom<RetryMode>('none', 'until-deadline', { maxAttempts: 2 }, { maxAttempts: 5 }), 0.4),
      breakerMode: maybe(fc.constantFrom<BreakerMode>('fail-fast', 'wait'), 0.3),
      idempotent: fc.boolean(),
      hedge: maybe(hedgeOpt, b.hedge ?? 0.4),
      pin: maybe(fc.integer({ min: 0, max: n - 1 }), 0.07),
      exclude: maybe(fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { maxLength: n }), 0.1),
      backoff: maybe(fc.record({ initialMs: fc.integer({ min: 1, max: 200 }), maxMs: fc.integer({ min: 200, max: 2000 }) }), 0.2),
    })
    .map((c) => ({ ...c, hedge: c.idempotent ? c.hedge : undefined }));
}

export function mixArb(b: MixBias = {}): fc.Arbitrary<MixScenario> {
  return fc
    .record({
      endpoints: fc.array(endpointArb(b), { minLength: 1, maxLength: 4 }),
      strategy: fc.constantFrom<Strategy>('ordered', 'round-robin', 'random', 'health', 'latency'),
      maxAttempts: maybe(fc.integer({ min: 1, max: 5 }), 0.7),
      attemptTimeoutMs: fc.oneof(fc.integer({ min: 5, max: 600 }), { weight: b.endless ?? 1, arbitrary: fc.constant(INF) }),
      deadlineMs: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 20, max: 3000 }) }, { weight: 1, arbitrary: fc.constant(INF) }),
      breaker: fc.oneof(
        fc.record({ threshold: fc.integer({ min: 1, max: 4 }), cooldownMs: fc.integer({ min: 1, max: 800 }), maxCooldownMs: fc.integer({ min: 800, max: 4000 }), ejectionGrowth: fc.boolean(), jitter: fc.constantFrom(0, 0.2, 0.5) }),
        fc.record({
          mode: fc.constant('failure-rate'),
          failureRate: fc.double({ min: 0.1, max: 1, noNaN: true }),
          windowMs: fc.integer({ min: 100, max: 5000 }),
          minThroughput: fc.integer({ min: 1, max: 6 }),
          cooldownMs: fc.integer({ min: 1, max: 800 }),
          slowCallMs: fc.integer({ min: 1, max: 400 }),
        }),
      ),
      maxEjectedPercent: maybe(fc.integer({ min: 0, max: 100 }), 0.3),
      rateLimitCooldownMs: fc.integer({ min: 0, max: 500 }),
      maxQueueWaitMs: maybe(fc.integer({ min: 1, max: 2000 }), 0.3),
      ceilingRecovery: maybe(fc.record({ quietMs: fc.integer({ min: 1, max: b.late === true ? 300 : 3000 }), stepMs: fc.integer({ min: 1, max: b.late === true ? 300 : 2000 }), stepFraction: fc.double({ min: 0.05, max: 1, noNaN: true }) }), b.recovery ?? 0.3),
      maxConcurrentCalls: maybe(fc.integer({ min: 1, max: 4 }), 0.4),
      permitScope: fc.constantFrom('call' as const, 'attempt' as const),
      breakerMode: fc.constantFrom<BreakerMode>('fail-fast', 'wait'),
      retryBudget: maybe(fc.record({ ratio: fc.double({ min: 0, max: 1, noNaN: true }), minPerSecond: fc.integer({ min: 0, max: 5 }), windowMs: fc.integer({ min: 1000, max: 10_000 }) }), 0.3),
      hedge: maybe(
        fc.record({ afterMs: fc.integer({ min: 0, max: 300 }), percentile: fc.double({ min: 0.05, max: 0.99, noNaN: true }), maxHedges: fc.integer({ min: 1, max: 3 }) }, { requiredKeys: ['afterMs', 'maxHedges'] }),
        b.hedge ?? 0.4,
      ),
      auth: maybe(fc.oneof(fc.record({ d: fc.integer({ min: 0, max: 300 }), ok: fc.boolean() }), fc.constant('hang' as const)), 0.3),
      group: fc.boolean(),
      aborts: fc.array(maybe(fc.integer({ min: 0, max: 3500 }), 0.7), { minLength: 3, maxLength: 3 }),
      probes: fc.array(fc.record({ at: fc.integer({ min: 0, max: 3000 }), d: fc.integer({ min: 0, max: 400 }), timeoutMs: fc.integer({ min: 1, max: 500 }) }), { maxLength: 2 }),
      closeAt: maybe(fc.integer({ min: 0, max: 3500 }), b.close ?? 0.2),
      closeAbort: fc.record({ afterMs: abortAfterArb, later: fc.option(fc.record({ laterMs: fc.integer({ min: 0, max: 1500 }), afterMs: abortAfterArb }), { nil: undefined }) }),
      seed: fc.integer(),
    })
    .chain((s) => {
      const n = s.endpoints.length;
      return fc
        .record({
          calls: fc.array(callArb(n, 3, b), { minLength: 1, maxLength: 20 }),
          changes: fc.array(
            fc.record({
              at: fc.integer({ min: 0, max: 3000 }),
              slots: fc.array(
                b.late === true
                  ? fc.constantFrom('absent' as const, 'keep' as const, 'replace' as const, 'replace' as const, 'replace' as const, 'settings' as const)
                  : fc.constantFrom('absent' as const, 'keep' as const, 'keep' as const, 'replace' as const, 'limit' as const, 'settings' as const),
                { minLength: MIX_NAMES.length, maxLength: MIX_NAMES.length },
              ),
              priority: fc.constantFrom('high' as const, 'low' as const),
            }),
            { maxLength: b.change === undefined ? 1 : 3 },
          ),
          groupAt: fc.integer({ min: 0, max: Math.max(0, n - 2) }),
        })
        .map(({ calls, changes, groupAt }) => {
          // A group of two neighbours, sharing one rate limit (its members must agree).
          const group = s.group && n >= 2 ? [groupAt, groupAt + 1] : undefined;
          const shared = s.endpoints[groupAt]!.rateLimit;
          const endpoints = group === undefined ? s.endpoints : s.endpoints.map((e, i) => (i === groupAt + 1 ? { ...e, rateLimit: shared } : e));
          return { ...s, endpoints, group, calls, changes: (b.change ?? 0.3) > 0 ? changes : [] };
        });
    })
    .chain((s) =>
      b.reentrant !== true
        ? fc.constant(s)
        : fc.constantFrom<'any' | ReentrantKind[]>(
            'any',
            'any',
            ['operation'],
            ['classify', 'refresh'],
            ['abort'],
            ['attempt-start'],
            ['hedge'],
            ['attempt-failure', 'attempt-cancelled'],
            ['attempt-success'],
            ['call-failed'],
            ['retry-scheduled', 'rate-limit-wait'],
            ['breaker-opened', 'breaker-closed', 'endpoint-parked', 'endpoint-cooling', 'endpoint-recalibrated', 'endpoint-disabled'],
            ['metric'],
          ).map((reentrant) => ({ ...s, reentrant })),
    )
    .chain((s) =>
      b.hints !== true
        ? fc.constant(s)
        : fc
            .record({
              enables: fc.array(fc.record({ at: fc.integer({ min: 0, max: 3000 }), ep: fc.integer({ min: 0, max: s.endpoints.length - 1 }) }), { maxLength: 4 }),
              reports: fc.array(fc.record({ at: fc.integer({ min: 0, max: 3000 }), ep: fc.integer({ min: 0, max: s.endpoints.length - 1 }), value: fc.oneof(fc.integer({ min: -5, max: 5 }), fc.double({ noNaN: true, noDefaultInfinity: true })) }), { maxLength: 3 }),
              regroups: fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 3 }),
            })
            .map((hints) => ({ ...s, hints })),
    );
}

// ---------------------------------------------------------------------------------------
// Running a scenario

export class MixError extends Error {
  constructor(readonly verdict: ClassifyResult) {
    super('scripted failure');
  }
}

const classify = (err: unknown): ClassifyResult => (err instanceof MixError ? err.verdict : 'permanent');

function verdictOf(f: Extract<Fault, { k: 'fail' }>): ClassifyResult {
  if (f.cls === 'rate-limited') {
    return {
      class: 'rate-limited',
      ...(f.retryAfterMs === undefined ? {} : { retryAfterMs: f.retryAfterMs }),
      ...(f.ceiling === undefined ? {} : { ceilingPerSecond: f.ceiling }),
      ...(f.scope === undefined || f.ceiling === undefined ? {} : { ceilingScope: f.scope }),
      ...(f.daily === true ? { dailyQuotaExhausted: true } : {}),
    };
  }
  if (f.disable === true) return { class: f.cls, disableEndpoint: true };
  return f.cls;
}

/** A connection: one per endpoint state (a replaced endpoint gets a new one). */
interface Conn {
  readonly name: string;
  readonly gen: number;
  readonly script: readonly Fault[];
  readonly cursor: { n: number };
  // Counters from the events, for this endpoint state.
  starts: number;
  successes: number;
  failures: number;
  rateLimited: number;
  open: number;
  /** When its attempts started. */
  readonly startTimes: number[];
  /** Its limit may have moved: a ceiling hint came from it, or setEndpoints gave it another limit. */
  moved: boolean;
}

interface CallRec {
  readonly id: number;
  readonly gen: MixCall;
  readonly startedAt: number;
  readonly deadlineMs: number;
  readonly maxAttempts: number;
  /** `maxAttempts` left unset: the cap also grows by the endpoints it tried that setEndpoints has since removed or replaced. */
  readonly autoCap: boolean;
  /** The connections it started attempts on. */
  readonly triedConns: Set<Conn>;
  readonly hedges: number;
  readonly options: ExecuteOptions | undefined;
  attempts: number;
  hedged: number;
  unauthorized: number;
  openOn: Map<number, Conn>;
  final: string | undefined;
  endedBy: 'success' | 'failure' | undefined;
  endedAt: number | undefined;
  failedError: unknown;
  settledCount: number;
  settledAt: number | undefined;
  rejection: unknown;
  resolved: boolean;
  /** The endpoints it excluded, as they were when it started. */
  readonly excluded: Conn[];
  /** The call named an endpoint no longer in the pool: it is refused before it starts (no event). */
  refused: boolean;
  /** When its current rate-limit wait began (`rate-limit-wait`), until its next attempt or its end. */
  queuedAt: number | undefined;
}

export interface MixOutcome {
  readonly violations: string[];
  readonly endings: Record<string, number>;
  readonly attempts: number;
  readonly hedges: number;
  readonly changes: number;
  /** Calls that `close({ abortAfterMs })` ended with an attempt running. */
  readonly forced?: number;
}

/** Hooks for tests that break the pool on purpose. */
export interface MixHooks {
  readonly trace?: (now: number, e: PoolEvent, depth: number) => void;
  /** A dashboard: `stats()`, `capacity()` and `breakerState()` of every endpoint every this many ms, until the last call or change is well past (looks.test.ts). */
  readonly dashboardMs?: number;
  /** `stats()`, `capacity()` and `breakerState()` read from inside every event and every metric record, in the middle of the pool's own work (looks.test.ts). */
  readonly lookInside?: boolean;
}

const CODES = new Set([
  'PERMANENT',
  'RETRY_NARROWER',
  'RETRIES_EXHAUSTED',
  'DEADLINE_EXCEEDED',
  'NO_ENDPOINT',
  'PIN_UNAVAILABLE',
  'ABORTED',
  'CLOSED',
  'UNAUTHORIZED',
  'AUTH',
  'RETRY_BUDGET_EXHAUSTED',
  'RATE_LIMITED',
]);

export async function simulateMix(sc: MixScenario, hooks: MixHooks = {}): Promise<MixOutcome> {
  const T0 = 1_000_000;
  const fake = new FakeClock(T0);
  const clock = new CappedClock(fake, sc.jitterMs ?? 0, seeded((sc.seed ^ 0x2545f491) | 0), sc.stallMs ?? 0, sc.resolutionMs ?? 0);
  const violations: string[] = [];
  const v = (msg: string): void => {
    if (violations.length < 20) violations.push(`[t=${fake.now() - T0}] ${msg}`);
  };
  const n = sc.endpoints.length;
  const names = MIX_NAMES.slice(0, n);
  let genSeq = 0;
  const cursors = names.map(() => ({ n: 0 }));
  const newConn = (i: number): Conn => ({ name: names[i]!, gen: ++genSeq, script: sc.endpoints[i]!.script, cursor: cursors[i]!, starts: 0, successes: 0, failures: 0, rateLimited: 0, open: 0, startTimes: [], moved: false });
  /** The connection of each endpoint in the pool now (undefined: not in the pool). */
  const current = new Map<string, Conn>();
  const configOf = new Map<string, EndpointConfig<Conn>>();
  const configFor = (i: number, conn: Conn, e: MixEndpoint, priority = e.priority, rateLimit = e.rateLimit): EndpointConfig<Conn> => ({
    name: names[i]!,
    conn,
    priority,
    weight: e.weight,
    ...(rateLimit === undefined ? {} : { rateLimit }),
    ...(e.maxInFlight === undefined ? {} : { maxInFlight: e.maxInFlight }),
  });
  const initial = sc.endpoints.map((e, i) => {
    const conn = newConn(i);
    current.set(names[i]!, conn);
    const c = configFor(i, conn, e);
    configOf.set(names[i]!, c);
    return c;
  });
  const calls = new Map<number, CallRec>();
  /** Attempt key → connection, from attempt-start. */
  const attemptConn = new Map<string, Conn>();
  const ended = new Set<string>();
  let closedAt: number | undefined;
  let events = 0;
  /** `auth-refresh` events, and the credential refreshes running now (`refreshAuth` called, not yet ended). */
  let authEvents = 0;
  let refreshing = 0;
  let attempts = 0;
  let hedges = 0;
  /** The attempt-start the last `hedge` event announced, until the next event. */
  let hedgeStart: { callId: number; endpoint: string; attempt: number; acted: boolean } | undefined;
  /** With listeners acting on the pool, the hedges announced whose call has had no event since, by call. */
  const hedgesOut = new Map<number, NonNullable<typeof hedgeStart>>();
  let changes = 0;
  /** Endpoints disabled now (by name), from the events; a replaced endpoint is a new one. */
  const disabledNames = new Set<string>();
  /** `endpoint-enabled` and `report` events by the depth of listeners they were delivered at (an action's own are one deeper than it runs). */
  const enabledEvents: number[] = [];
  const reportEvents: number[] = [];
  let depth = 0;
  let groupsNow: string[][] = sc.group === undefined ? [] : [sc.group.map((i) => names[i]!)];
  /** The groups last given to the pool: it regroups their present members (a member put back rejoins), whatever `groupsNow` says. */
  let declared: string[][] = groupsNow.map((g) => [...g]);
  let maxCalls = sc.maxConcurrentCalls ?? INF;
  // Three runs in four record metrics, through a sink that throws now and then (metrics-tally.ts).
  const tally = (sc.seed & 3) === 0 ? undefined : new MetricsTally(3 + (sc.seed & 12));
  const anyUnauthorized = sc.endpoints.some((e) => e.script.some((f) => f.k === 'fail' && f.cls === 'unauthorized'));

  // eslint-disable-next-line prefer-const
  let pool: Pool<Conn>;
  const statOf = (name: string) => pool.stats().find((s) => s.name === name);

  /** Events about an endpoint (a ceiling from a hint, a park, a breaker turn) since the last attempt-failure or -success: they belong to the next one. */
  const pendingHints: { type: string; endpoint: string; live: Conn | undefined }[] = [];
  /** The connection of the attempt that just succeeded, if it was replaced or removed (a recovery step right after, in the same turn, is its). */
  let deadSuccess: Conn | undefined;
  /** The scenario's actions: by their timer, or (`sc.reentrant`) from inside the listener. */
  const acts: { at: number; fn: () => void; done: boolean }[] = [];
  const types = sc.reentrant;
  const act = (fn: () => void, at: number): void => {
    const a = { at: fake.now() + at, fn, done: false };
    const run = (): void => {
      if (a.done) return;
      a.done = true;
      fn();
    };
    if (types === undefined) {
      fake.setTimeout(run, at);
      return;
    }
    acts.push(a);
    acts.sort((x, y) => x.at - y.at);
    fake.setTimeout(run, at + REENTRANT_FALLBACK_MS);
  };
  const runDue = (kind: ReentrantKind): void => {
    if (types === undefined || (types !== 'any' && !types.includes(kind))) return;
    for (const a of acts) {
      if (a.done || fake.now() < a.at) continue;
      a.done = true;
      if (kind === 'hedge' && hedgeStart !== undefined) hedgeStart.acted = true;
      a.fn();
    }
  };
  /** Events about an answer being delivered now (outermost first), in all and by endpoint: see `early` below. */
  let reporting = 0;
  const reportingOn = new Map<string, number>();
  /** The same inside the classifier, which is not told the endpoint. */
  let reportingAny = 0;
  /** `stats().inFlight` against the events: inside news of an answer, that answer's attempt may be counted out already. */
  const inFlightAgrees = (name: string, inFlight: number, conn: Conn): boolean => inFlight <= conn.open && inFlight >= conn.open - (reportingOn.get(name) ?? 0) - reportingAny;
  /** Records (a metric), then runs the actions due from there, one level down as inside a listener (their events are counted at their depth). */
  const actingAfter = (record: () => void): void => {
    try {
      record();
    } finally {
      depth++;
      try {
        runDue('metric');
      } finally {
        depth--;
      }
    }
  };
  /** Reads everything a dashboard reads (`hooks.lookInside`). */
  const look = (): void => {
    for (const st of pool.stats()) pool.breakerState(st.name);
    pool.capacity();
  };
  const onEvent = (e: PoolEvent): void => {
    if (hooks.lookInside === true) look();
    depth++;
    try {
      deliver(e);
    } finally {
      depth--;
    }
  };
  const deliver = (e: PoolEvent): void => {
    watch(e);
    if (types === undefined) return;
    if (!ANSWER_NEWS.has(e.type)) return runDue(e.type);
    during((e as { endpoint: string }).endpoint, () => runDue(e.type));
  };
  /** Runs `fn` where an attempt (of `name`, or of an endpoint not told) has given back its slot and permit before its terminal event. */
  const during = (name: string | undefined, fn: () => void): void => {
    reporting++;
    if (name === undefined) reportingAny++;
    else reportingOn.set(name, (reportingOn.get(name) ?? 0) + 1);
    try {
      fn();
    } finally {
      reporting--;
      if (name === undefined) reportingAny--;
      else reportingOn.set(name, reportingOn.get(name)! - 1);
    }
  };
  const watch = (e: PoolEvent): void => {
    events++;
    if (e.type === 'auth-refresh') authEvents++;
    hooks.trace?.(fake.now() - T0, e, depth);
    tally?.onEvent(e, v);
    for (const m of negativeDurations(e)) v(m);
    const justSucceeded = deadSuccess;
    deadSuccess = undefined;
    // What an answer says about its endpoint comes before its attempt-failure (call/outcome.ts); a
    // replaced or removed endpoint's answer must say nothing under the name the live one has.
    if ((e.type === 'endpoint-recalibrated' && e.reason === 'hint') || e.type === 'endpoint-parked' || e.type === 'breaker-opened' || e.type === 'breaker-closed') pendingHints.push({ type: e.type, endpoint: e.endpoint, live: current.get(e.endpoint) });
    if (e.type === 'endpoint-recalibrated' && e.reason === 'recovery' && justSucceeded?.name === e.endpoint) v(`endpoint-recalibrated (recovery) for ${e.endpoint} on a late success of its replaced or removed connection`);
    if (e.type === 'attempt-failure' || e.type === 'attempt-success') {
      const conn = attemptConn.get(`${e.callId}/${e.attempt}`);
      // (The connection live under that name when the news came: a listener may replace it since.)
      const stale = conn === undefined ? [] : pendingHints.filter((h) => h.endpoint === conn.name && h.live !== conn);
      if (stale.length > 0) v(`${stale.map((h) => h.type).join(', ')} for ${conn!.name} from a late answer of its replaced or removed connection`);
      pendingHints.length = 0;
    }
    if (e.type === 'attempt-success') {
      const conn = attemptConn.get(`${e.callId}/${e.attempt}`);
      if (conn !== undefined && current.get(conn.name) !== conn) {
        deadSuccess = conn;
        // Only what the success itself does, synchronously, is its: a recovery that `stats()` or
        // a later success applies (however soon, with nothing in between) is the live endpoint's.
        queueMicrotask(() => {
          if (deadSuccess === conn) deadSuccess = undefined;
        });
      }
    }
    const c = 'callId' in e ? calls.get(e.callId) : undefined;
    if ('callId' in e) {
      if (c === undefined) v(`event ${e.type} for unknown call ${e.callId}`);
      // The losers of a hedge race are cancelled once the winner's success is out (by design, pinned in test/hedge-latency.test.ts).
      else if (c.endedBy !== undefined && !(e.type === 'attempt-cancelled' && e.reason === 'superseded' && c.endedBy === 'success')) {
        v(`event ${e.type} for call ${e.callId} after it ended (${c.endedBy})`);
      }
    }
    // maxQueueWaitMs bounds a wait for a turn: from its start to the next attempt or the call's end
    // (other waits may follow a turn: under permitScope 'attempt' one for a permit, under
    // breakerMode 'wait' one for an open breaker, with maxInFlight one for a free slot, which a
    // 'settings' change may set; none is a turn).
    if (c !== undefined && c.queuedAt !== undefined && (e.type === 'attempt-start' || e.type === 'call-failed')) {
      const otherWaits =
        (sc.permitScope === 'attempt' && sc.maxConcurrentCalls !== undefined) || (c.gen.breakerMode ?? sc.breakerMode) === 'wait' || sc.endpoints.some((x) => x.maxInFlight !== undefined) || sc.changes.some((ch) => ch.slots.includes('settings'));
      // Time passes between the pool's readings (jitterMs): the wait's timer is armed after its event's reading (seed 42450: 6.04 ms for 6).
      if (sc.maxQueueWaitMs !== undefined && !otherWaits && fake.now() - c.queuedAt > sc.maxQueueWaitMs + (sc.resolutionMs ?? 0) + (sc.jitterMs ?? 0)) v(`call ${c.id} queued ${fake.now() - c.queuedAt} ms for a turn, maxQueueWaitMs ${sc.maxQueueWaitMs}`);
      c.queuedAt = undefined;
    }
    // A hedge is reported as it goes out: the next event is its attempt-start (docs/events.md).
    // (With listeners acting on the pool, what they do comes first: the next event of the call.
    // A listener that acted inside `hedge` may have withdrawn it: then the call goes on without.)
    // (Per call then: other calls' hedges may come between.)
    const want = types === undefined ? hedgeStart : 'callId' in e ? hedgesOut.get(e.callId) : undefined;
    if (want !== undefined) {
      hedgeStart = undefined;
      hedgesOut.delete(want.callId);
      const withdrawn = want.acted && !(e.type === 'attempt-start' && e.attempt === want.attempt);
      if (withdrawn && c !== undefined) c.hedged--;
      else if (e.type !== 'attempt-start' || e.callId !== want.callId || e.endpoint !== want.endpoint || e.attempt !== want.attempt) {
        v(`hedge ${JSON.stringify(want)} followed by ${e.type}${'endpoint' in e ? ` on ${e.endpoint}` : ''}, not its attempt-start`);
      }
    }
    if (e.type === 'hedge') {
      hedgeStart = { callId: e.callId, endpoint: e.endpoint, attempt: e.attempt, acted: false };
      if (types !== undefined) hedgesOut.set(e.callId, hedgeStart);
    }
    switch (e.type) {
      case 'rate-limit-wait':
        if (c !== undefined) c.queuedAt ??= fake.now();
        break;
      case 'attempt-start': {
        attempts++;
        const key = `${e.callId}/${e.attempt}`;
        if (attemptConn.has(key)) v(`attempt ${key} started twice`);
        if (closedAt !== undefined) v(`attempt ${key} started on ${e.endpoint} after close()`);
        const conn = current.get(e.endpoint);
        if (conn === undefined) {
          v(`attempt ${key} started on ${e.endpoint}, which is not in the pool`);
          break;
        }
        attemptConn.set(key, conn);
        if (disabledNames.has(e.endpoint)) v(`attempt ${key} started on ${e.endpoint}, which is disabled`);
        conn.starts++;
        conn.open++;
        conn.startTimes.push(clock.stamp());
        const limit = configOf.get(e.endpoint)!.maxInFlight ?? INF;
        // Inside an event about an answer (a breaker turn, a park...), that answer's attempt has
        // given back its slot and permit already; its attempt-failure or -success comes next.
        const early = (reportingOn.get(e.endpoint) ?? 0) + reportingAny;
        if (conn.open - early > limit) v(`${e.endpoint}: ${conn.open} attempts in flight, maxInFlight ${limit}`);
        const st = statOf(e.endpoint);
        if (st === undefined || st.inFlight > conn.open || st.inFlight < conn.open - early) v(`${e.endpoint}: stats().inFlight ${st?.inFlight} at attempt-start, ${conn.open} open`);
        if (c !== undefined) {
          c.attempts++;
          c.openOn.set(e.attempt, conn);
          if (e.attempt !== c.attempts) v(`call ${c.id}: attempt numbered ${e.attempt}, expected ${c.attempts}`);
          if (c.final !== undefined) v(`call ${c.id}: attempt ${e.attempt} after a ${c.final} failure`);
          // Left unset, the cap also counts the endpoints it tried that have since left (replaced: one it has not tried).
          let cap = c.maxAttempts;
          if (c.autoCap) for (const t of c.triedConns) if (current.get(t.name) !== t) cap++;
          c.triedConns.add(conn);
          if (c.attempts - c.hedged - c.unauthorized > cap) v(`call ${c.id}: ${c.attempts} attempts (${c.hedged} hedges, ${c.unauthorized} 401s), limit ${cap}`);
          if (c.gen.pin !== undefined && e.endpoint !== names[c.gen.pin]) v(`call ${c.id}: pinned to ${names[c.gen.pin]} but went to ${e.endpoint}`);
          // By endpoint state: an endpoint replaced under the same name since the call started is not the one it excluded (see NOTES-fuzz.md).
          if (c.excluded.includes(conn)) v(`call ${c.id}: went to excluded ${e.endpoint}`);
        }
        if (sc.permitScope === 'call' && pool.activeCalls - pool.pendingCalls > maxCalls) v(`${pool.activeCalls - pool.pendingCalls} calls hold permits, limit ${maxCalls}`);
        if (sc.permitScope === 'attempt') {
          let running = 0;
          for (const x of current.values()) running += x.open;
          if (running - reporting > maxCalls) v(`${running} attempts hold permits, limit ${maxCalls} (permitScope 'attempt')`);
        }
        break;
      }
      case 'attempt-success':
      case 'attempt-failure':
      case 'attempt-cancelled': {
        const key = `${e.callId}/${e.attempt}`;
        const conn = attemptConn.get(key);
        if (conn === undefined) break;
        if (ended.has(key)) {
          v(`${e.type} for ${key} after its terminal event`);
          break;
        }
        ended.add(key);
        conn.open--;
        if (e.type === 'attempt-success') conn.successes++;
        if (e.type === 'attempt-failure') {
          conn.failures++;
          if (e.errorClass === 'rate-limited') conn.rateLimited++;
        }
        if (current.get(conn.name) === conn) {
          const st = statOf(conn.name);
          if (st === undefined || !inFlightAgrees(conn.name, st.inFlight, conn)) v(`${conn.name}: stats().inFlight ${st?.inFlight} after ${e.type} of ${key}, ${conn.open} open`);
        }
        if (c === undefined) break;
        c.openOn.delete(e.attempt);
        if (e.type === 'attempt-success') {
          c.endedBy = 'success';
          c.endedAt = fake.now();
        } else if (e.type === 'attempt-failure') {
          // A permanent answer that disables its endpoint (an invalid key) moves the call on instead (docs/quotas.md).
          const disabling = e.error instanceof MixError && typeof e.error.verdict === 'object' && e.error.verdict.disableEndpoint === true;
          if ((e.errorClass === 'permanent' && !disabling) || e.errorClass === 'retry-narrower') c.final = e.errorClass;
          if (e.errorClass === 'unauthorized') c.unauthorized++;
        }
        break;
      }
      case 'hedge': {
        hedges++;
        if (c === undefined) break;
        c.hedged++;
        if (c.hedges === 0) v(`call ${c.id} hedged, but it may not (idempotent ${c.gen.idempotent}, hedge ${JSON.stringify(c.gen.hedge)})`);
        else if (c.hedged > c.hedges) v(`call ${c.id}: ${c.hedged} hedges, maxHedges ${c.hedges}`);
        if (c.gen.pin !== undefined) v(`call ${c.id}: a pinned call hedged`);
        // The same endpoint state (a replaced endpoint of the same name is another endpoint).
        if ([...c.openOn.values()].some((x) => x === current.get(e.endpoint))) v(`call ${c.id}: hedge on ${e.endpoint}, which it is already using`);
        if (closedAt !== undefined) v(`call ${c.id}: hedge after close()`);
        break;
      }
      case 'endpoint-disabled':
        disabledNames.add(e.endpoint);
        break;
      case 'endpoint-enabled':
        if (!disabledNames.delete(e.endpoint)) v(`endpoint-enabled for ${e.endpoint}, which was not disabled`);
        enabledEvents[depth] = (enabledEvents[depth] ?? 0) + 1;
        break;
      case 'report':
        reportEvents[depth] = (reportEvents[depth] ?? 0) + 1;
        break;
      case 'call-failed': {
        if (c === undefined) break;
        c.endedBy = 'failure';
        c.endedAt = fake.now();
        c.failedError = e.error;
        break;
      }
      default:
        break;
    }
  };

  const opFor = (id: number) => (conn: Conn, ctx: AttemptContext): Promise<unknown> => {
    if (current.get(conn.name) !== conn && attemptConn.get(`${id}/${ctx.attempt}`) !== conn) v(`call ${id}: attempt ${ctx.attempt} sent to a removed or replaced ${conn.name}`);
    runDue('operation');
    const f = conn.script[conn.cursor.n++ % conn.script.length]!;
    if (f.k === 'throw') throw new MixError('transient');
    if (f.k === 'value') return 7 as unknown as Promise<unknown>;
    return new Promise((resolve, reject) => {
      let done = false;
      const settle = (fn: () => void): void => {
        if (done) return;
        done = true;
        fn();
      };
      // Its slot and permit are given back before its signal aborts, as before the news of an answer.
      if (types !== undefined) ctx.signal.addEventListener('abort', () => during(conn.name, () => runDue('abort')));
      if (f.onAbort !== 'ignore') {
        ctx.signal.addEventListener('abort', () => {
          if (f.onAbort === 'reason') settle(() => reject(ctx.signal.reason));
          // An error of its own, at once or a little later (what a client library may do).
          else if (f.onAbort === 'own-error') settle(() => reject(new MixError('transient')));
          else fake.setTimeout(() => settle(() => reject(new MixError({ class: 'rate-limited', retryAfterMs: 50 }))), 5);
        });
      }
      if (f.k === 'hang') return;
      const answer = (): void =>
        settle(() => {
          if (f.k === 'ok') return resolve(conn.name);
          if (f.ceiling !== undefined) {
            conn.moved = true;
            // A number may describe the group (its scope, or the pool's reading): every member's pace may move with it.
            for (const g of declared) if (g.includes(conn.name)) for (const m of g) if (current.get(m) !== undefined) current.get(m)!.moved = true;
          }
          reject(new MixError(verdictOf(f)));
        });
      if (f.d === 0) answer();
      else fake.setTimeout(answer, f.d);
    });
  };

  const auth = sc.auth;
  const options: PoolOptions<Conn> = {
    endpoints: initial,
    // Inside the classifier, the answer's attempt has given back its slot and permit already, as inside its news.
    classify:
      types === undefined
        ? classify
        : (err: unknown) => {
            during(undefined, () => runDue('classify'));
            return classify(err);
          },
    strategy: sc.strategy,
    ...(sc.maxAttempts === undefined ? {} : { maxAttempts: sc.maxAttempts }),
    attemptTimeoutMs: sc.attemptTimeoutMs,
    deadlineMs: sc.deadlineMs,
    backoff: { initialMs: 20, maxMs: 500 },
    breaker: sc.breaker,
    rateLimitCooldownMs: sc.rateLimitCooldownMs,
    permitScope: sc.permitScope,
    breakerMode: sc.breakerMode,
    ...(sc.maxEjectedPercent === undefined ? {} : { maxEjectedPercent: sc.maxEjectedPercent }),
    ...(sc.maxQueueWaitMs === undefined ? {} : { maxQueueWaitMs: sc.maxQueueWaitMs }),
    ...(sc.ceilingRecovery === undefined ? {} : { ceilingRecovery: sc.ceilingRecovery }),
    ...(sc.maxConcurrentCalls === undefined ? {} : { maxConcurrentCalls: sc.maxConcurrentCalls }),
    ...(sc.retryBudget === undefined ? {} : { retryBudget: sc.retryBudget }),
    ...(sc.hedge === undefined ? {} : { hedge: sc.hedge }),
    ...(sc.group === undefined ? {} : { groups: [sc.group.map((i) => names[i]!)] }),
    ...(auth === undefined
      ? {}
      : {
          refreshAuth: (_conn: Conn, ctx: AttemptContext) => {
            refreshing++;
            runDue('refresh');
            return new Promise((resolve, reject) => {
              ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
              if (auth === 'hang') return;
              fake.setTimeout(() => (auth.ok ? resolve(undefined) : reject(new Error('refresh failed'))), auth.d);
            }).finally(() => refreshing--);
          },
          refreshTimeoutMs: 400,
        }),
    clock,
    random: seeded(sc.seed),
    onEvent,
    ...(tally === undefined
      ? {}
      : {
          metrics:
            hooks.lookInside === true
              ? {
                  increment: (name: string, labels: Record<string, string>, value?: number) => (look(), tally.sink.increment(name, labels, value)),
                  observe: (name: string, labels: Record<string, string>, value: number) => (look(), tally.sink.observe?.(name, labels, value)),
                }
              : types === 'any' || types?.includes('metric') === true
                ? {
                    // A sink that acts on the pool as it records (a metric crossing a threshold closes the pool, say).
                    increment: (name: string, labels: Record<string, string>, value?: number) => actingAfter(() => tally.sink.increment(name, labels, value)),
                    observe: (name: string, labels: Record<string, string>, value: number) => actingAfter(() => tally.sink.observe?.(name, labels, value)),
                  }
                : tally.sink,
        }),
  };
  try {
    pool = new Pool<Conn>(options);
  } catch (error) {
    return { violations: [`the pool rejected generated options: ${String(error)}`], endings: {}, attempts: 0, hedges: 0, changes: 0 };
  }
  if (hooks.dashboardMs !== undefined) {
    const every = hooks.dashboardMs;
    const until = Math.max(0, ...sc.calls.map((c) => c.at), ...sc.changes.map((c) => c.at), ...sc.probes.map((p) => p.at)) + Math.min(sc.deadlineMs, 60_000) + 5_000;
    const look = (): void => {
      for (const st of pool.stats()) pool.breakerState(st.name);
      pool.capacity();
      if (fake.now() - T0 + every <= until) fake.setTimeout(look, every);
    };
    fake.setTimeout(look, every);
  }

  // Caller signals, with listener counts (a leak check).
  const live = sc.aborts.map(() => 0);
  const controllers = sc.aborts.map((_, k) => {
    const ac = new AbortController();
    const sig = ac.signal;
    const add = sig.addEventListener.bind(sig);
    const remove = sig.removeEventListener.bind(sig);
    const held = new Set<unknown>();
    sig.addEventListener = ((type: string, fn: EventListenerOrEventListenerObject, o?: AddEventListenerOptions | boolean) => {
      if (type === 'abort' && !held.has(fn)) {
        held.add(fn);
        live[k]!++;
        if (typeof o === 'object' && o.once === true) v('a caller signal listener added with once: the count would be wrong');
      }
      add(type, fn, o);
    }) as typeof sig.addEventListener;
    sig.removeEventListener = ((type: string, fn: EventListenerOrEventListenerObject, o?: EventListenerOptions | boolean) => {
      if (type === 'abort' && held.delete(fn)) live[k]!--;
      remove(type, fn, o);
    }) as typeof sig.removeEventListener;
    return ac;
  });
  const abortedAt: (number | undefined)[] = sc.aborts.map(() => undefined);
  sc.aborts.forEach((at, k) => {
    if (at === undefined) return;
    act(() => {
      abortedAt[k] = fake.now();
      controllers[k]!.abort(new Error('caller gave up'));
      // Aborting rejects at once: every call on this signal has its final event now (inside a
      // listener, once that event is out: a call whose attempt just succeeded has won already).
      const check = (): void => {
        for (const c of calls.values()) {
          if (c.gen.signal === k && c.endedBy === undefined && c.settledCount === 0 && c.options !== undefined && !c.refused) v(`call ${c.id} still running after its signal aborted`);
        }
      };
      if (depth === 0 && reporting === 0) check();
      else queueMicrotask(check);
    }, at);
  });

  const promises: Promise<void>[] = [];
  let seq = 0;
  const startCall = (gen: MixCall): void => {
    const id = ++seq;
    const hedgeAsked = gen.idempotent && gen.hedge !== undefined && gen.hedge !== false;
    const poolHedges = gen.idempotent && gen.hedge === undefined && sc.hedge !== undefined;
    const hedgesAllowed = hedgeAsked
      ? typeof gen.hedge === 'object'
        ? (gen.hedge.maxHedges ?? sc.hedge?.maxHedges ?? 1)
        : (sc.hedge?.maxHedges ?? 1)
      : poolHedges
        ? sc.hedge!.maxHedges
        : 0;
    const pin = gen.pin !== undefined ? names[gen.pin]! : undefined;
    const opts: ExecuteOptions = {
      ...(gen.signal === undefined ? {} : { signal: controllers[gen.signal]!.signal }),
      ...(gen.deadlineMs === undefined ? {} : { deadlineMs: gen.deadlineMs }),
      ...(gen.attemptTimeoutMs === undefined ? {} : { attemptTimeoutMs: gen.attemptTimeoutMs }),
      ...(gen.retry === undefined ? {} : { retry: gen.retry }),
      ...(gen.breakerMode === undefined ? {} : { breakerMode: gen.breakerMode }),
      ...(gen.idempotent ? { idempotent: true } : {}),
      ...(gen.hedge === undefined ? {} : { hedge: gen.hedge }),
      ...(pin === undefined ? {} : { pin }),
      ...(gen.exclude === undefined ? {} : { exclude: gen.exclude.map((i) => names[i]!) }),
      ...(gen.backoff === undefined ? {} : { backoff: gen.backoff }),
    };
    const plain = Object.keys(opts).length === 0;
    // Left unset, the cap follows the endpoint count as it is when the call checks it (setEndpoints may add some meanwhile).
    const autoAttempts = Math.max(3, n);
    const poolAttempts = sc.maxAttempts ?? autoAttempts;
    const maxAttempts = gen.retry === undefined ? poolAttempts : gen.retry === 'none' ? 1 : gen.retry === 'until-deadline' ? INF : gen.retry.maxAttempts;
    const rec: CallRec = {
      id,
      gen,
      startedAt: fake.now(),
      deadlineMs: gen.deadlineMs ?? sc.deadlineMs,
      maxAttempts,
      autoCap: sc.maxAttempts === undefined && gen.retry === undefined,
      triedConns: new Set(),
      hedges: hedgesAllowed,
      options: plain ? undefined : opts,
      attempts: 0,
      hedged: 0,
      unauthorized: 0,
      openOn: new Map(),
      final: undefined,
      endedBy: undefined,
      endedAt: undefined,
      failedError: undefined,
      settledCount: 0,
      settledAt: undefined,
      rejection: undefined,
      resolved: false,
      excluded: (gen.exclude ?? []).flatMap((i) => current.get(names[i]!) ?? []),
      refused: (pin !== undefined && !current.has(pin)) || (gen.exclude?.some((i) => !current.has(names[i]!)) ?? false),
      queuedAt: undefined,
    };
    calls.set(id, rec);
    const p = plain ? pool.execute(opFor(id)) : pool.execute(opFor(id), opts);
    promises.push(
      p.then(
        () => {
          rec.settledCount++;
          rec.settledAt = fake.now();
          rec.resolved = true;
        },
        (err: unknown) => {
          rec.settledCount++;
          rec.settledAt = fake.now();
          rec.rejection = err;
        },
      ),
    );
  };
  for (const gen of [...sc.calls].sort((x, y) => x.at - y.at)) act(() => startCall(gen), gen.at);

  // setEndpoints in the middle of traffic.
  for (const ch of [...sc.changes].sort((x, y) => x.at - y.at)) {
    act(() => {
      const list: EndpointConfig<Conn>[] = [];
      const next = new Map<string, Conn>();
      ch.slots.slice(0, n).forEach((slot, i) => {
        const name = names[i]!;
        const old = current.get(name);
        const e = sc.endpoints[i]!;
        if (slot === 'absent') return;
        if (slot === 'keep' && old !== undefined) {
          list.push(configOf.get(name)!);
          next.set(name, old);
        } else if (slot === 'limit' && old !== undefined) {
          // Same connection and settings, another rate limit: the state is kept with a fresh quota.
          const rl: RateLimitOptions = { perSecond: 3 + i };
          list.push({ ...configOf.get(name)!, rateLimit: rl });
          next.set(name, old);
          old.moved = true;
        } else if (slot === 'settings' && old !== undefined) {
          // Same connection, new settings (priority, weight, maxInFlight): the same endpoint,
          // changed in place; calls running still know it (pin, exclude, tried).
          const { maxInFlight, ...was } = configOf.get(name)!;
          list.push({ ...was, priority: ch.priority, weight: (was.weight ?? 1) === 1 ? 2 : 1, ...(maxInFlight === undefined ? { maxInFlight: 1 } : {}) });
          next.set(name, old);
        } else {
          const conn = newConn(i);
          list.push(configFor(i, conn, e, slot === 'replace' ? ch.priority : e.priority));
          next.set(name, conn);
          // It rejoins a group declared by a regrouping: the group's level, which hints may have moved, paces it.
          if (declared.some((g) => g.includes(name))) conn.moved = true;
        }
      });
      if (list.length === 0) return;
      const before = pool.endpointNames.join(',');
      try {
        pool.setEndpoints(list);
      } catch (error) {
        if (!isPoolError(error) || error.code !== 'INVALID_OPTIONS') v(`setEndpoints threw ${String(error)}`);
        if (pool.endpointNames.join(',') !== before) v('setEndpoints threw and still changed the endpoints');
        return;
      }
      changes++;
      const prevConn = new Map(current);
      current.clear();
      configOf.clear();
      for (const c of list) {
        current.set(c.name, next.get(c.name)!);
        configOf.set(c.name, c);
      }
      for (const name of [...disabledNames]) if (current.get(name) !== prevConn.get(name)) disabledNames.delete(name);
      groupsNow = groupsNow.map((g) => g.filter((x) => current.has(x))).filter((g) => g.length >= 2);
      if (pool.endpointNames.join(',') !== list.map((c) => c.name).join(',')) v(`endpointNames ${pool.endpointNames.join(',')} after setEndpoints(${list.map((c) => c.name).join(',')})`);
      // A kept endpoint keeps its counters; a new one starts from zero.
      for (const [name, conn] of current) {
        const st = statOf(name);
        if (st === undefined || st.attempts !== conn.starts || !inFlightAgrees(name, st.inFlight, conn)) v(`${name} after setEndpoints: stats attempts ${st?.attempts} inFlight ${st?.inFlight}, events say ${conn.starts} and ${conn.open}`);
      }
    }, ch.at);
  }

  // Health probes: they never feed the breakers and always resolve (finite timeout).
  const probeRuns: Promise<unknown>[] = [];
  for (const pr of sc.probes) {
    act(() => {
      const breakers = pool.stats().map((s) => `${s.name}:${s.breaker.state}:${s.consecutiveFailures}`).join(' ');
      const started = fake.now();
      probeRuns.push(
        pool
          .probeHealth((_conn, ctx) => new Promise((resolve, reject) => {
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
            fake.setTimeout(() => (pr.d % 2 === 0 ? resolve(1) : reject(new MixError('transient'))), pr.d);
          }), { timeoutMs: pr.timeoutMs })
          .then(
            (report) => {
              tally?.onProbes(report);
              if (closedAt !== undefined && closedAt < started) v('probeHealth ran on a closed pool');
              for (const r of report) {
                if (!r.ok && isPoolError(r.error) && r.error.code === 'CLOSED' && closedAt === undefined) v(`probe of ${r.endpoint} ended CLOSED before close()`);
              }
            },
            (err: unknown) => {
              if (closedAt === undefined || !isPoolError(err) || err.code !== 'CLOSED') v(`probeHealth rejected: ${String(err)}`);
            },
          ),
      );
      void breakers;
    }, pr.at);
  }

  const checkDisabled = (): void => {
    for (const st of pool.stats()) if ((st.status === 'disabled') !== disabledNames.has(st.name)) v(`${st.name}: stats() status ${st.status}, the events say ${disabledNames.has(st.name) ? '' : 'not '}disabled`);
  };
  // Hints: enableEndpoint, report() and group toggles in the middle of traffic.
  for (const en of sc.hints?.enables ?? []) {
    act(() => {
      const name = names[en.ep]!;
      if (!current.has(name)) {
        try {
          pool.enableEndpoint(name);
          v(`enableEndpoint(${name}) of an endpoint not in the pool did not throw`);
        } catch (error) {
          if (!isPoolError(error) || error.code !== 'INVALID_OPTIONS') v(`enableEndpoint(${name}) threw ${String(error)}`);
        }
        return;
      }
      const was = disabledNames.has(name);
      const d = depth + 1;
      const before = enabledEvents[d] ?? 0;
      pool.enableEndpoint(name);
      if (disabledNames.has(name)) v(`${name} still disabled after enableEndpoint`);
      const emitted = (enabledEvents[d] ?? 0) - before;
      if (emitted !== (was ? 1 : 0)) v(`enableEndpoint(${name}) emitted ${emitted} endpoint-enabled event(s) (it was ${was ? '' : 'not '}disabled)`);
      checkDisabled();
    }, en.at);
  }
  for (const r of sc.hints?.reports ?? []) {
    act(() => {
      const name = names[r.ep]!;
      const d = depth + 1;
      const before = reportEvents[d] ?? 0;
      // A counter only goes up: a negative value is refused, as a name not in the pool is.
      const takes = current.has(name) && r.value >= 0;
      try {
        pool.report(name, 'rows', r.value);
        if (!takes) v(`report(${name}, rows, ${r.value}) did not throw (${current.has(name) ? 'a negative value' : 'not in the pool'})`);
      } catch (error) {
        if (takes || !isPoolError(error) || error.code !== 'INVALID_OPTIONS') v(`report(${name}, rows, ${r.value}) threw ${String(error)}`);
      }
      const emitted = (reportEvents[d] ?? 0) - before;
      if (emitted !== (takes ? 1 : 0)) v(`report(${name}, rows, ${r.value}) emitted ${emitted} report event(s)`);
    }, r.at);
  }
  for (const at of sc.hints?.regroups ?? []) {
    act(() => {
      if (n < 2) return;
      const [a, b] = [names[0]!, names[1]!];
      const groups = groupsNow.length > 0 ? [] : [[a, b]];
      const order = pool.endpointNames;
      const ca = configOf.get(a);
      const cb = configOf.get(b);
      // A group's members agree on their limit: b takes a's.
      let nb = cb;
      if (groups.length > 0 && ca !== undefined && cb !== undefined) {
        const { rateLimit: _own, ...rest } = cb;
        nb = ca.rateLimit === undefined ? rest : { ...rest, rateLimit: ca.rateLimit };
      }
      const list = order.map((name) => (name === b && nb !== undefined ? nb : configOf.get(name)!));
      try {
        pool.setEndpoints(list, groups);
      } catch (error) {
        v(`setEndpoints regrouping threw ${String(error)}`);
        return;
      }
      changes++;
      for (const c of list) configOf.set(c.name, c);
      for (const name of [a, b]) {
        const conn = current.get(name);
        if (conn !== undefined) conn.moved = true;
      }
      groupsNow = groups.map((g) => g.filter((x) => current.has(x))).filter((g) => g.length >= 2);
      declared = groups.map((g) => [...g]);
      for (const [name, conn] of current) {
        const st = statOf(name);
        if (st === undefined || st.attempts !== conn.starts || !inFlightAgrees(name, st.inFlight, conn)) v(`${name} after regrouping: stats attempts ${st?.attempts} inFlight ${st?.inFlight}, events say ${conn.starts} and ${conn.open}`);
      }
      checkDisabled();
    }, at);
  }

  let closing: Promise<void> | undefined;
  let closeResolvedWith = -1;
  let closeResolvedAt: number | undefined;
  /** The latest time close() may resolve, by the `abortAfterMs` given to it. */
  let abortBy = INF;
  const closeWith = (afterMs: number | undefined): void => {
    const again = pool.close(afterMs === undefined ? undefined : { abortAfterMs: afterMs });
    if (closing !== undefined && again !== closing) v('a second close() returned another promise');
    abortBy = Math.min(abortBy, fake.now() + (afterMs ?? INF));
    closing ??= again;
  };
  if (sc.closeAt !== undefined) {
    const { afterMs, later } = sc.closeAbort ?? { afterMs: undefined };
    act(() => {
      closedAt = fake.now();
      closeWith(afterMs);
      void closing!.then(() => {
        closeResolvedWith = clock.live.size;
        closeResolvedAt = fake.now();
      });
    }, sc.closeAt);
    if (later !== undefined) act(() => closeWith(later.afterMs), sc.closeAt + later.laterMs);
  }

  const lastAt = (types === undefined ? 0 : REENTRANT_FALLBACK_MS) + Math.max(...sc.calls.map((c) => c.at), sc.closeAt ?? 0, ...sc.changes.map((c) => c.at), ...sc.aborts.map((a) => a ?? 0), ...sc.probes.map((p) => p.at + p.timeoutMs));
  await fake.advance(lastAt + 3000);
  // Every caller gives up; calls without a signal run to their deadline (finite, or ended by close()).
  controllers.forEach((ac, k) => {
    if (ac.signal.aborted) return;
    abortedAt[k] = fake.now();
    ac.abort(new Error('end of scenario'));
  });
  let guard = 0;
  while ([...calls.values()].some((c) => c.settledCount === 0) && guard++ < 20) await fake.advance(5000);
  if (closing === undefined && [...calls.values()].some((c) => c.settledCount === 0)) {
    // Calls with no deadline and no signal (a hang with no timeout): close() ends what waits; the rest are the scenario's.
    closedAt = fake.now();
    closing = pool.close();
    void closing.then(() => {
      closeResolvedWith = clock.live.size;
    });
    await fake.advance(5000);
  }
  await Promise.race([Promise.all(promises), fake.advance(0)]);

  const endings: Record<string, number> = {};
  for (const c of calls.values()) {
    const code = c.resolved ? 'ok' : isPoolError(c.rejection) ? c.rejection.code : c.settledCount === 0 ? 'unsettled' : 'other';
    endings[code] = (endings[code] ?? 0) + 1;
    const hangsForever = c.deadlineMs === INF && (c.gen.attemptTimeoutMs ?? sc.attemptTimeoutMs) === INF;
    if (c.settledCount === 0) {
      // Only a call that could wait forever may still be running: no deadline, no timeout, and a hang that ignores its signal.
      if (!hangsForever || abortBy !== INF) v(`call ${c.id} never settled (deadline ${c.deadlineMs}${abortBy !== INF ? ', close() with abortAfterMs' : ''})`);
      continue;
    }
    if (c.settledCount !== 1) v(`call ${c.id} settled ${c.settledCount} times`);
    if (c.resolved && c.endedBy !== 'success') v(`call ${c.id} resolved without attempt-success (${c.endedBy})`);
    if (!c.resolved) {
      if (!isPoolError(c.rejection)) v(`call ${c.id} rejected with a non-PoolError: ${String(c.rejection)}`);
      else {
        const code = c.rejection.code;
        if (!CODES.has(code) && !c.refused) v(`call ${c.id}: undocumented code ${code}`);
        if (c.refused) {
          if (code !== 'PIN_UNAVAILABLE' && code !== 'INVALID_OPTIONS') v(`call ${c.id} named a removed endpoint and failed ${code}`);
          if (c.endedBy !== undefined) v(`call ${c.id} was refused but has a final event`);
        } else if (c.endedBy !== 'failure') v(`call ${c.id} rejected (${code}) without call-failed (${c.endedBy})`);
        else if (c.failedError !== c.rejection) v(`call ${c.id}: the rejection is not call-failed's error`);
        if (code === 'RETRY_BUDGET_EXHAUSTED' && sc.retryBudget === undefined) v(`call ${c.id}: RETRY_BUDGET_EXHAUSTED with no retry budget`);
        if ((code === 'UNAUTHORIZED' || code === 'AUTH') && !anyUnauthorized) v(`call ${c.id}: ${code} with no 401 in the scripts`);
        if (code === 'AUTH' && auth === undefined) v(`call ${c.id}: AUTH with no refreshAuth`);
        if (code === 'CLOSED' && (closedAt === undefined || c.settledAt! < closedAt)) v(`call ${c.id}: CLOSED before close()`);
        if (code === 'ABORTED' && (c.gen.signal === undefined || abortedAt[c.gen.signal] === undefined) && closedAt === undefined) v(`call ${c.id}: ABORTED with no abort`);
        if (code === 'DEADLINE_EXCEEDED' && c.deadlineMs === INF) v(`call ${c.id}: DEADLINE_EXCEEDED with no deadline`);
        if (c.final === 'permanent' && code !== 'PERMANENT' && code !== 'ABORTED') v(`call ${c.id}: ${code} after a permanent failure`);
      }
    }
    if (c.deadlineMs !== INF) {
      if (c.endedAt !== undefined && c.endedAt - c.startedAt > c.deadlineMs + 1 + (sc.resolutionMs ?? 0)) v(`call ${c.id} ended ${c.endedAt - c.startedAt} ms after it started, deadline ${c.deadlineMs}`);
      if (c.settledAt! - c.startedAt > c.deadlineMs + 1 + (sc.resolutionMs ?? 0)) v(`call ${c.id} settled ${c.settledAt! - c.startedAt} ms after it started, deadline ${c.deadlineMs}`);
    }
    if (c.gen.signal !== undefined) {
      const at = abortedAt[c.gen.signal];
      if (at !== undefined && c.settledAt! > Math.max(at, c.startedAt)) v(`call ${c.id} settled at ${c.settledAt! - T0}, after its signal aborted at ${at - T0}`);
    }
  }
  if (closing !== undefined) {
    await Promise.race([closing, fake.advance(0)]);
    if (closeResolvedWith === -1 && [...calls.values()].every((c) => c.settledCount === 1)) v('close() did not resolve once every call settled');
    else if (closeResolvedWith > 0) v(`close() resolved while the pool still owned ${closeResolvedWith} timer(s)`);
    // The pool's clock reads behind the test's by up to its jitter, stall and resolution.
    const late = (sc.jitterMs ?? 0) + (sc.stallMs ?? 0) + (sc.resolutionMs ?? 0) + 1;
    if (abortBy !== INF && (closeResolvedAt ?? INF) > abortBy + late) v(`close() resolved at ${(closeResolvedAt ?? INF) - T0}, abortAfterMs ended running attempts at ${abortBy - T0}`);
  }
  const allSettled = [...calls.values()].every((c) => c.settledCount === 1);
  if (allSettled) {
    for (const [key, conn] of attemptConn) if (!ended.has(key)) v(`attempt ${key} on ${conn.name} has no terminal event`);
    if (pool.activeCalls !== 0) v(`activeCalls ${pool.activeCalls} when every call settled`);
    if (pool.pendingCalls !== 0) v(`pendingCalls ${pool.pendingCalls} when every call settled`);
    // A credential refresh outlives the call that started it (it is the endpoint's, shared by
    // the calls to come: src/call/auth.ts); its timeout is the only timer it owns, and its
    // end (one `auth-refresh`) the only event it may cause.
    const running = refreshing;
    if (clock.owned > running) v(`the pool still owns ${clock.owned} timer(s) after every call settled (${running} credential refresh(es) running)`);
    live.forEach((k, i) => {
      if (k !== 0) v(`caller signal ${i}: ${k} abort listener(s) left after every call settled`);
    });
    // Late answers of cancelled attempts: nothing may happen.
    const before = events;
    const metricsBefore = tally?.calls ?? 0;
    const authBefore = authEvents;
    await fake.runAll(100_000);
    if ((tally?.calls ?? 0) !== metricsBefore) v(`${(tally?.calls ?? 0) - metricsBefore} metric(s) recorded after every call had settled`);
    const refreshEnds = authEvents - authBefore;
    if (events - before !== refreshEnds || refreshEnds > running) v(`${events - before} event(s) after every call had settled (${refreshEnds} refresh end(s) of ${running} running)`);
    if (clock.owned !== 0) v(`the pool owns ${clock.owned} timer(s) once everything ran`);
  }
  await Promise.all(probeRuns);
  for (const [name, conn] of current) {
    const st = statOf(name);
    if (st === undefined) {
      v(`${name} missing from stats()`);
      continue;
    }
    if (st.attempts !== conn.starts || st.successes !== conn.successes || st.failures !== conn.failures || st.rateLimited !== conn.rateLimited || st.inFlight !== conn.open) {
      v(
        `${name}: stats() attempts/successes/failures/rateLimited/inFlight ${st.attempts}/${st.successes}/${st.failures}/${st.rateLimited}/${st.inFlight}, events ${conn.starts}/${conn.successes}/${conn.failures}/${conn.rateLimited}/${conn.open}`,
      );
    }
  }
  checkDisabled();
  tally?.check(v);
  checkLimits(sc, current, configOf, v);
  if (clock.set > clock.cap) v(`runaway: the pool set more than ${clock.cap} timers in one run`);
  if (clock.badDelays.length > 0) v(`timers with bad delays: ${clock.badDelays.slice(0, 3).join(', ')}`);
  maxCalls = 0;
  if (allSettled) {
    await pool.close();
    if (clock.live.size !== 0) v(`${clock.live.size} pool timer(s) left after close() resolved`);
  }
  const forced = [...calls.values()].filter((c) => isPoolError(c.rejection) && c.rejection.code === 'CLOSED' && c.rejection.message.includes('abortAfterMs')).length;
  return { violations, endings, attempts, hedges, changes, forced };
}

/** A TrackedClock that stops scheduling after `cap` timers in one run (a runaway pool would spin the test forever). */
class CappedClock extends TrackedClock {
  set = 0;
  readonly cap = 200_000;
  override setTimeout(fn: () => void, ms: number, background?: boolean): ReturnType<TrackedClock['setTimeout']> {
    if (++this.set > this.cap) return this.fake.setTimeout(() => undefined, 1e12, true);
    return super.setTimeout(fn, ms, background);
  }
}

/**
 * The configured limits held, for endpoints whose limit nothing else may move: alone (not
 * in the group), never replaced, not adaptive, and no ceiling hint in their script.
 */
function checkLimits(sc: MixScenario, current: Map<string, Conn>, configOf: Map<string, EndpointConfig<Conn>>, v: (msg: string) => void): void {
  sc.endpoints.forEach((_e, i) => {
    const conn = current.get(MIX_NAMES[i]!);
    const rl = configOf.get(MIX_NAMES[i]!)?.rateLimit;
    if (conn === undefined || conn.moved || rl === undefined || rl.adaptive !== undefined || sc.group?.includes(i) === true) return;
    const ts = conn.startTimes;
    if (rl.perDay !== undefined) {
      const cap = Math.ceil(rl.perDay * (rl.dailyStopFraction ?? 0.95));
      if (ts.length > cap) v(`${conn.name}: ${ts.length} attempts in a day, perDay ${rl.perDay} stopping at ${rl.dailyStopFraction ?? 0.95}`);
    }
    const perSecond = rl.perSecond;
    if (perSecond === undefined) return;
    // Start times are stamped after the pool's reading, by up to `jitterMs`.
    const tol = (sc.jitterMs ?? 0) + (sc.resolutionMs ?? 0);
    if (rl.mode === 'paced') {
      const margin = rl.marginMs ?? 25;
      const spacing = (1000 / perSecond) * (1 + margin / 1000);
      // A call may go up to 1 ms early, within the margin (never closer than 1000 / perSecond).
      const least = spacing - Math.min(1, spacing - 1000 / perSecond);
      for (let k = 1; k < ts.length; k++) {
        if (ts[k]! - ts[k - 1]! < least - tol - 1e-6) {
          v(`${conn.name}: paced at ${perSecond}/s (spacing ${spacing.toFixed(2)} ms, at least ${least.toFixed(2)}), attempts ${ts[k]! - ts[k - 1]!} ms apart`);
          break;
        }
      }
      // And at most floor(perSecond) starts in any 1000 + margin ms, less the same early start.
      const slots = Math.floor(perSecond);
      if (perSecond >= 1 && slots <= 64) {
        const span = 1000 + margin - Math.min(1, margin);
        for (let k = slots; k < ts.length; k++) {
          if (ts[k]! - ts[k - slots]! < span - tol - 1e-6) {
            v(`${conn.name}: paced at ${perSecond}/s, ${slots + 1} attempts in ${ts[k]! - ts[k - slots]!} ms (window ${span} ms)`);
            break;
          }
        }
      }
      return;
    }
    const burst = rl.burst ?? Math.max(1, Math.ceil(perSecond));
    for (let a = 0; a < ts.length; a++) {
      for (let b = a; b < ts.length; b++) {
        if (b - a + 1 > burst + (perSecond * (ts[b]! - ts[a]! + tol)) / 1000 + 1e-9) {
          v(`${conn.name}: ${b - a + 1} attempts in ${ts[b]! - ts[a]!} ms, limit ${perSecond}/s burst ${burst}`);
          return;
        }
      }
    }
  });
}
