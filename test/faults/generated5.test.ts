/**
 * Generated faults, fifth round: what earlier rounds did not draw.
 *
 * - fetch with `idempotencyKey: true` (harness.ts, same nine properties): POSTs without a key
 *   are replayed after failures that may have reached a server (property 8 does not apply:
 *   the key is what makes that safe), and checked besides: every request of a call carries
 *   one key, the same on every attempt (a generated UUID, or the caller's own), keys of two
 *   calls differ, and a GET gets none.
 * - A Redis that answers wrongly (resp.ts: a fake RESP server on 127.0.0.1, one or two pools
 *   of a fleet sharing it through ioredis): wrong types, bytes that are not RESP, huge
 *   values, replies split by a pause, stalls, connections cut mid-reply, mixed with right
 *   answers (now, or slots 100 ms ahead). Checked: no call outlives its deadline; failures
 *   are documented PoolErrors; nothing rejects unhandled; with `degradedShare: 1` and no hold
 *   a call whose deadline covers one attempt timeout plus one store timeout per endpoint
 *   succeeds while an endpoint is healthy (fail-open); once the fake answers right again,
 *   every healthy endpoint serves a call pinned to it through every pool (a wrong answer is
 *   one failed admission, never a lasting state); after close() no pool timer is left.
 * - `createRedisHealth` as a `Refresher`'s shared survivor list (2-3 processes, a real
 *   redis-server killed, restarted empty, stopped or paused mid-traffic; candidates whose
 *   check passes, fails, is slow or hangs; the fleet also marks and reads health). Checked:
 *   every refresh() ends within its steps' timeouts (the shared list's wait, the checks, the
 *   publication: three timeouts and a margin); no process installs a candidate whose check
 *   never passes; mark/clear/marks/exclude never throw, and exclude never names every
 *   endpoint; nothing rejects unhandled; after stop() and close() no timer is left.
 * - A fleet-wide rate (two pools sharing one quota on a real Redis, closed-loop callers on
 *   one upstream that logs arrivals) while Redis is killed and restarted empty, stopped or
 *   paused: in every window of one second (less the timer-lag guard) the upstream sees at
 *   most the quota's ceiling when Redis never failed, and at most the ceiling plus each
 *   pool's degraded share (`degradedShare` of the rate and of the burst, docs/fleet.md)
 *   when it did.
 *
 * `FC_SEED` / `FC_PATH` replay; `FC_GEN5_RUNS` sets runs (default 12), `FC_RATE_RUNS` the fleet-rate runs (5).
 */
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import fc from 'fast-check';
import { afterAll, describe, expect, test } from 'vitest';
import { Pool, Refresher, isPoolError, type RefreshResult } from '../../src/index.js';
import { createPooledFetch, type PooledRequestInit } from '../../src/fetch/index.js';
import { createRedisHealth, createRedisStore, fromIoredis } from '../../src/redis/index.js';
import { describeRedis, ready } from '../redis/redis-env.js';
import { timerLag, watchLag, withLag } from '../helpers/lag.js';
import { countingClock, faultArb, refusedUrl, serveFaults, type Fault, type ServerStats } from './gen.js';
import { check, checkRuns, closeRtt, launchCallers, defined, fetchRawAdapter, roundTrip, seedOf, type Adapter, type Built, type FetchExtra } from './harness.js';
import { WRONG, fakeRedis, type FakeRedis, type Wrong } from './resp.js';
import { checkRate, endFleetRun, fleetStore, loggingUpstream, scheduleRedisFault, type RedisFault } from './redis-fault.js';

const RUNS = Number(process.env['FC_GEN5_RUNS'] ?? 12);
const FILE = 'test/faults/generated5.test.ts';

// fetch with idempotencyKey: true ------------------------------------------------------

/** The idempotency keys the servers saw, by call (x-call), in arrival order. */
const keysSeen = new Map<string, (string | undefined)[]>();

