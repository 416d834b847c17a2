/**
 * `Refresher` over generated candidate sets, checks and sources (thirty-seventh session): what
 * docs/calls.md promises of it, on the fake clock.
 *
 * Generated: 1-6 candidates whose source (a function, or a fixed list) makes their `{ url, key }`
 * values anew each round, a key rotated now and then; per round, each check passes (after a
 * delay, maybe past the timeout), answers `false`, rejects, throws at once, hangs until its signal
 * aborts, or hangs ignoring it; the source answers, rejects, hangs or returns garbage; interval,
 * timeout, concurrency, `minHealthy`, order, a fallback and an `always` list; refreshes called by
 * hand; an `onRefresh` that throws; `stop()` at a random time or never.
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
 *    starts, and no timer is left; every timer the Refresher arms is a background one.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Pool, Refresher, type EndpointConfig, type RefreshResult } from '../../src/index.js';
import { connectionOf } from '../../src/rpc/connections.js';
import { samePlainData } from '../../src/extras/same-connection.js';
import { FakeClock } from '../../src/testing/index.js';
import { checkSeeded, seedFor } from './run.js';

const RUNS = Number(process.env['FC_REFRESHER_RUNS'] ?? 300);
const SEED = seedFor();
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
  }),
);

interface Conn {
  readonly url: string;
  readonly key: string;
}
interface CheckRecord {
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
  const fallback: EndpointConfig<Conn>[] = [{ name: 'fb', conn: { url: 'https://fb', key: 'f' } }];
  const always: EndpointConfig<Conn>[] = [{ name: 'al', conn: { url: 'https://al', key: 'a' } }];
  const checks: CheckRecord[] = [];
  const checkCalls = new Map<string, number>();
  let inFlight = 0;
  let peak = 0;
  let stoppedAt: number | undefined;
  const leave = (r: CheckRecord) => {
    if (!r.inFlight) return;
    r.inFlight = false;
    inFlight--;
  };
  /** A delay on the clock, cleared when `signal` aborts (unless told to ignore it). */
  const sleep = (ms: number, signal: AbortSignal | undefined) =>
    new Promise<void>((resolve, reject) => {
      if (ms === 0) return resolve();
      const h = clock.setTimeout(resolve, ms, true);
      signal?.addEventListener('abort', () => {
        clock.clearTimeout(h);
        reject(signal.reason);
      });
    });
  const check = (conn: Conn, signal: AbortSignal, candidate: EndpointConfig<Conn>): Promise<unknown> => {
    const name = candidate.name;
    if (stoppedAt !== undefined) violations.push(`check of ${name} started at ${t()} ms after stop() at ${stoppedAt} ms`);
    if (conn !== candidate.conn) violations.push(`check of ${name} got another connection than its candidate's`);
    const i = names.indexOf(name);
    const k = checkCalls.get(name) ?? 0;
    checkCalls.set(name, k + 1);
    const step = sc.checks[i]![k % sc.checks[i]!.length]!;
    const rec: CheckRecord = { name, conn, startedAt: t(), signal, settledAt: undefined, passed: false, abortedAt: undefined, inFlight: true };
    checks.push(rec);
    inFlight++;
    peak = Math.max(peak, inFlight);
    if (inFlight > sc.concurrency) violations.push(`${inFlight} checks in flight at ${t()} ms, concurrency ${sc.concurrency}`);
    signal.addEventListener('abort', () => {
      rec.abortedAt ??= t();
      leave(rec);
    });
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
    if (step.kind === 'hang') return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    await sleep(step.delayMs, signal);
    if (step.kind === 'reject') throw new Error('registry down');
    if (step.kind === 'garbage') return { not: 'a list' } as never;
    return JSON.parse(JSON.stringify(fresh(k))) as EndpointConfig<Conn>[];
  };

  const results: { r: RefreshResult; names: string[]; conns: Map<string, Conn | undefined>; at: number; checksUpTo: number }[] = [];
  let held = new Map<string, Conn | undefined>([['seed', connectionOf(pool, 'seed')]]);
  const refresher = new Refresher<Conn>(pool, {
    candidates: sc.fromFunction ? source : fixed,
    check,
    intervalMs: sc.intervalMs,
    timeoutMs: sc.timeoutMs,
    concurrency: sc.concurrency,
    minHealthy: sc.minHealthy,
    order: sc.order,
    ...(sc.fallback ? { fallback } : {}),
    ...(sc.always ? { always } : {}),
    onRefresh: (r) => {
      if (stoppedAt !== undefined) violations.push(`onRefresh at ${t()} ms after stop() at ${stoppedAt} ms`);
      const now = pool.endpointNames;
      const conns = new Map(now.map((n) => [n, connectionOf(pool, n)]));
      results.push({ r, names: now, conns, at: t(), checksUpTo: checks.length });
      if (sc.throwingObserver) throw new Error('observer bug');
    },
  });
  const manual: { at: number; settled: boolean }[] = [];
  refresher.start();
  const events = [...sc.manualAt.map((at) => ({ at, kind: 'manual' as const })), ...(sc.stopAt === undefined ? [] : [{ at: sc.stopAt, kind: 'stop' as const }])].sort((a, b) => a.at - b.at);
  for (const e of events) {
    if (e.at > t()) await clock.advance(e.at - t());
    if (e.kind === 'stop') {
      if (stoppedAt === undefined) {
        stoppedAt = t();
        refresher.stop();
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
  if (stoppedAt === undefined) {
    stoppedAt = t();
    refresher.stop();
  }
  const namesAtStop = pool.endpointNames.join(',');
  await clock.advance(60_000);
  if (pool.endpointNames.join(',') !== namesAtStop) violations.push(`the set changed after stop(): ${namesAtStop} -> ${pool.endpointNames.join(',')}`);
  if (clock.pendingTimers !== 0) violations.push(`${clock.pendingTimers} timer(s) left after stop()`);
  for (const m of manual) if (!m.settled) violations.push(`refresh() called at ${m.at} ms never settled`);

  // 1. No overlap; timer runs start an interval after a run ended.
  const manualTimes = new Set(manual.map((m) => m.at));
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
    const bound = (sc.fromFunction ? sc.timeoutMs : 0) + perWorker * sc.timeoutMs;
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
    const mine = checks.slice(i === 0 ? 0 : results[i - 1]!.checksUpTo, results[i]!.checksUpTo);
    if (mine.some((c) => c.startedAt < r.startedAt || c.startedAt > end)) violations.push(`run ${i} (${r.startedAt}-${end} ms) has a check started outside it`);
    if (r.checked > 0 && mine.length !== r.checked) violations.push(`run ${i} reports ${r.checked} checked, ${mine.length} checks were called`);
    const passed = mine.filter((c) => c.passed && c.settledAt !== undefined && c.settledAt <= c.startedAt + sc.timeoutMs);
    if (r.installed !== undefined && now.join(',') !== r.installed.join(',')) violations.push(`run ${i} reported ${r.installed.join(',')} installed, the pool has ${now.join(',')}`);
    if (r.checked > 0) {
      const expectHealthy = names.filter((n) => passed.some((c) => c.name === n));
      const healthy = [...r.healthy].sort();
      if (healthy.join(',') !== [...expectHealthy].sort().join(',')) violations.push(`run ${i}: healthy ${r.healthy.join(',')}, its checks passed ${expectHealthy.join(',')}`);
      if (sc.order === 'given' && r.healthy.join(',') !== expectHealthy.join(',')) violations.push(`run ${i}: healthy ${r.healthy.join(',')} not in the given order`);
      if (sc.order === 'latency') {
        const lat = (n: string) => {
          const c = passed.find((x) => x.name === n)!;
          return c.settledAt! - c.startedAt;
        };
        for (let j = 1; j < r.healthy.length; j++) if (lat(r.healthy[j - 1]!) > lat(r.healthy[j]!)) violations.push(`run ${i}: ${r.healthy.join(',')} not fastest first`);
      }
      let expected: string[] | undefined = r.healthy.length >= sc.minHealthy ? [...r.healthy] : sc.fallback ? [...r.healthy, ...(r.healthy.includes('fb') ? [] : ['fb'])] : undefined;
      if (expected !== undefined && sc.always) expected = [...expected, 'al'];
      if ((r.installed ?? []).join(',') !== (expected ?? []).join(',')) violations.push(`run ${i} installed ${String(r.installed)}, expected ${String(expected)}`);
    }
    if (r.installed !== undefined) {
      for (const n of now) {
        const before = held.get(n);
        const conn = conns.get(n);
        if (before !== undefined && samePlainData(before, conn) && before !== conn) violations.push(`run ${i}: ${n} kept by name with an equal connection got a new object`);
        // The pool's value is the data of the candidate this run checked (an equal one kept as the pool's object).
        const checked = mine.find((c) => c.name === n);
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
