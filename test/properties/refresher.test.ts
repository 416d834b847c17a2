/**
 * `Refresher` over generated candidate sets, checks and sources (thirty-seventh session): what
 * docs/calls.md promises of it, on the fake clock.
 *
 * Generated: 1-6 candidates whose source (a function, or a fixed list) makes their `{ url, key }`
 * values anew each round, a key rotated now and then; per round, each check passes (after a
 * delay, maybe past the timeout), answers `false`, rejects, throws at once, hangs until its signal
 * aborts, or hangs ignoring it; the source answers, rejects, hangs or returns garbage; interval,
 * timeout, concurrency, `minHealthy`, order, a fallback and an `always` list; refreshes called by
 * hand; an `onRefresh` that throws; `stop()` at a random time or never; and in two runs of three
 * a shared survivor list whose steps publish a list, run this process's check on time or late,
 * serve a stale list while re-checking in the background, answer nothing, reject or hang.
 *
 * Promised, and checked on every run:
 * 1. runs never overlap; a run the timer started begins `intervalMs` after one ended;
 * 2. at most `concurrency` checks are in flight (from the call to its settling or its abort);
 * 3. a check not settled within `timeoutMs` has its signal aborted then; a run ends within
 *    its bound (the source's timeout, then one timeout per check a worker takes in turn);
 * 4. what is installed is what the checks of that run say: the survivors (in the given order, or
 *    fastest first), the fallback merged in below `minHealthy` (or nothing installed), `always`
 *    appended; the pool's names are the ones reported; `refresh()` never rejects;
 * 5. an endpoint kept by name with a connection equal as data keeps the pool's object (its state);
 *    one with other data gets the new value;
 * 6. after `stop()`: nothing is installed or reported, every check in flight is aborted, no check
 *    starts, and no timer is left; at the horizon no timer the Refresher armed keeps a process alive.
 * 7. with a shared list: the list's names among the candidates are installed in its order; one
 *    re-check at a time (2. holds across them); what a re-check hands the store is what its
 *    checks found, and nothing once `stop()` cut it short.
 * 8. (fortieth session) callbacks that act on it: the source, a check, the shared step or
 *    `onRefresh` calling `refresh()`, `stop()` or `pool.close()` synchronously. A `refresh()` from inside a run
 *    joins it (the source is never called twice at once); from `onRefresh` it starts the next
 *    run at once; every such `refresh()` settles with the run it joined or started.
 * 9. (fortieth session) the pool closed at a generated time: nothing is installed after it, no
 *    run started after it checks anything, and the refresher ends with no timer and no run.
 *    (forty-first session) From the moment of `close()` (from a timer or inside a callback) the
 *    refresher has no timer left and the promises of 6. hold, as after `stop()`.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Pool, Refresher, type EndpointConfig, type RefreshResult } from '../../src/index.js';
import { connectionOf } from '../../src/rpc/connections.js';
import { samePlainData } from '../../src/extras/same-connection.js';
import { FakeClock } from '../../src/testing/index.js';
import { checkSeeded } from './run.js';

const RUNS = Number(process.env['FC_REFRESHER_RUNS'] ?? 300);
const SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 2026120637;
const HORIZON_MS = 400_000;

type CheckKind = 'pass' | 'false' | 'reject' | 'throw' | 'hang' | 'hang-ignore';
type SourceKind = 'ok' | 'reject' | 'hang' | 'garbage';
interface CheckStep {
  readonly kind: CheckKind;
  readonly delayMs: number;
}
interface Scenario {
  readonly candidates: number;
  readonly checks: readonly (readonly CheckStep[])[];
  readonly rotate: readonly number[];
  readonly fromFunction: boolean;
  readonly source: readonly { kind: SourceKind; delayMs: number }[];
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly concurrency: number;
  readonly minHealthy: number;
  readonly order: 'given' | 'latency';
  readonly fallback: boolean;
  readonly always: boolean;
  readonly manualAt: readonly number[];
  readonly stopAt: number | undefined;
  readonly throwingObserver: boolean;
  /** The fallback and `always` lists name candidates too. */
  readonly overlap: boolean;
  /** A shared survivor list (as `createRedisHealth` gives), one step per run, cycled; undefined: none. */
  readonly shared: readonly SharedStep[] | undefined;
  /** Acting from inside the Refresher's own callbacks: on the `nth` time `where` is called, it calls `what` synchronously. */
  readonly inside: readonly Inside[];
  /** When the pool is closed (fortieth session), or never. */
  readonly closeAt: number | undefined;
}
type InsideWhere = 'source' | 'check' | 'onRefresh' | 'store';
interface Inside {
  readonly where: InsideWhere;
  readonly what: 'refresh' | 'stop' | 'close';
  readonly nth: number;
}
type SharedKind = 'list' | 'check' | 'stale' | 'none' | 'reject' | 'hang';
interface SharedStep {
  readonly kind: SharedKind;
  /** Before it answers, or before it calls the check (`check`, `stale`). */
  readonly delayMs: number;
  /** After the check, before it answers (`check`). */
  readonly afterMs: number;
  /** The published list (`list`, `stale`): candidate indices, 6 for a name no candidate has. */
  readonly list: readonly number[];
}

