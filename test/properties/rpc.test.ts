/**
 * Properties of the RPC read layer (src/rpc/reads.ts, coalesce.ts, quorum.ts) over a real
 * Pool on the FakeClock: generated endpoint scripts (answers, failures, hangs), callers of
 * a few methods and params arriving close together (so identical reads overlap), each with
 * or without its own signal (aborting at a generated time), deadline and pin, coalescing
 * on some methods and a quorum on one.
 *
 * Checked: every caller settles once, with a value or a PoolError of a documented code;
 * never later than its own deadline (+1 ms), and never with DEADLINE_EXCEEDED before its own
 * deadline has passed since the request it waits on started; an abort settles it at once
 * with ABORTED;
 * callers that shared one upstream request (by the coalescer's own bookkeeping, modelled
 * here from when `send` runs) get the same value or the same error, unless they left; the
 * shared request's signal aborts only when every caller of it has left; in the end nothing
 * is in flight, no timer is owned and no abort listener is left on a caller's signal. With
 * `pool.close({ abortAfterMs })` at a generated time in a fifth of the runs (forty-eighth
 * session): a caller after it fails CLOSED at once (one joined a shared request still running,
 * and got its value), every caller before it has settled once it resolves, and it resolves by
 * `abortAfterMs`.
 *
 * Run on the exact clock, jittered with stalls, and (fortieth session) with callers starting and
 * their signals aborting from inside the pool's callbacks (`Clocking.inside`).
 *
 * Seeded: a fixed seed by default; `FC_SEED` (with `FC_PATH`) replays a failure, `FC_RPC_RUNS`
 * sets the runs.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type AttemptContext, type ClassifyResult, type ExecuteOptions } from '../../src/index.js';
import { RpcReads } from '../../src/rpc/reads.js';
import { isEndpointTaken } from '../../src/rpc/quorum.js';
import { QuorumError } from '../../src/rpc/quorum-error.js';
import { FakeClock } from '../../src/testing/index.js';
import { checkSeeded, recordSettlement } from './run.js';
import { TrackedClock, seeded } from './sim.js';

const RUNS = Number(process.env['FC_RPC_RUNS'] ?? 200);
const SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 20261202;
// Names a plain object would take for its prototype's members (a quorum once weighed `constructor` as Object itself).
const NAMES = ['a', 'constructor', 'toString'];
const METHODS = ['m1', 'm2', 'm3'] as const;

type Step = { k: 'ok'; d: number } | { k: 'fail'; d: number; cls: 'transient' | 'permanent' } | { k: 'hang'; honour: boolean };

interface Caller {
  readonly at: number;
  readonly method: (typeof METHODS)[number];
  readonly param: number;
  /** When its own signal aborts (ms after it started), none, or no signal at all. */
  readonly signal: 'none' | number | undefined;
  readonly deadlineMs: number | undefined;
  readonly pin: number | undefined;
}

interface Scenario {
  readonly scripts: readonly (readonly Step[])[];
  readonly maxAttempts: number;
  readonly attemptTimeoutMs: number;
  readonly deadlineMs: number;
  /** m2 needs this quorum (and is coalesced too), or no quorum. */
  readonly quorum: number | undefined;
  readonly stallMs: number;
  readonly callers: readonly Caller[];
  /** `pool.close({ abortAfterMs })` at `at` ms (forty-eighth session), or never before the end. */
  readonly closing: { readonly at: number; readonly abortAfterMs: number | undefined } | undefined;
}

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ k: fc.constant('ok' as const), d: fc.integer({ min: 0, max: 300 }) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('fail' as const), d: fc.integer({ min: 0, max: 200 }), cls: fc.constantFrom('transient' as const, 'permanent' as const) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('hang' as const), honour: fc.boolean() }) },
);