const keyed: Adapter = {
  ...fetchRawAdapter,
  name: 'fetch (idempotencyKey: true)',
  extra: fc.record({
    asRequest: fc.boolean(),
    method: fc.constantFrom('GET' as const, 'POST' as const, 'POST' as const, 'POST-key' as const),
    token: fc.constant('none' as const),
  }),
  liveExtra: fc.record({
    asRequest: fc.boolean(),
    method: fc.constantFrom('GET' as const, 'POST' as const, 'POST' as const, 'POST-key' as const),
    token: fc.constant('none' as const),
  }),
  // The key makes a POST replayable: property 8 (one server may have processed it) is the key's job now.
  replaysPost: () => true,
  serve: () => ({
    check: (headers) => {
      const call = String(headers['x-call'] ?? '');
      const key = headers['idempotency-key'];
      const list = keysSeen.get(call) ?? [];
      list.push(typeof key === 'string' ? key : undefined);
      keysSeen.set(call, list);
      return true;
    },
  }),
  build(urls, s, x, ep): Built {
    keysSeen.clear();
    const pf = createPooledFetch({ endpoints: urls.map((url, i) => ({ url, name: `e${i}`, ...ep })), ...defined(s), idempotencyKey: true });
    const conns = [...urls];
    const handed = new Map<number, AbortSignal>();
    const init = (i: number): RequestInit => {
      const headers: Record<string, string> = { 'x-call': String(i) };
      if (x.method === 'GET') return { headers };
      if (x.method === 'POST-key') headers['idempotency-key'] = `k-${i}`;
      return { method: 'POST', headers, body: '{"q":1}' };
    };
    return {
      signalFor: (i) => handed.get(i),
      close: () => pf.pool.close(),
      swap: (i, url) => {
        conns[i] = url;
        pf.pool.setEndpoints(conns.map((conn, j) => ({ name: `e${j}`, conn, ...ep })));
      },
      call: async (i, signal, deadlineMs, retry) => {
        const pool = { ...(deadlineMs !== undefined ? { deadlineMs } : {}), ...(retry !== undefined ? { retry } : {}) };
        let res: Response;
        if (x.asRequest === true) {
          const req = new Request(`${urls[0]}/x`, { ...init(i), ...(signal ? { signal } : {}) });
          if (signal) handed.set(i, req.signal);
          res = await pf(req, { pool } as PooledRequestInit & { parse?: undefined });
        } else res = await pf('/x', { ...init(i), ...(signal ? { signal } : {}), pool } as PooledRequestInit & { parse?: undefined });
        await res.body?.cancel().catch(() => undefined);
        return res.status;
      },
    };
  },
  afterRun(x) {
    const out: string[] = [];
    const owner = new Map<string, string>();
    for (const [call, keys] of keysSeen) {
      if (x.method === 'GET') {
        if (keys.some((k) => k !== undefined)) out.push(`call ${call}: a GET carried an idempotency key`);
        continue;
      }
      const first = keys[0];
      if (first === undefined || first === '') {
        out.push(`call ${call}: a POST reached a server without an idempotency key`);
        continue;
      }
      if (keys.some((k) => k !== first)) out.push(`call ${call}: its requests carried different keys (${keys.join(', ')})`);
      if (x.method === 'POST-key' && first !== `k-${call}`) out.push(`call ${call}: the caller's key was replaced by ${first}`);
      if (x.method === 'POST' && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(first)) out.push(`call ${call}: generated key ${first} is not a UUID`);
      const other = owner.get(first);
      if (other !== undefined) out.push(`calls ${other} and ${call} share the key ${first}`);
      owner.set(first, call);
    }
    return out;
  },
};

// A Redis that answers wrongly ----------------------------------------------------------

interface WrongScenario {
  readonly endpoints: readonly ({ readonly kind: 'refused' } | { readonly kind: 'server'; readonly plan: readonly Fault[] })[];
  readonly pools: 1 | 2;
  /** The fake's answers to the first script runs, in order; right ones after. */
  readonly answers: readonly Wrong[];
  /** Pauses of split replies and stalls, in units. */
  readonly slow: number;
  readonly storeTimeout: number;
  readonly hold: 'none' | 'default';
  readonly degradedShare: number;
  readonly perSecond: number;
  readonly deadline: number;
  readonly callers: readonly { readonly startAt: number; readonly pool: number }[];
}