const checkStep = fc.record({
  kind: fc.constantFrom<CheckKind>('pass', 'pass', 'pass', 'false', 'reject', 'throw', 'hang', 'hang-ignore'),
  delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8_000 })),
});
const scenarioArb: fc.Arbitrary<Scenario> = fc.integer({ min: 1, max: 6 }).chain((n) =>
  fc.record({
    candidates: fc.constant(n),
    checks: fc.array(fc.array(checkStep, { minLength: 1, maxLength: 5 }), { minLength: n, maxLength: n }),
    rotate: fc.array(fc.integer({ min: 0, max: 40 }), { minLength: n, maxLength: n }),
    fromFunction: fc.boolean(),
    source: fc.array(fc.record({ kind: fc.constantFrom<SourceKind>('ok', 'ok', 'ok', 'reject', 'hang', 'garbage'), delayMs: fc.integer({ min: 0, max: 6_000 }) }), { minLength: 1, maxLength: 4 }),
    intervalMs: fc.integer({ min: 500, max: 90_000 }),
    timeoutMs: fc.integer({ min: 50, max: 5_000 }),
    concurrency: fc.integer({ min: 1, max: 4 }),
    minHealthy: fc.integer({ min: 1, max: 3 }),
    order: fc.constantFrom<'given' | 'latency'>('given', 'latency'),
    fallback: fc.boolean(),
    always: fc.boolean(),
    manualAt: fc.array(fc.integer({ min: 0, max: HORIZON_MS }), { maxLength: 3 }),
    stopAt: fc.option(fc.integer({ min: 0, max: HORIZON_MS }), { nil: undefined }),
    throwingObserver: fc.boolean(),
    overlap: fc.boolean(),
    shared: fc.option(
      fc.array(
        fc.record({
          kind: fc.constantFrom<SharedKind>('list', 'check', 'check', 'stale', 'stale', 'none', 'reject', 'hang'),
          delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 7_000 })),
          afterMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 7_000 })),
          list: fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { maxLength: 7 }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
      { nil: undefined, freq: 2 },
    ),
    inside: fc.oneof(
      { weight: 1, arbitrary: fc.constant([]) },
      {
        weight: 1,
        arbitrary: fc.array(
          fc.record({
            where: fc.constantFrom<InsideWhere>('source', 'check', 'onRefresh', 'onRefresh', 'store'),
            what: fc.constantFrom<'refresh' | 'stop' | 'close'>('refresh', 'refresh', 'refresh', 'stop', 'close'),
            nth: fc.integer({ min: 0, max: 6 }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
      },
    ),
    closeAt: fc.option(fc.integer({ min: 0, max: HORIZON_MS }), { nil: undefined, freq: 3 }),
  }),
);

interface Conn {
  readonly url: string;
  readonly key: string;
}
interface CheckRecord {
  /** Started by a re-check the shared list ran after its run's step had answered (its batch). */
  readonly batch: number | undefined;
  readonly name: string;
  readonly conn: Conn;
  readonly startedAt: number;
  readonly signal: AbortSignal;
  /** When it settled (resolved or rejected), as the Refresher sees it; undefined: never. */
  settledAt: number | undefined;
  passed: boolean;
  abortedAt: number | undefined;
  inFlight: boolean;
}

async function simulate(sc: Scenario) {
  const violations: string[] = [];
  const clock = new FakeClock(0);
  const t = () => clock.now();
  const seed: EndpointConfig<Conn> = { name: 'seed', conn: { url: 'https://seed', key: 's' } };
  const pool = new Pool<Conn>({ endpoints: [seed], classify: () => 'transient', clock });
  const names = Array.from({ length: sc.candidates }, (_, i) => `c${i}`);
  let sourceCalls = 0;
  /** The key of candidate i at source call k: rotated every `rotate[i]` calls (0: never). */
  const keyOf = (i: number, k: number) => `k${sc.rotate[i]! === 0 ? 0 : Math.floor(k / sc.rotate[i]!)}`;
  const fresh = (k: number): EndpointConfig<Conn>[] => names.map((name, i) => ({ name, conn: { url: `https://${name}`, key: keyOf(i, k) } }));
  const fixed = fresh(0);
  // With `overlap`, the fallback and `always` lists also name candidates (c0, and c1 when there is one): a survivor's entry wins.
  const fallback: EndpointConfig<Conn>[] = [{ name: 'fb', conn: { url: 'https://fb', key: 'f' } }, ...(sc.overlap ? [{ name: 'c0', conn: { url: 'https://c0', key: 'fallback' } }] : [])];
  const always: EndpointConfig<Conn>[] = [{ name: 'al', conn: { url: 'https://al', key: 'a' } }, ...(sc.overlap && sc.candidates > 1 ? [{ name: 'c1', conn: { url: 'https://c1', key: 'always' } }] : [])];
  const merged = (first: readonly string[], more: readonly EndpointConfig<Conn>[]) => [...first, ...more.map((c) => c.name).filter((n) => !first.includes(n))];
  const checks: CheckRecord[] = [];
  /**
   * The checks the shared list asked for and that have not settled, oldest first: a background
   * re-check's batch number, or `undefined` for the one a step waits for. The Refresher runs one
   * at a time (the next run and a later re-check wait for the last), so a check started now is
   * the oldest's.
   */
  let pendingBatches: { batch: number | undefined }[] = [];
  const checkCalls = new Map<string, number>();
  let inFlight = 0;
  let peak = 0;
  let stoppedAt: number | undefined;
  let closedAt: number | undefined;
  const leave = (r: CheckRecord) => {
    if (!r.inFlight) return;
    r.inFlight = false;
    inFlight--;
  };
  /** A delay on the clock, cleared when `signal` aborts (unless told to ignore it). */
  let ownTimers = 0;
  const sleep = (ms: number, signal: AbortSignal | undefined) =>
    new Promise<void>((resolve, reject) => {
      if (ms === 0) return resolve();
      ownTimers++;
      const h = clock.setTimeout(() => {
        ownTimers--;
        resolve();
      }, ms, true);
      signal?.addEventListener('abort', () => {
        clock.clearTimeout(h);
        ownTimers--;
        reject(signal.reason);
      });
    });
  /** Acting from inside a callback (sc.inside); `refresher` is set before any callback runs. */
  const reached = new Map<InsideWhere, number>();
  let refresher!: Refresher<Conn>;
  /** Refreshes asked for from inside: joined (a run was in progress: it must answer with that run) or started (from onRefresh). */
  const insideCalls: { at: number; where: InsideWhere; started: boolean; result?: RefreshResult; settled: boolean }[] = [];
  const noTimerLeft = (what: string) => {
    if (clock.pendingTimers - ownTimers !== 0) violations.push(`${clock.pendingTimers - ownTimers} timer(s) of the Refresher right after ${what} at ${t()} ms`);
  };
  /** close() stops a started refresher at once, as stop() does: no timer left, and from here on the promises of stop() hold. */
  const closeNow = () => {
    if (closedAt !== undefined) return;
    closedAt = t();
    void pool.close();
    noTimerLeft('close()');
    stoppedAt ??= closedAt;
  };
  const act = (where: InsideWhere, background = false) => {
    const k = reached.get(where) ?? 0;
    reached.set(where, k + 1);
    /** A refresh() this same callback made already (a second one joins it). */
    let again = false;
    for (const x of sc.inside) {
      if (x.where !== where || x.nth !== k) continue;
      if (x.what === 'stop') {
        stoppedAt ??= t();
        refresher.stop();
        noTimerLeft('stop()');
        continue;
      }
      if (x.what === 'close') {
        closeNow();
        continue;
      }
      const wasRunning = refresher.refreshing;
      // From onRefresh the run has ended: a new one starts. From its source, a check of a run or the store: it joins that run.
      // (A check of a background re-check belongs to no run: it joins one in progress or starts one.)
      if (where === 'onRefresh' && !again && wasRunning) violations.push(`refreshing still true inside onRefresh at ${t()} ms`);
      if (where !== 'onRefresh' && !background && !wasRunning) violations.push(`refreshing false inside the ${where} at ${t()} ms`);
      const rec = { at: t(), where, started: !wasRunning, settled: false } as (typeof insideCalls)[number];
      insideCalls.push(rec);
      const p = refresher.refresh();
      again = true;
      // (On a closed pool the run stops at once.)
      if (!refresher.refreshing && !pool.closed) violations.push(`refresh() inside the ${where} at ${t()} ms: no run in progress after it`);
      p.then(
        (r) => Object.assign(rec, { result: r, settled: true }),
        (e: unknown) => violations.push(`refresh() inside the ${where} rejected: ${String(e)}`),
      );
    }
  };
  let sourcesInFlight = 0;
  const check = (conn: Conn, signal: AbortSignal, candidate: EndpointConfig<Conn>): Promise<unknown> => {
    const name = candidate.name;
    if (stoppedAt !== undefined) violations.push(`check of ${name} started at ${t()} ms after stop() at ${stoppedAt} ms`);
    if (conn !== candidate.conn) violations.push(`check of ${name} got another connection than its candidate's`);
    const i = names.indexOf(name);
    const k = checkCalls.get(name) ?? 0;
    checkCalls.set(name, k + 1);
    const step = sc.checks[i]![k % sc.checks[i]!.length]!;
    const rec: CheckRecord = { batch: pendingBatches[0]?.batch, name, conn, startedAt: t(), signal, settledAt: undefined, passed: false, abortedAt: undefined, inFlight: true };
    checks.push(rec);
    inFlight++;
    peak = Math.max(peak, inFlight);
    if (inFlight > sc.concurrency) violations.push(`${inFlight} checks in flight at ${t()} ms, concurrency ${sc.concurrency}`);
    signal.addEventListener('abort', () => {
      rec.abortedAt ??= t();
      leave(rec);
    });
    act('check', rec.batch !== undefined);
    if (step.kind === 'throw') {
      rec.settledAt = t();
      leave(rec);
      throw new Error('check threw');
    }
    const body = async (): Promise<unknown> => {
      if (step.kind === 'hang') return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      if (step.kind === 'hang-ignore') return new Promise(() => undefined);
      await sleep(step.delayMs, signal);
      if (step.kind === 'reject') throw new Error('unhealthy');
      return step.kind === 'false' ? false : true;
    };
    const p = body();
    p.then(
      (v) => {
        if (rec.abortedAt === undefined) {
          rec.settledAt = t();
          rec.passed = v !== false;
        }
        leave(rec);
      },
      () => {
        if (rec.abortedAt === undefined) rec.settledAt = t();
        leave(rec);
      },
    );
    return p;
  };
  const source = async (signal: AbortSignal): Promise<readonly EndpointConfig<Conn>[]> => {
    const k = sourceCalls++;
    const step = sc.source[k % sc.source.length]!;
    // One run at a time: a source called while another call of it has not returned belongs to a second run.
    if (sourcesInFlight > 0) violations.push(`the source was called at ${t()} ms while another call of it had not returned`);
    sourcesInFlight++;
    try {
      act('source');
    } finally {
      sourcesInFlight--;
    }
    if (step.kind === 'hang') return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    await sleep(step.delayMs, signal);
    if (step.kind === 'reject') throw new Error('registry down');
    if (step.kind === 'garbage') return { not: 'a list' } as never;
    return JSON.parse(JSON.stringify(fresh(k))) as EndpointConfig<Conn>[];
  };

  /** The shared list's steps, one per call, and the re-checks it ran in the background. */
  const storeCalls: { step: SharedStep; at: number }[] = [];
  const batches: { startedAt: number; stoppedDuring: boolean; result?: readonly string[]; failed?: boolean; settledAt?: number }[] = [];
  const shared = sc.shared === undefined ? undefined : {
    refreshSurvivors: async (run: () => Promise<readonly string[]>): Promise<readonly string[] | undefined> => {
      const step = sc.shared![storeCalls.length % sc.shared!.length]!;
      const at = t();
      storeCalls.push({ step, at });
      act('store');
      const late = () => t() >= at + sc.timeoutMs;
      /** The check run after the step answered (or gave up): a batch of its own, its outcome recorded. */
      const inBackground = () => {
        const b = { startedAt: t(), stoppedDuring: false } as (typeof batches)[number];
        batches.push(b);
        const entry = { batch: batches.length - 1 };
        pendingBatches.push(entry);
        const gone = () => (pendingBatches = pendingBatches.filter((x) => x !== entry));
        return run().then(
          (names) => {
            gone();
            Object.assign(b, { result: names, settledAt: t(), stoppedDuring: stoppedAt !== undefined && stoppedAt >= b.startedAt });
          },
          () => {
            gone();
            Object.assign(b, { failed: true, settledAt: t() });
          },
        );
      };
      const listed = step.list.map((i) => (i < sc.candidates ? `c${i}` : 'ghost'));
      if (step.kind === 'hang') return new Promise(() => undefined);
      await sleep(step.delayMs, undefined);
      if (step.kind === 'reject') throw new Error('redis down');
      if (step.kind === 'none') return undefined;
      if (step.kind === 'list') return listed;
      if (step.kind === 'stale') {
        void inBackground();
        return listed;
      }
      if (late()) {
        await inBackground();
        return undefined;
      }
      const entry = { batch: undefined };
      pendingBatches.push(entry);
      const names = await run().finally(() => (pendingBatches = pendingBatches.filter((x) => x !== entry)));
      await sleep(step.afterMs, undefined);
      return names;
    },
  };
  const results: { r: RefreshResult; names: string[]; conns: Map<string, Conn | undefined>; at: number; checksUpTo: number; storeUpTo: number }[] = [];
  let held = new Map<string, Conn | undefined>([['seed', connectionOf(pool, 'seed')]]);
  refresher = new Refresher<Conn>(pool, {
    candidates: sc.fromFunction ? source : fixed,
    check,
    intervalMs: sc.intervalMs,
    timeoutMs: sc.timeoutMs,
    concurrency: sc.concurrency,
    minHealthy: sc.minHealthy,
    order: sc.order,
    ...(sc.fallback ? { fallback } : {}),
    ...(sc.always ? { always } : {}),
    ...(shared === undefined ? {} : { shared }),
    onRefresh: (r) => {
      if (stoppedAt !== undefined) violations.push(`onRefresh at ${t()} ms after stop() at ${stoppedAt} ms`);
      const now = pool.endpointNames;
      const conns = new Map(now.map((n) => [n, connectionOf(pool, n)]));
      results.push({ r, names: now, conns, at: t(), checksUpTo: checks.length, storeUpTo: storeCalls.length });
      act('onRefresh');
      if (sc.throwingObserver) throw new Error('observer bug');
    },
  });
  const manual: { at: number; settled: boolean }[] = [];
  refresher.start();
  const events = [
    ...sc.manualAt.map((at) => ({ at, kind: 'manual' as const })),
    ...(sc.stopAt === undefined ? [] : [{ at: sc.stopAt, kind: 'stop' as const }]),
    ...(sc.closeAt === undefined ? [] : [{ at: sc.closeAt, kind: 'close' as const }]),
  ].sort((a, b) => a.at - b.at);
  for (const e of events) {
    if (e.at > t()) await clock.advance(e.at - t());
    if (e.kind === 'close') {
      closeNow();
    } else if (e.kind === 'stop') {
      if (stoppedAt === undefined) {
        stoppedAt = t();
        refresher.stop();
        noTimerLeft('stop()');
      }
    } else if (stoppedAt === undefined) {
      const m = { at: t(), settled: false };
      manual.push(m);
      refresher.refresh().then(
        () => (m.settled = true),
        (e: unknown) => violations.push(`refresh() rejected: ${String(e)}`),
      );
    }
  }
  await clock.advance(HORIZON_MS - Math.min(HORIZON_MS, t()));
  if (clock.pendingForegroundTimers !== 0) violations.push(`${clock.pendingForegroundTimers} foreground timer(s) at the horizon`);
  const closed = closedAt as number | undefined; // set from callbacks: no narrowing across them
  if (closed !== undefined) {
    // The refresher stopped as the pool closed (checked then); an interval and a run's bound later, nothing of it is left either.
    await clock.advance(sc.intervalMs + 100_000);
    const lastRun = Math.max(0, ...results.filter((x) => x.r.startedAt <= closed).map((x) => x.at));
    if (refresher.refreshing) violations.push(`still refreshing at the horizon, the pool closed at ${closed} ms`);
    if (clock.pendingTimers - ownTimers !== 0) violations.push(`${clock.pendingTimers - ownTimers} timer(s) of the Refresher at the horizon, the pool closed at ${closed} ms`);
    for (const x of results) if (x.r.installed !== undefined && x.at > closed) violations.push(`a run ended at ${x.at} ms installed ${x.r.installed.join(',')} on the pool closed at ${closed} ms`);
    const late = checks.find((c) => c.batch === undefined && c.startedAt > Math.max(closed, lastRun) && results.every((x) => x.r.startedAt > closed || c.startedAt > x.at));
    if (late !== undefined && results.some((x) => x.r.startedAt > closed)) violations.push(`check of ${late.name} at ${late.startedAt} ms by a run started after the pool closed at ${closed} ms`);
  }
  if (stoppedAt === undefined) {
    stoppedAt = t();
    refresher.stop();
  }
  const namesAtStop = pool.endpointNames.join(',');
  await clock.advance(60_000);
  if (pool.endpointNames.join(',') !== namesAtStop) violations.push(`the set changed after stop(): ${namesAtStop} -> ${pool.endpointNames.join(',')}`);
  if (clock.pendingTimers - ownTimers !== 0) violations.push(`${clock.pendingTimers - ownTimers} timer(s) of the Refresher left after stop()`);
  // Background re-checks: what each gave the shared list is what its checks found, and nothing once stopped.
  batches.forEach((b, k) => {
    if (b.settledAt === undefined) violations.push(`the re-check from ${b.startedAt} ms never settled`);
    if (b.result === undefined) return;
    if (b.stoppedDuring) violations.push(`the re-check from ${b.startedAt} ms, stopped, gave the fleet ${b.result.join(',') || 'an empty list'}`);
    const its = checks.filter((c) => c.batch === k && c.passed && c.settledAt !== undefined && c.settledAt <= c.startedAt + sc.timeoutMs).map((c) => c.name);
    if ([...b.result].sort().join(',') !== [...its].sort().join(',')) violations.push(`the re-check from ${b.startedAt} ms gave ${b.result.join(',')}, its checks passed ${its.join(',')}`);
  });
  for (const m of manual) if (!m.settled) violations.push(`refresh() called at ${m.at} ms never settled`);
  for (const c of insideCalls) {
    if (!c.settled) violations.push(`refresh() called inside the ${c.where} at ${c.at} ms never settled`);
    else if (c.started ? c.result!.startedAt !== c.at : c.result!.startedAt > c.at) violations.push(`refresh() inside the ${c.where} at ${c.at} ms answered with the run from ${c.result!.startedAt} ms`);
  }

  // 1. No overlap; timer runs start an interval after a run ended.
  const manualTimes = new Set([...manual.map((m) => m.at), ...insideCalls.filter((c) => c.started).map((c) => c.at)]);
  for (let i = 0; i < results.length; i++) {
    const { r } = results[i]!;
    const end = r.startedAt + r.durationMs;
    if (results[i]!.at !== end) violations.push(`run ${i} reported at ${results[i]!.at} ms, its end ${end} ms`);
    if (i > 0) {
      const prev = results[i - 1]!.r;
      const prevEnd = prev.startedAt + prev.durationMs;
      if (r.startedAt < prevEnd) violations.push(`run ${i} started at ${r.startedAt} ms, before run ${i - 1} ended at ${prevEnd} ms`);
      if (r.startedAt !== 0 && !manualTimes.has(r.startedAt) && !results.slice(0, i).some((x) => x.r.startedAt + x.r.durationMs + sc.intervalMs === r.startedAt)) {
        violations.push(`run ${i} started at ${r.startedAt} ms: neither by hand nor intervalMs after a run's end`);
      }
    } else if (r.startedAt !== 0 && !manualTimes.has(r.startedAt)) violations.push(`the first run started at ${r.startedAt} ms`);
    // 3. A run's bound.
    const perWorker = Math.ceil(sc.candidates / Math.min(sc.concurrency, sc.candidates));
    // With a shared list: a wait for an earlier run's re-check, the step's wait before its check, the check, the wait after it.
    const bound = (sc.fromFunction ? sc.timeoutMs : 0) + perWorker * sc.timeoutMs + (sc.shared === undefined ? 0 : perWorker * sc.timeoutMs + 2 * sc.timeoutMs);
    if (r.durationMs > bound) violations.push(`run ${i} took ${r.durationMs} ms, bound ${bound} ms`);
  }
  // 2 and 3: concurrency, and every check past its timeout aborted then.
  if (peak > sc.concurrency) violations.push(`peak ${peak} checks in flight, concurrency ${sc.concurrency}`);
  for (const c of checks) {
    const due = c.startedAt + sc.timeoutMs;
    const inTime = c.settledAt !== undefined && c.settledAt <= due && c.abortedAt === undefined;
    if (!inTime && (c.abortedAt === undefined || c.abortedAt > due)) violations.push(`check of ${c.name} from ${c.startedAt} ms neither settled nor aborted by ${due} ms (aborted ${String(c.abortedAt)})`);
  }
  // 4 and 5: what each run installed.
  for (let i = 0; i < results.length; i++) {
    const { r, names: now, conns } = results[i]!;
    const end = r.startedAt + r.durationMs;
    // A background re-check's checks (tagged with their batch) belong to no run.
    const mine = checks.slice(i === 0 ? 0 : results[i - 1]!.checksUpTo, results[i]!.checksUpTo).filter((c) => c.batch === undefined);
    if (mine.some((c) => c.startedAt < r.startedAt || c.startedAt > end)) violations.push(`run ${i} (${r.startedAt}-${end} ms) has a check started outside it`);
    const prevStore = i === 0 ? 0 : results[i - 1]!.storeUpTo;
    const step = results[i]!.storeUpTo > prevStore ? storeCalls[prevStore]!.step : undefined;
    if (sc.shared === undefined && r.checked > 0 && mine.length !== r.checked) violations.push(`run ${i} reports ${r.checked} checked, ${mine.length} checks were called`);
    const passed = mine.filter((c) => c.passed && c.settledAt !== undefined && c.settledAt <= c.startedAt + sc.timeoutMs);
    if (r.installed !== undefined && now.join(',') !== r.installed.join(',')) violations.push(`run ${i} reported ${r.installed.join(',')} installed, the pool has ${now.join(',')}`);
    const byChecks = names.filter((n) => passed.some((c) => c.name === n));
    /** What the run should have found healthy: by its checks, or the shared list's; undefined: nothing to install. */
    let expectHealthy: string[] | undefined;
    let fromList = false;
    if (sc.shared === undefined) expectHealthy = r.checked > 0 ? byChecks : undefined;
    else if (step === undefined || step.kind === 'hang' || step.kind === 'reject' || step.kind === 'none' || step.delayMs >= sc.timeoutMs) expectHealthy = undefined;
    else if (step.kind === 'check') expectHealthy = step.afterMs >= sc.timeoutMs ? undefined : byChecks;
    else {
      fromList = true;
      expectHealthy = step.list.filter((x) => x < sc.candidates).map((x) => `c${x}`);
    }
    if (expectHealthy !== undefined) {
      if (fromList ? r.healthy.join(',') !== expectHealthy.join(',') : [...r.healthy].sort().join(',') !== [...expectHealthy].sort().join(',')) {
        violations.push(`run ${i}: healthy ${r.healthy.join(',')}, expected ${expectHealthy.join(',')} (${step === undefined ? 'checks' : `shared ${step.kind}`})`);
      }
      if (!fromList && sc.order === 'given' && r.healthy.join(',') !== expectHealthy.join(',')) violations.push(`run ${i}: healthy ${r.healthy.join(',')} not in the given order`);
      if (!fromList && sc.order === 'latency') {
        const lat = (n: string) => {
          const c = passed.find((x) => x.name === n);
          return c === undefined ? NaN : c.settledAt! - c.startedAt;
        };
        for (let j = 1; j < r.healthy.length; j++) if (!(lat(r.healthy[j - 1]!) <= lat(r.healthy[j]!))) violations.push(`run ${i}: ${r.healthy.join(',')} not fastest first`);
      }
    }
    // In the order reported (checked above: as given, fastest first, or the list's).
    const healthy = expectHealthy === undefined ? undefined : r.healthy;
    let expected: string[] | undefined = healthy === undefined ? undefined : healthy.length >= sc.minHealthy ? [...healthy] : sc.fallback ? merged(healthy, fallback) : undefined;
    if (expected !== undefined && sc.always) expected = merged(expected, always);
    if (expected?.length === 0) expected = undefined;
    const usedFallback = healthy !== undefined && healthy.length < sc.minHealthy && sc.fallback;
    if (r.usedFallback !== usedFallback) violations.push(`run ${i}: usedFallback ${r.usedFallback}, expected ${usedFallback}`);
    if (expectHealthy === undefined && r.healthy.length > 0) violations.push(`run ${i}: healthy ${r.healthy.join(',')} from a run that found nothing`);
    if ((r.installed ?? []).join(',') !== (expected ?? []).join(',')) violations.push(`run ${i} installed ${String(r.installed)}, expected ${String(expected)} (${step === undefined ? 'no shared step' : JSON.stringify(step)})`);
    if (r.installed !== undefined) {
      for (const n of now) {
        const before = held.get(n);
        const conn = conns.get(n);
        if (before !== undefined && samePlainData(before, conn) && before !== conn) violations.push(`run ${i}: ${n} kept by name with an equal connection got a new object`);
        // The pool's value is the data of the candidate this run checked (an equal one kept as the pool's object).
        const checked = r.healthy.includes(n) ? mine.find((c) => c.name === n) : undefined;
        if (checked !== undefined && !samePlainData(checked.conn, conn)) violations.push(`run ${i}: ${n} installed with ${JSON.stringify(conn)}, checked ${JSON.stringify(checked.conn)}`);
      }
      held = conns;
    }
  }
  await pool.close();
  return { violations, runs: results.length, checks: checks.length, installs: results.filter((x) => x.r.installed !== undefined).length };
}

describe('Refresher over generated candidates, checks and sources', () => {
  test(`runs never overlap, checks are bounded and aborted, installs follow the checks, equal connections keep their endpoint, stop() leaves nothing (${RUNS} runs)`, async () => {
    const totals = { runs: 0, refreshes: 0, checks: 0, installs: 0 };
    await checkSeeded('refresher', scenarioArb, simulate, {
      seed: SEED,
      runs: RUNS,
      seen: (o) => {
        totals.runs++;
        totals.refreshes += o.runs;
        totals.checks += o.checks;
        totals.installs += o.installs;
      },
    });
    // The generator reaches what it aims at: refreshes that install, many checks.
    expect(totals.installs).toBeGreaterThan(totals.runs);
    expect(totals.checks).toBeGreaterThan(totals.runs * 10);
  }, 600_000);
});