const caller: fc.Arbitrary<Caller> = fc.record({
  at: fc.integer({ min: 0, max: 600 }),
  method: fc.constantFrom(...METHODS),
  param: fc.integer({ min: 0, max: 1 }),
  signal: fc.oneof(fc.constant(undefined), fc.constant('none' as const), fc.integer({ min: 0, max: 900 })),
  // A few common numbers too: callers on the same deadline share a request.
  deadlineMs: fc.oneof(
    { weight: 6, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 1500 }) },
    { weight: 2, arbitrary: fc.constantFrom(50, 300, 1000) },
  ),
  pin: fc.oneof({ weight: 9, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 }) }),
});

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  scripts: fc.array(fc.array(step, { minLength: 1, maxLength: 5 }), { minLength: 3, maxLength: 3 }),
  maxAttempts: fc.integer({ min: 1, max: 3 }),
  attemptTimeoutMs: fc.integer({ min: 50, max: 800 }),
  deadlineMs: fc.integer({ min: 100, max: 2000 }),
  quorum: fc.oneof(fc.constant(undefined), fc.constant(2)),
  stallMs: fc.integer({ min: 50, max: 600 }),
  callers: fc.array(caller, { minLength: 1, maxLength: 14 }),
  closing: fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.record({ at: fc.integer({ min: 0, max: 700 }), abortAfterMs: fc.constantFrom(undefined, 0, 1, 100, Infinity) }) },
  ),
});

class RpcFail extends Error {
  constructor(readonly cls: ClassifyResult) {
    super(`scripted ${String(cls)}`);
  }
}

const CODES = new Set(['PERMANENT', 'RETRIES_EXHAUSTED', 'DEADLINE_EXCEEDED', 'NO_ENDPOINT', 'PIN_UNAVAILABLE', 'ABORTED', 'QUORUM_NOT_MET', 'INVALID_OPTIONS', 'CLOSED']);

interface Rec {
  readonly id: number;
  readonly gen: Caller;
  readonly startedAt: number;
  /** The same, and when it settled, as the pool's clock read them (`TrackedClock.stamp`). */
  readonly startStamp: number;
  settledStamp: number | undefined;
  readonly deadline: number;
  /** The shared request it joined (coalesced methods), by number. */
  group: number | undefined;
  settled: number;
  settledAt: number | undefined;
  value: unknown;
  error: unknown;
  abortedAt: number | undefined;
  listeners: number;
  /** Started after `close()` was called. */
  afterClose: boolean;
}

interface Shared {
  readonly id: number;
  readonly key: string;
  /** The signal of the shared request (not for a quorum read, whose legs have the quorum's). */
  readonly signal: AbortSignal | undefined;
  members: Rec[];
}