const okFault = fc.record({ k: fc.constant('ok' as const), f: fc.constantFrom(0, 0.1) });
const faults = faultArb([429, 500, 503], []);
const healthyPlan = (e: WrongScenario['endpoints'][number]): boolean => e.kind === 'server' && e.plan.every((x) => x.k === 'ok' && x.f <= 0.2);

function wrongArb(liveness: boolean): fc.Arbitrary<WrongScenario> {
  const endpoint = fc.oneof(
    { weight: 1, arbitrary: fc.constant({ kind: 'refused' as const }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('server' as const), plan: fc.array(faults, { minLength: 1, maxLength: 4 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('server' as const), plan: fc.array(okFault, { minLength: 1, maxLength: 2 }) }) },
  );
  // A right answer 100 ms ahead is a wait, not a fault: not in liveness runs.
  const right = liveness ? fc.constant<Wrong>('right') : fc.constantFrom<Wrong>('right', 'later');
  const answer = fc.oneof({ weight: 3, arbitrary: fc.constantFrom<Wrong>(...WRONG) }, { weight: 1, arbitrary: right });
  return fc
    .record<WrongScenario>({
      endpoints: fc.array(endpoint, { minLength: 1, maxLength: 3 }),
      pools: fc.constantFrom<1 | 2>(1, 2),
      answers: fc.array(answer, { minLength: 1, maxLength: 8 }),
      slow: fc.constantFrom(0.5, 1, 3),
      storeTimeout: fc.constantFrom(0.25, 0.5, 1),
      hold: fc.constantFrom('none' as const, 'default' as const),
      degradedShare: fc.constantFrom<number>(1, 0.5),
      perSecond: fc.constantFrom<number>(50, 1000),
      deadline: fc.integer({ min: 2, max: 12 }),
      callers: fc.array(fc.record({ startAt: fc.constantFrom(0, 0.5, 1, 2, 3), pool: fc.nat({ max: 1 }) }), { minLength: 1, maxLength: 8 }),
    })
    .chain((sc) =>
      !liveness
        ? fc.constant(sc)
        : fc.record({ at: fc.nat({ max: sc.endpoints.length }), plan: fc.array(okFault, { minLength: 1, maxLength: 2 }) }).map(({ at, plan }) => {
            const endpoints = [...sc.endpoints];
            endpoints.splice(at, 0, { kind: 'server', plan });
            return { ...sc, endpoints: endpoints.slice(0, 2), degradedShare: 1, hold: 'none' as const, perSecond: 1000, deadline: Math.max(sc.deadline, 10) };
          }),
    );
}

const CODES = new Set(['DEADLINE_EXCEEDED', 'RETRIES_EXHAUSTED', 'NO_ENDPOINT', 'RATE_LIMITED', 'PERMANENT', 'CLOSED']);

async function runWrong(sc: WrongScenario): Promise<{ violations: string[]; calm: boolean; p2: number; codes: Record<string, number> }> {
  const violations: string[] = [];
  const lag0 = await timerLag(5);
  const U = Math.max(withLag(40, lag0, 3), Math.ceil(4 * (await roundTrip())));
  const servers: (ServerStats | undefined)[] = [];
  const urls: string[] = [];
  for (const e of sc.endpoints) {
    if (e.kind === 'refused') {
      servers.push(undefined);
      urls.push(await refusedUrl());
    } else {
      const s = await serveFaults(e.plan, { closeConnections: false, unitMs: U, rpc: false, answer: () => ({ status: 200, body: '{"ok":true}' }) });
      servers.push(s);
      urls.push(s.url);
    }
  }
  const fake: FakeRedis = await fakeRedis(Math.ceil(sc.slow * U));
  fake.plan = [...sc.answers];
  const clients: Redis[] = [];
  const counting = countingClock();
  const storeTimeoutMs = Math.ceil(sc.storeTimeout * U);
  const backoffMax = Math.ceil(U / 2);
  const pools: ReturnType<typeof createPooledFetch>[] = [];
  const prefix = `g5-${randomUUID()}`;
  const unhandled: unknown[] = [];
  const onUnhandled = (r: unknown): void => void unhandled.push(r);
  process.on('unhandledRejection', onUnhandled);
  for (let p = 0; p < sc.pools; p++) {
    const client = new Redis({ host: '127.0.0.1', port: fake.port, enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => Math.ceil(U / 2) });
    client.on('error', () => undefined);
    await new Promise((resolve) => client.once('ready', resolve));
    clients.push(client);
    const store = createRedisStore(fromIoredis(client), { prefix, ...(sc.hold === 'none' ? { degradedHoldMs: 0 } : {}) });
    pools.push(
      createPooledFetch({
        endpoints: urls.map((url, i) => ({ url, name: `e${i}`, rateLimit: { perSecond: sc.perSecond, burst: Math.min(sc.perSecond, 10) } })),
        sharedQuota: { store, timeoutMs: storeTimeoutMs, degradedShare: sc.degradedShare, retryAfterMs: U },
        attemptTimeoutMs: U,
        deadlineMs: sc.deadline * U,
        backoff: { initialMs: Math.ceil(U / 8), maxMs: backoffMax, jitter: 'full' },
        breaker: { threshold: 3, cooldownMs: 20 * U },
        clock: counting.clock,
      }),
    );
  }
  const watch = watchLag();
  const timers: ReturnType<typeof setTimeout>[] = [];
  const records = await launchCallers(sc.callers, pools, U, timers);
  for (const t of timers) clearTimeout(t);
  // Recovery: the fake answers right from now on. Past every stall and the store's retry,
  // each pool serves a call pinned to each healthy endpoint.
  fake.plan = [];
  fake.after = 'right';
  await new Promise((r) => setTimeout(r, Math.ceil((sc.slow + 2) * U + storeTimeoutMs)));
  const healthyNames = sc.endpoints.flatMap((e, i) => (healthyPlan(e) ? [`e${i}`] : []));
  const recovery: string[] = [];
  // The store's default hold after a failure (docs/fleet.md): the furthest slot handed out
  // lately (100 ms, `later`) + slotGraceMs (50) + 1 s; a pinned call may wait it out.
  const holdMs = sc.hold === 'default' ? 1150 : 0;
  for (const [p, pf] of pools.entries()) {
    for (const name of healthyNames) {
      const error = await pf('/x', { parse: 'json', pool: { pin: name, deadlineMs: 10 * U + holdMs } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (error !== undefined) recovery.push(`pool ${p}, ${name}: ${isPoolError(error) ? error.code : ''} ${(error as Error).message}`);
    }
  }
  await Promise.all(pools.map((p) => p.pool.close()));
  const lag = Math.max(lag0, watch.stop());
  const margin = withLag(15, lag, 4);
  const calm = lag < U / 3;
  // Recovery waits out stalls on the real clock: judged in calm runs (the pinned calls' deadline is ten units).
  if (calm) for (const r of recovery) violations.push(`after the fake answered right again: ${r} [answers ${sc.answers.join(',')}]`);
  const codes: Record<string, number> = {};
  let p2 = 0;
  const n = sc.endpoints.length;
  const healthy = sc.endpoints.some(healthyPlan);
  for (const r of records) {
    const key = r.ok ? 'ok' : isPoolError(r.error) ? r.error.code : String(r.error);
    codes[key] = (codes[key] ?? 0) + 1;
    const took = r.end! - r.start;
    const tag = `call ${r.i} (start ${Math.round(r.start)})`;
    if (took > sc.deadline * U + margin) violations.push(`${tag} took ${Math.round(took)} ms, deadline ${sc.deadline * U} ms + margin ${margin} ms (${key})`);
    if (!r.ok && !(isPoolError(r.error) && CODES.has(r.error.code))) violations.push(`${tag}: not a documented PoolError: ${String(r.error)}`);
    const covers = sc.deadline * U >= n * (U + storeTimeoutMs) + (n - 1) * backoffMax + 0.2 * U + 2 * margin;
    if (calm && healthy && sc.degradedShare === 1 && sc.hold === 'none' && sc.perSecond >= 1000 && covers && !sc.answers.includes('later')) {
      p2++;
      if (!r.ok) violations.push(`${tag} failed with ${key} (${(r.error as Error).message}) while an endpoint is healthy and the store fails open [answers ${sc.answers.join(',')}]`);
    }
  }
  if (counting.pending() > 0) violations.push(`${counting.pending()} pool timer(s) pending after close()`);
  for (const c of clients) c.disconnect();
  // Let ioredis's last rejections (commands cut by the disconnect) arrive before counting.
  await new Promise((r) => setTimeout(r, 20));
  process.off('unhandledRejection', onUnhandled);
  for (const u of unhandled) violations.push(`unhandled rejection: ${String(u)}`);
  await fake.close();
  await Promise.all(servers.map((s) => s?.close()));
  return { violations, calm, p2, codes };
}

function checkWrong(seed: number, liveness: boolean): Promise<void> {
  return checkRuns(liveness ? 'wrong Redis answers, liveness' : 'wrong Redis answers', FILE, wrongArb(liveness), runWrong, seed, RUNS);
}

// createRedisHealth as a Refresher's shared list, on a real Redis under faults ---------------

type Check = 'ok' | 'slow' | 'fail' | 'hang';
type HealthFault = { readonly k: 'none' } | { readonly k: 'kill' | 'restart'; readonly at: number } | { readonly k: 'stop' | 'pause'; readonly at: number; readonly forUnits: number };

interface HealthScenario {
  readonly processes: number;
  readonly checks: readonly Check[];
  readonly redis: HealthFault;
  /** The refreshers' interval (the list's freshness), in units. */
  readonly ttl: number;
  /** Each process's refresh() calls, at these times (units). */
  readonly refreshAt: readonly (readonly number[])[];
  /** Marks published along the way: [process, candidate, status] at a time. */
  readonly marks: readonly { readonly at: number; readonly p: number; readonly c: number; readonly status: 'open' | 'disabled' | 'parked' }[];
}

const healthArb: fc.Arbitrary<HealthScenario> = fc
  .record({
    processes: fc.integer({ min: 2, max: 3 }),
    checks: fc.array(fc.constantFrom<Check>('ok', 'ok', 'slow', 'fail', 'hang'), { minLength: 1, maxLength: 4 }),
    redis: fc.oneof(
      fc.constant<HealthFault>({ k: 'none' }),
      fc.record({ k: fc.constantFrom('kill' as const, 'restart' as const), at: fc.constantFrom(0, 1, 2, 3) }),
      fc.record({ k: fc.constantFrom('stop' as const, 'pause' as const), at: fc.constantFrom(0, 1, 2, 3), forUnits: fc.constantFrom(1, 3, 20) }),
    ),
    ttl: fc.constantFrom(1, 2, 4),
    refreshAt: fc.array(fc.array(fc.constantFrom(0, 0.5, 1, 2, 3, 4, 6), { minLength: 1, maxLength: 3 }), { minLength: 3, maxLength: 3 }),
    marks: fc.array(fc.record({ at: fc.constantFrom(0, 1, 2, 4), p: fc.nat({ max: 2 }), c: fc.nat({ max: 3 }), status: fc.constantFrom('open' as const, 'disabled' as const, 'parked' as const) }), { maxLength: 4 }),
  })
  .map((sc) => ({ ...sc, checks: sc.checks.includes('ok') ? sc.checks : [...sc.checks, 'ok' as const] }));

describeRedis('generated faults, fifth round: createRedisHealth under Redis faults', (server) => {
  async function runHealth(sc: HealthScenario): Promise<{ violations: string[]; calm: boolean; refreshes: number }> {
    const violations: string[] = [];
    const lag0 = await timerLag(5);
    const U = Math.max(withLag(40, lag0, 3), Math.ceil(4 * (await roundTrip())));
    const h = server();
    const prefix = `h5-${randomUUID()}`;
    const names = sc.checks.map((_, i) => `c${i}`);
    const candidates = names.map((name) => ({ name, conn: name }));
    const passing = new Set(names.filter((_, i) => sc.checks[i] === 'ok' || sc.checks[i] === 'slow'));
    const unhandled: unknown[] = [];
    const onUnhandled = (r: unknown): void => void unhandled.push(r);
    process.on('unhandledRejection', onUnhandled);
    const counting = countingClock();
    const healthClock = countingClock();
    const check = (c: string, signal: AbortSignal): Promise<boolean> => {
      const kind = sc.checks[names.indexOf(c)];
      if (kind === 'ok') return Promise.resolve(true);
      if (kind === 'fail') return Promise.resolve(false);
      return new Promise<boolean>((resolve, reject) => {
        const t = kind === 'slow' ? setTimeout(() => resolve(true), Math.ceil(U / 4)) : undefined;
        signal.addEventListener('abort', () => (clearTimeout(t), reject(signal.reason as Error)), { once: true });
      });
    };
    const procs: { client: Redis; pool: Pool<string>; refresher: Refresher<string>; health: ReturnType<typeof createRedisHealth> }[] = [];
    for (let p = 0; p < sc.processes; p++) {
      const client = await ready(new Redis({ host: '127.0.0.1', port: h.port, enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => Math.ceil(U / 2) }));
      client.on('error', () => undefined);
      // Its own clock: a command sent to a stopped Redis keeps its guard timer (commandTimeoutMs) past
      // close(), which is not a pool timer (test/redis/command-timeout.test.ts checks the guards).
      const health = createRedisHealth(fromIoredis(client), { prefix, onError: () => undefined, maxAgeMs: U, clock: healthClock.clock, commandTimeoutMs: 20 * U });
      const pool = new Pool<string>({ endpoints: [{ name: 'seed', conn: 'seed' }], classify: () => 'transient', clock: counting.clock });
      const refresher = new Refresher(pool, { candidates, check, shared: health, timeoutMs: U, intervalMs: sc.ttl * U });
      procs.push({ client, pool, refresher, health });
    }
    const watch = watchLag();
    const timers: ReturnType<typeof setTimeout>[] = [];
    let redisBack: Promise<void> | undefined;
    const f = sc.redis;
    if (f.k === 'kill') timers.push(setTimeout(() => void h.kill(), f.at * U));
    if (f.k === 'restart') timers.push(setTimeout(() => (redisBack = h.restart()), f.at * U));
    if (f.k === 'stop') {
      timers.push(setTimeout(() => process.kill(h.pid, 'SIGSTOP'), f.at * U));
      timers.push(setTimeout(() => process.kill(h.pid, 'SIGCONT'), (f.at + f.forUnits) * U));
    }
    if (f.k === 'pause') timers.push(setTimeout(() => void procs[0]!.client.call('CLIENT', 'PAUSE', String(Math.ceil(f.forUnits * U)), 'ALL').catch(() => undefined), f.at * U));
    for (const m of sc.marks) {
      const pr = procs[m.p % procs.length]!;
      timers.push(
        setTimeout(() => {
          const name = names[m.c % names.length]!;
          try {
            void pr.health.mark(name, m.status, 4 * U);
            const ex = pr.health.exclude(names);
            if (ex.length >= names.length) violations.push(`exclude(${names.join(',')}) named every endpoint: ${ex.join(',')}`);
          } catch (error) {
            violations.push(`health threw: ${String(error)}`);
          }
        }, m.at * U),
      );
    }
    const results: { p: number; took: number; r: RefreshResult }[] = [];
    await Promise.all(
      procs.flatMap((pr, p) =>
        (sc.refreshAt[p] ?? []).map(
          (at) =>
            new Promise<void>((resolve) =>
              timers.push(
                setTimeout(() => {
                  const t0 = performance.now();
                  void pr.refresher.refresh().then((r) => {
                    results.push({ p, took: performance.now() - t0, r });
                    const installed = pr.pool.endpointNames.filter((n) => n !== 'seed');
                    const bad = installed.filter((n) => !passing.has(n));
                    if (bad.length > 0) violations.push(`process ${p} installed ${bad.join(',')}, whose check never passes (${JSON.stringify(r)})`);
                    resolve();
                  });
                }, at * U),
              ),
            ),
        ),
      ),
    );
    for (const t of timers) clearTimeout(t);
    const lag = Math.max(lag0, watch.stop());
    const margin = withLag(15, lag, 4);
    const calm = lag < U / 3;
    // A refresh joins the one running: at most two in a row per call (the joined one and its own).
    const bound = 2 * 3 * U + 2 * margin;
    for (const x of results) if (x.took > bound) violations.push(`process ${x.p}: refresh() took ${Math.round(x.took)} ms, bound ${bound} ms (three timeouts of ${U} ms, twice) [redis ${JSON.stringify(f)}]`);
    for (const pr of procs) pr.refresher.stop();
    await Promise.all(procs.map((pr) => pr.pool.close()));
    // A step armed when stop() came ends on its own within a timeout.
    await new Promise((r) => setTimeout(r, U + margin));
    if (counting.pending() > 0) violations.push(`${counting.pending()} timer(s) pending after stop() and close()`);
    if (f.k === 'stop') {
      try {
        process.kill(h.pid, 'SIGCONT');
      } catch {
        // gone
      }
    }
    await redisBack;
    if (f.k === 'kill') await h.restart();
    for (const pr of procs) pr.client.disconnect();
    await new Promise((r) => setTimeout(r, 20));
    process.off('unhandledRejection', onUnhandled);
    for (const u of unhandled) violations.push(`unhandled rejection: ${String(u)}`);
    return { violations, calm, refreshes: results.length };
  }

  test('Refresher on createRedisHealth while Redis is killed, restarted, stopped or paused', async () => {
    let first: string[] | undefined;
    const totals = { runs: 0, calm: 0, refreshes: 0 };
    const result = await fc.check(
      fc.asyncProperty(healthArb, async (sc) => {
        const o = await runHealth(sc);
        totals.runs++;
        if (o.calm) totals.calm++;
        totals.refreshes += o.refreshes;
        if (o.violations.length > 0) first ??= o.violations;
        return o.violations.length === 0;
      }),
      { seed: seedOf(20261235), numRuns: RUNS, endOnFailure: true, ...(process.env['FC_PATH'] !== undefined ? { path: process.env['FC_PATH'] } : {}) },
    );
    if (process.env['FC_VERBOSE'] === '1') console.log('health', JSON.stringify(totals));
    if (result.failed) {
      expect.fail(
        [
          `createRedisHealth: property failed (seed ${result.seed}); replay: FC_SEED=${result.seed} FC_PATH=${result.counterexamplePath ?? ''} npx vitest run ${FILE}`,
          ...(first ?? []).map((v) => `  - ${v}`),
          JSON.stringify(result.counterexample?.[0]),
        ].join('\n'),
      );
    }
  }, 120_000);
});

// A fleet-wide rate while Redis fails ------------------------------------------------------

interface RateScenario {
  readonly perSecond: number;
  readonly burst: number;
  readonly share: number;
  readonly hold: 'none' | 'default';
  readonly storeTimeoutMs: number;
  readonly callers: number;
  readonly redis: RedisFault;
}

const rateArb: fc.Arbitrary<RateScenario> = fc.record({
  perSecond: fc.constantFrom(5, 10, 20),
  burst: fc.constantFrom(1, 3, 10),
  share: fc.constantFrom(0.5, 0.25),
  hold: fc.constantFrom('none' as const, 'default' as const),
  storeTimeoutMs: fc.constantFrom(50, 150),
  callers: fc.integer({ min: 1, max: 4 }),
  redis: fc.oneof(
    fc.constant({ k: 'none' as const }),
    fc.record({ k: fc.constantFrom('kill' as const, 'stop' as const, 'pause' as const), atMs: fc.constantFrom(300, 800), forMs: fc.constantFrom(400, 1200) }),
  ),
});

describeRedis('generated faults, fifth round: a fleet-wide rate while Redis fails', (server) => {
  const RUN_MS = 2400;

  async function runRate(sc: RateScenario): Promise<{ violations: string[]; arrivals: number; worst: number; bound: number }> {
    const violations: string[] = [];
    const lag0 = await timerLag(5);
    const h = server();
    const prefix = `r5-${randomUUID()}`;
    const { arrivals, up } = await loggingUpstream();
    const clients: Redis[] = [];
    const pools: ReturnType<typeof createPooledFetch>[] = [];
    const counting = countingClock();
    for (let p = 0; p < 2; p++) {
      const { client, store } = await fleetStore(h, prefix, sc.hold);
      clients.push(client);
      pools.push(
        createPooledFetch({
          endpoints: [{ url: up.url, name: 'e0', rateLimit: { perSecond: sc.perSecond, burst: sc.burst } }],
          sharedQuota: { store, timeoutMs: sc.storeTimeoutMs, degradedShare: sc.share, retryAfterMs: 200 },
          attemptTimeoutMs: 1000,
          deadlineMs: 400,
          clock: counting.clock,
        }),
      );
    }
    const watch = watchLag();
    const t0 = performance.now();
    const f = sc.redis;
    const fault = scheduleRedisFault(h, f, clients[0]!);
    // Closed-loop callers: a call, then the next (10 ms after a failure).
    const codes: Record<string, number> = {};
    const loop = async (pf: (typeof pools)[number]): Promise<void> => {
      while (performance.now() - t0 < RUN_MS) {
        const ok = await pf('/x', { parse: 'json' }).then(
          () => true,
          (e: unknown) => {
            const k = isPoolError(e) ? e.code : String(e);
            codes[k] = (codes[k] ?? 0) + 1;
            return false;
          },
        );
        if (!ok) await new Promise((r) => setTimeout(r, 10));
      }
    };
    await Promise.all(pools.flatMap((pf) => Array.from({ length: sc.callers }, () => loop(pf))));
    const lag = Math.max(lag0, watch.stop());
    await endFleetRun(pools, fault, clients, up, counting.pending, violations);
    const cap = Math.max(sc.burst, Math.floor(sc.perSecond));
    const local = Math.max(1, sc.burst * sc.share) + sc.perSecond * sc.share;
    const bound = f.k === 'none' ? cap : Math.floor(cap + 2 * local);
    const { worst } = checkRate(arrivals, t0, withLag(5, lag, 3), bound, `(ceiling ${cap}, degraded share ${sc.share} x 2 pools) [redis ${JSON.stringify(f)}, lag ${Math.round(lag)} ms]`, violations);
    if (process.env['FC_DEBUG'] === '1') console.log(JSON.stringify(sc), arrivals.length, JSON.stringify(codes));
    return { violations, arrivals: arrivals.length, worst, bound };
  }

  test('two pools on one quota: the upstream never sees more than the documented rate', async () => {
    let first: string[] | undefined;
    const seen: string[] = [];
    const result = await fc.check(
      fc.asyncProperty(rateArb, async (sc) => {
        const o = await runRate(sc);
        seen.push(`${sc.redis.k}:${o.worst}/${o.bound}`);
        if (o.violations.length > 0) first ??= o.violations;
        return o.violations.length === 0;
      }),
      { seed: seedOf(20261236), numRuns: Number(process.env['FC_RATE_RUNS'] ?? 5), endOnFailure: true, ...(process.env['FC_PATH'] !== undefined ? { path: process.env['FC_PATH'] } : {}) },
    );
    if (process.env['FC_VERBOSE'] === '1') console.log('fleet rate (worst/bound)', seen.join(' '));
    if (result.failed) {
      expect.fail(
        [
          `fleet rate: property failed (seed ${result.seed}); replay: FC_SEED=${result.seed} FC_PATH=${result.counterexamplePath ?? ''} npx vitest run ${FILE}`,
          ...(first ?? []).map((v) => `  - ${v}`),
          JSON.stringify(result.counterexample?.[0]),
        ].join('\n'),
      );
    }
  }, 120_000);
});

afterAll(() => closeRtt());

describe('generated faults, fifth round', () => {
  test('fetch with idempotencyKey: true', () => check(keyed, seedOf(20261231), RUNS, false, FILE), 120_000);
  test('liveness: fetch with idempotencyKey: true (a keyed POST fails over)', () => check(keyed, seedOf(20261232), RUNS, true, FILE), 120_000);
  test('a Redis that answers wrongly, under shared quotas', () => checkWrong(seedOf(20261233), false), 120_000);
  test('liveness: fail-open while Redis answers wrongly', () => checkWrong(seedOf(20261234), true), 120_000);
});