/** A number from the scenario, to seed its clock's draws (a replay draws the same). */
function hashOf(sc: Scenario): number {
  const text = JSON.stringify(sc);
  let h = 0x2545f491;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** Time between clock readings and stalls (`TrackedClock`): none by default. */
interface Clocking {
  readonly jitterMs?: number;
  readonly stallMs?: number;
  /**
   * Callers start, and their signals abort, from inside the first callback the pool makes once
   * their time came (an event listener, the operation as the pool calls it, an attempt signal's
   * abort listener), synchronously, as a user's code would; 250 ms later on a timer of their own
   * if none came (fortieth session).
   */
  readonly inside?: boolean;
}

async function run(sc: Scenario, clocking: Clocking = {}): Promise<{ violations: string[]; endings: Record<string, number>; joined: number; ran: { inside: number; fallback: number } }> {
  const T0 = 1_000_000;
  const fake = new FakeClock(T0);
  const clock = new TrackedClock(fake, clocking.jitterMs ?? 0, seeded(hashOf(sc)), clocking.stallMs ?? 0);
  const violations: string[] = [];
  const v = (m: string): void => {
    if (violations.length < 20) violations.push(`[t=${fake.now() - T0}] ${m}`);
  };
  let seq = 0;
  const cursors = NAMES.map(() => 0);
  /** What waits for a callback to run from (`clocking.inside`). */
  const due: (() => void)[] = [];
  const ran = { inside: 0, fallback: 0 };
  const drain = (): void => {
    if (clocking.inside !== true) return;
    for (const f of due.splice(0)) {
      ran.inside++;
      f();
    }
  };
  const at = (ms: number, f: () => void): void => {
    if (clocking.inside !== true) return void fake.setTimeout(f, ms);
    fake.setTimeout(() => {
      due.push(f);
      fake.setTimeout(() => {
        const i = due.indexOf(f);
        if (i < 0) return;
        due.splice(i, 1);
        ran.fallback++;
        f();
      }, 250);
    }, ms);
  };
  const pool = new Pool<number>({
    endpoints: NAMES.map((name, i) => ({ name, conn: i })),
    classify: (e) => (isEndpointTaken(e) ? 'unsupported' : e instanceof RpcFail ? e.cls : 'permanent'),
    maxAttempts: sc.maxAttempts,
    attemptTimeoutMs: sc.attemptTimeoutMs,
    deadlineMs: sc.deadlineMs,
    backoff: { initialMs: 10, maxMs: 50 },
    breaker: { threshold: 100 },
    clock,
    // Its own draws (backoff jitter), so that a counterexample replays.
    random: seeded(104_729),
    onEvent: drain,
  });
  const reads = new RpcReads(
    { coalesce: ['m1', 'm2'], ...(sc.quorum === undefined ? {} : { quorum: { methods: { m2: sc.quorum }, stallMs: sc.stallMs } }) },
    pool,
  );
  const op = (i: number, ctx: AttemptContext): Promise<unknown> => {
    const s = sc.scripts[i]![cursors[i]!++ % sc.scripts[i]!.length]!;
    drain();
    return new Promise((resolve, reject) => {
      if (s.k === 'hang') {
        if (s.honour) {
          ctx.signal.addEventListener('abort', () => {
            drain();
            reject(ctx.signal.reason);
          });
        }
        return;
      }
      // Answers agree across endpoints half the time (so quorums can be met).
      const value = `v${cursors[i]! % 2}`;
      fake.setTimeout(() => (s.k === 'ok' ? resolve(value) : reject(new RpcFail(s.cls))), s.d);
    });
  };
  /** The shared request each key has in flight, as the coalescer should see it. */
  const sharedNow = new Map<string, Shared>();
  const shared: Shared[] = [];
  const recs: Rec[] = [];
  const promises: Promise<void>[] = [];

  /** Still waiting on its shared request: not settled, and its signal has not aborted (a caller whose signal aborts leaves at once, though its promise settles a turn later). */
  const waits = (r: Rec): boolean => r.settled === 0 && r.abortedAt === undefined;
  const startCaller = (gen: Caller): void => {
    const ac = gen.signal === undefined ? undefined : new AbortController();
    const rec: Rec = {
      id: ++seq,
      gen,
      startedAt: fake.now(),
      startStamp: clock.stamp(),
      settledStamp: undefined,
      deadline: gen.deadlineMs ?? sc.deadlineMs,
      group: undefined,
      settled: 0,
      settledAt: undefined,
      value: undefined,
      error: undefined,
      abortedAt: undefined,
      listeners: 0,
      afterClose: closedAt !== undefined,
    };
    recs.push(rec);
    if (ac !== undefined) {
      const sig = ac.signal;
      const add = sig.addEventListener.bind(sig);
      const remove = sig.removeEventListener.bind(sig);
      const held = new Set<unknown>();
      sig.addEventListener = ((type: string, fn: EventListenerOrEventListenerObject, o?: AddEventListenerOptions | boolean) => {
        if (type === 'abort' && !held.has(fn)) {
          held.add(fn);
          rec.listeners++;
        }
        add(type, fn, o);
      }) as typeof sig.addEventListener;
      sig.removeEventListener = ((type: string, fn: EventListenerOrEventListenerObject, o?: EventListenerOptions | boolean) => {
        if (type === 'abort' && held.delete(fn)) rec.listeners--;
        remove(type, fn, o);
      }) as typeof sig.removeEventListener;
      // A listener added with `once` is gone once it fired.
      add('abort', () => {
        rec.listeners = 0;
        held.clear();
      });
      if (typeof gen.signal === 'number') {
        at(gen.signal, () => {
          rec.abortedAt = fake.now();
          ac.abort(new Error('caller left'));
        });
      }
    }
    const exec: ExecuteOptions = {
      ...(ac === undefined ? {} : { signal: ac.signal }),
      ...(gen.deadlineMs === undefined ? {} : { deadlineMs: gen.deadlineMs }),
      ...(gen.pin === undefined ? {} : { pin: NAMES[gen.pin]! }),
    };
    // A quorum read cannot be pinned: refused before anything is shared.
    const refused = sc.quorum !== undefined && gen.method === 'm2' && gen.pin !== undefined;
    const coalesced = gen.method !== 'm3' && !refused;
    // Callers on the same deadline share (the pool's when they give none).
    const key = `${gen.method}/${gen.param}/${gen.pin ?? ''}/${gen.deadlineMs ?? sc.deadlineMs}`;
    /** The shared request this caller's request started (its first send: a quorum's legs are sent one by one). */
    let mine: Shared | undefined;
    const p = reads.request(gen.method, [gen.param], exec, undefined, (e, guard) => {
      if (coalesced && mine === undefined) {
        // Registered as it starts: a caller that starts inside it (from an event it emits) joins it.
        const running = sharedNow.get(key);
        if (running !== undefined && running.members.some(waits)) v(`caller ${rec.id} started a new request for ${key} while shared request ${running.id} was in flight`);
        mine = { id: shared.length + 1, key, signal: sc.quorum !== undefined && gen.method === 'm2' ? undefined : e.signal, members: [rec] };
        shared.push(mine);
        sharedNow.set(key, mine);
        rec.group = mine.id;
      }
      return pool.execute((i, ctx) => {
        try {
          guard?.(ctx.endpoint);
        } catch (error) {
          return Promise.reject(error);
        }
        return op(i, ctx);
      }, e);
    });
    // A caller after close() shares nothing: it fails CLOSED at once.
    if (coalesced && mine === undefined && !rec.afterClose) {
      // In flight: some caller of it still waits (once it settles, every waiting caller settles in the same turn).
      const running = sharedNow.get(key);
      if (running !== undefined && running.members.some((r) => r !== rec && waits(r))) {
        rec.group = running.id;
        running.members.push(rec);
      } else v(`caller ${rec.id} (${key}) sent nothing and had no shared request to join`);
    }
    promises.push(
      recordSettlement(p, rec, () => fake.now()).then(() => {
        rec.settledStamp = clock.stamp();
      }),
    );
  };
  /** When `close()` was called, and when it resolved. */
  let closedAt: number | undefined;
  let closeEnd: number | undefined;
  if (sc.closing !== undefined) {
    const { abortAfterMs } = sc.closing;
    at(sc.closing.at, () => {
      closedAt = fake.now();
      pool.close(abortAfterMs === undefined ? undefined : { abortAfterMs }).then(
        () => (closeEnd = fake.now()),
        (e: unknown) => v(`close() rejected: ${String(e)}`),
      );
    });
  }
  for (const c of [...sc.callers].sort((x, y) => x.at - y.at)) at(c.at, () => startCaller(c));
  // Quorum reads go through their own path; m2 may need one.
  await fake.advance(5000);
  let guard = 0;
  while (recs.some((r) => r.settled === 0) && guard++ < 10) await fake.advance(5000);
  await Promise.all(promises.map((p) => Promise.race([p, Promise.resolve()])));

  const endings: Record<string, number> = {};
  for (const r of recs) {
    const code = r.settled === 0 ? 'unsettled' : r.error === undefined ? 'ok' : isPoolError(r.error) ? r.error.code : 'other';
    endings[code] = (endings[code] ?? 0) + 1;
    if (r.settled === 0) {
      v(`caller ${r.id} (${r.gen.method}) never settled`);
      continue;
    }
    if (r.settled !== 1) v(`caller ${r.id} settled ${r.settled} times`);
    if (r.error !== undefined && (!isPoolError(r.error) || !CODES.has(r.error.code))) v(`caller ${r.id} rejected with ${String(r.error)}`);
    // A quorum not met: each answer weighs 1 (no weights configured), a leg that got none or reached
    // no endpoint 0, and no group of agreeing answers weighs what the read needed.
    if (r.error instanceof QuorumError) {
      const groups = new Map<number, number>();
      for (const a of r.error.answers) {
        if (a.weight !== (a.endpoint === undefined || a.kind === 'failed' ? 0 : 1)) v(`caller ${r.id}: quorum answer of ${String(a.endpoint)} weighs ${String(a.weight)}`);
        if (a.group !== undefined) groups.set(a.group, (groups.get(a.group) ?? 0) + a.weight);
      }
      const best = Math.max(0, ...groups.values());
      if (best !== r.error.bestWeight || best >= r.error.needed) v(`caller ${r.id}: quorum not met with a group weighing ${best} (bestWeight ${String(r.error.bestWeight)}, needed ${r.error.needed})`);
    }
    // A caller after close() fails CLOSED at once (a pinned quorum read INVALID_OPTIONS first); one
    // before it has settled by the time close() resolves. Before the forty-eighth session a caller
    // after close() could join a shared request still running and get its value.
    if (r.afterClose && (r.settledAt !== r.startedAt || !isPoolError(r.error) || (r.error.code !== 'CLOSED' && r.error.code !== 'INVALID_OPTIONS'))) v(`caller ${r.id} (${r.gen.method}) started after close() and ended ${r.settledAt! - r.startedAt} ms later with ${r.error === undefined ? `value ${String(r.value)}` : String(r.error)}`);
    if (!r.afterClose && closeEnd !== undefined && r.settledAt! > closeEnd) v(`caller ${r.id} (${r.gen.method}) settled at ${r.settledAt! - T0}, after close() resolved at ${closeEnd - T0}`);
    if (r.settledAt! - r.startedAt > r.deadline + 1) v(`caller ${r.id} (${r.gen.method}, group ${r.group}) settled ${r.settledAt! - r.startedAt} ms after it started, deadline ${r.deadline}`);
    // A deadline is not cut short by another caller's: it passes no earlier than the caller's own deadline from
    // when the request it waits on started (a joiner gives up at most the time since the request started).
    // On the pool's clock: a stall may have moved it on further than the fake clock.
    const since = r.group === undefined ? r.startStamp : shared[r.group - 1]!.members[0]!.startStamp;
    if (isPoolError(r.error) && r.error.code === 'DEADLINE_EXCEEDED' && r.settledStamp! - since < r.deadline) v(`caller ${r.id} (${r.gen.method}, group ${r.group}) failed DEADLINE_EXCEEDED ${r.settledStamp! - since} ms after its request started, deadline ${r.deadline}`);
    if (r.abortedAt !== undefined && r.settledAt! > Math.max(r.abortedAt, r.startedAt)) v(`caller ${r.id} settled at ${r.settledAt! - T0}, after its signal aborted at ${r.abortedAt - T0}`);
    if (r.abortedAt !== undefined && r.settledAt! >= r.abortedAt && r.error !== undefined && isPoolError(r.error) && r.error.code !== 'ABORTED') {
      // Settled exactly when it aborted with another error: allowed only if that error came first (same tick).
    }
    if (r.listeners !== 0) v(`caller ${r.id}: ${r.listeners} abort listener(s) left on its signal`);
  }
  for (const g of shared) {
    // Callers that stayed till the end get the same outcome.
    const left = (r: Rec): boolean => isPoolError(r.error) && r.error.code === 'ABORTED' && r.abortedAt !== undefined;
    const stayed = g.members.filter((r) => !left(r));
    const first = stayed[0];
    for (const r of stayed.slice(1)) {
      const same = first!.error === undefined ? r.error === undefined && r.value === first!.value : r.error === first!.error;
      if (!same) v(`shared request ${g.id} (${g.key}): caller ${first!.id} got ${first!.error === undefined ? String(first!.value) : String(first!.error)}, caller ${r.id} got ${r.error === undefined ? String(r.value) : String(r.error)}`);
    }
    if (g.signal?.aborted === true && stayed.length > 0) v(`shared request ${g.id} (${g.key}) aborted while caller(s) ${stayed.map((r) => r.id).join(',')} still waited`);
  }
  const st = reads.stats().coalesce;
  if (st.inFlight !== 0) v(`${st.inFlight} shared request(s) still in flight at the end`);
  if (pool.activeCalls !== 0) v(`${pool.activeCalls} pool call(s) still active`);
  if (closedAt !== undefined) {
    const limit = sc.closing!.abortAfterMs ?? Infinity;
    if (closeEnd === undefined) v(`close() at ${closedAt - T0} never resolved`);
    else if (limit !== Infinity && closeEnd - closedAt > limit) v(`close() at ${closedAt - T0} resolved ${closeEnd - closedAt} ms later (abortAfterMs ${limit})`);
  }
  await fake.runAll(100_000);
  if (clock.owned !== 0) v(`the pool owns ${clock.owned} timer(s) at the end`);
  await pool.close();
  return { violations, endings, joined: st.joined, ran };
}

describe('rpc reads: coalescing and quorum under generated faults', () => {
  test(`callers of one shared request agree, leave alone, and keep their deadlines (${RUNS} runs)`, async () => {
    let joined = 0;
    const endings: Record<string, number> = {};
    await checkSeeded('rpc', scenarioArb, run, {
      seed: SEED,
      runs: RUNS,
      seen: (o) => {
    joined += o.joined;
    for (const [k, n] of Object.entries(o.endings)) endings[k] = (endings[k] ?? 0) + n;
      },
    });
    expect(joined).toBeGreaterThan(RUNS / 4);
    expect(endings['ABORTED'] ?? 0).toBeGreaterThan(0);
    console.log('rpc endings', JSON.stringify(endings), 'joined', joined);
  }, 120_000);
  // The same with time passing between two readings of the clock (up to 0.4 ms) and stalls of up
  // to 250 ms before one timer in twenty (TrackedClock), at another seed.
  test(`the same, with time passing between clock readings and stalls (${Math.ceil(RUNS / 2)} runs)`, async () => {
    const clocking = { jitterMs: Number(process.env['FC_JITTER_MS'] ?? 0.4), stallMs: Number(process.env['FC_STALL_MS'] ?? 250) };
    let runs = 0;
    await checkSeeded('rpc, jittered', scenarioArb, (sc) => run(sc, clocking), { seed: SEED + 1, offset: 1, runs: Math.ceil(RUNS / 2), seen: () => void runs++ });
    expect(runs).toBe(Math.ceil(RUNS / 2));
  }, 120_000);
  // The same with callers starting, and their signals aborting, from inside the pool's callbacks
  // (its events, the operation, an attempt signal's abort listener), on the exact clock or jittered.
  test(`the same, with callers starting and leaving from inside the pool's callbacks (${RUNS} runs)`, async () => {
    const ran = { inside: 0, fallback: 0 };
    let joined = 0;
    const arb = fc.tuple(scenarioArb, fc.boolean());
    await checkSeeded('rpc, inside', arb, ([sc, jittered]) => run(sc, { inside: true, ...(jittered ? { jitterMs: 0.4, stallMs: 250 } : {}) }), {
      seed: SEED + 2,
      offset: 2,
      runs: RUNS,
      seen: (o) => {
        ran.inside += o.ran.inside;
        ran.fallback += o.ran.fallback;
        joined += o.joined;
      },
    });
    console.log('rpc callers started or aborted inside a callback', ran.inside, 'on their fallback timer', ran.fallback, 'joined', joined);
    expect(ran.inside).toBeGreaterThan(RUNS);
    expect(joined).toBeGreaterThan(RUNS / 4);
  }, 120_000);
});
