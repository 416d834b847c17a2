/**
 * Generated faults on a shared-quota store: `endpoint-pool/redis` on a real redis-server
 * (127.0.0.1, started for this file), one or two pools (processes of a fleet) sharing it,
 * `endpoint-pool/fetch` on loopback servers with fault plans (gen.ts), and Redis itself
 * killed, restarted empty, stopped (SIGSTOP: every command hangs) or paused (`CLIENT
 * PAUSE`) in the middle of traffic.
 *
 * The store's failure contract (docs/fleet.md, "When Redis is slow or down"): each admission
 * is bounded by `sharedQuota.timeoutMs`; on a timeout or an error the pool goes on with
 * local limits at `degradedShare` (fail-open), after the store's `degradedHoldMs`. Checked,
 * each run (margins from the timer lag measured before and during the run):
 * 1. no call outlives its deadline by more than the margin, whatever Redis does;
 * 2. with `degradedShare: 1`, `degradedHoldMs: 0`, a healthy endpoint and no final answer,
 *    a call whose deadline covers one attempt timeout plus one store timeout per endpoint
 *    (plus backoffs) succeeds, in a calm run: Redis being down or slow costs at most the
 *    store timeout per admission;
 * 3. every failure is a documented PoolError; nothing rejects unhandled;
 * 4. after close(): no pool timer pending, no store subscription left, `store-degraded`
 *    and `store-recovered` alternate (starting with degraded).
 *
 * `FC_SEED` / `FC_PATH` replay; `FC_REDIS_RUNS` sets runs (default 16).
 */
import Redis from 'ioredis';
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { isPoolError, type PoolEvent } from '../../src/index.js';
import { createPooledFetch } from '../../src/fetch/index.js';
import { createRedisStore, fromIoredis } from '../../src/redis/index.js';
import type { LimiterStore } from '../../src/limits/store.js';
import { timerLag, watchLag, withLag } from '../helpers/lag.js';
import { describeRedis, ready } from '../redis/redis-env.js';
import { countingClock, faultArb, refusedUrl, serveFaults, type Fault, type ServerStats } from './gen.js';
import { checkRuns, closeRtt, launchCallers, roundTrip, seedOf } from './harness.js';

const RUNS = Number(process.env['FC_REDIS_RUNS'] ?? 16);
const CODES = new Set(['DEADLINE_EXCEEDED', 'RETRIES_EXHAUSTED', 'NO_ENDPOINT', 'RATE_LIMITED', 'PERMANENT', 'CLOSED']);

type RedisFault =
  | { readonly k: 'none' }
  | { readonly k: 'kill'; readonly at: number }
  | { readonly k: 'restart'; readonly at: number }
  | { readonly k: 'stop'; readonly at: number; readonly forUnits: number }
  | { readonly k: 'pause'; readonly at: number; readonly forUnits: number };

interface RedisScenario {
  readonly endpoints: readonly ({ readonly kind: 'refused' } | { readonly kind: 'server'; readonly plan: readonly Fault[] })[];
  readonly pools: 1 | 2;
  readonly redis: RedisFault;
  /** Store timeout in units; the store's `degradedHoldMs` (0, or the store's own default). */
  readonly storeTimeout: number;
  readonly hold: 'none' | 'default';
  readonly degradedShare: number;
  readonly perSecond: number;
  readonly deadline: number;
  readonly callers: readonly { readonly startAt: number; readonly pool: number }[];
}

const okFault = fc.record({ k: fc.constant('ok' as const), f: fc.constantFrom(0, 0.1) });
const faults = faultArb([429, 500, 503], []);

function scenarioArb(liveness: boolean): fc.Arbitrary<RedisScenario> {
  const endpoint = fc.oneof(
    { weight: 1, arbitrary: fc.constant({ kind: 'refused' as const }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('server' as const), plan: fc.array(faults, { minLength: 1, maxLength: 4 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('server' as const), plan: fc.array(okFault, { minLength: 1, maxLength: 2 }) }) },
  );
  const at = fc.constantFrom(0, 0.5, 1, 2, 3);
  // Liveness runs are mostly about a store that hangs (stopped, paused): the store timeout must bound it.
  const w = liveness ? [1, 1, 1, 3, 2] : [1, 1, 1, 1, 1];
  const redis: fc.Arbitrary<RedisFault> = fc.oneof(
    { weight: w[0]!, arbitrary: fc.constant({ k: 'none' as const }) },
    { weight: w[1]!, arbitrary: fc.record({ k: fc.constant('kill' as const), at }) },
    { weight: w[2]!, arbitrary: fc.record({ k: fc.constant('restart' as const), at }) },
    { weight: w[3]!, arbitrary: fc.record({ k: fc.constant('stop' as const), at, forUnits: fc.constantFrom(1, 3, 20) }) },
    { weight: w[4]!, arbitrary: fc.record({ k: fc.constant('pause' as const), at, forUnits: fc.constantFrom(1, 3) }) },
  );
  return fc
    .record<RedisScenario>({
      endpoints: fc.array(endpoint, { minLength: 1, maxLength: 3 }),
      pools: fc.constantFrom<1 | 2>(1, 2),
      redis,
      storeTimeout: fc.constantFrom(0.25, 0.5, 1),
      hold: fc.constantFrom('none' as const, 'default' as const),
      degradedShare: fc.constantFrom<number>(1, 0.5, 0.125),
      perSecond: fc.constantFrom<number>(5, 50, 1000),
      deadline: fc.integer({ min: 2, max: 12 }),
      callers: fc.array(fc.record({ startAt: fc.constantFrom(0, 0.5, 1, 2, 3, 4), pool: fc.nat({ max: 1 }) }), { minLength: 1, maxLength: 8 }),
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

/** A store that counts its live subscriptions. */
function counted(store: LimiterStore): { store: LimiterStore; subscriptions(): number } {
  let n = 0;
  const wrapped: LimiterStore = {
    acquire: (limit) => store.acquire(limit),
    ...(store.degradedHoldMs !== undefined ? { degradedHoldMs: store.degradedHoldMs } : {}),
    ...(store.report !== undefined ? { report: store.report.bind(store) } : {}),
    ...(store.parkEndpoint !== undefined ? { parkEndpoint: store.parkEndpoint.bind(store) } : {}),
    ...(store.subscribe !== undefined
      ? {
          subscribe: (listener) => {
            n++;
            const off = store.subscribe!(listener);
            let done = false;
            return () => {
              if (!done) (done = true), n--;
              off();
            };
          },
        }
      : {}),
  };
  return { store: wrapped, subscriptions: () => n };
}

describeRedis('generated faults: Redis-shared quotas', (server) => {
  async function run(sc: RedisScenario): Promise<{ violations: string[]; calm: boolean; p2: number; codes: Record<string, number> }> {
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
    const redisPort = server().port;
    // Each pool is a process of the fleet: its own client and store on the same Redis.
    const clients: Redis[] = [];
    const counting = countingClock();
    const events: PoolEvent[][] = [];
    const stores: ReturnType<typeof counted>[] = [];
    const storeTimeoutMs = Math.ceil(sc.storeTimeout * U);
    const backoffMax = Math.ceil(U / 2);
    const pools: ReturnType<typeof createPooledFetch>[] = [];
    // The pools of a run share one prefix: the fleet's keys.
    const prefix = `f4-${Math.random().toString(36).slice(2)}`;
    for (let p = 0; p < sc.pools; p++) {
      const client = await ready(new Redis({ host: '127.0.0.1', port: redisPort, enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => Math.ceil(U / 2), lazyConnect: false }));
      client.on('error', () => undefined);
      clients.push(client);
      const store = counted(createRedisStore(fromIoredis(client), { prefix, ...(sc.hold === 'none' ? { degradedHoldMs: 0 } : {}) }));
      stores.push(store);
      const log: PoolEvent[] = [];
      events.push(log);
      pools.push(
        createPooledFetch({
          endpoints: urls.map((url, i) => ({ url, name: `e${i}`, rateLimit: { perSecond: sc.perSecond, burst: Math.min(sc.perSecond, 10) } })),
          sharedQuota: { store: store.store, timeoutMs: storeTimeoutMs, degradedShare: sc.degradedShare, retryAfterMs: U },
          attemptTimeoutMs: U,
          deadlineMs: sc.deadline * U,
          backoff: { initialMs: Math.ceil(U / 8), maxMs: backoffMax, jitter: 'full' },
          breaker: { threshold: 3, cooldownMs: 20 * U },
          clock: counting.clock,
          onEvent: (e) => void log.push(e),
        }),
      );
    }
    const unhandled: unknown[] = [];
    const onUnhandled = (r: unknown): void => void unhandled.push(r);
    process.on('unhandledRejection', onUnhandled);
    const watch = watchLag();
    const timers: ReturnType<typeof setTimeout>[] = [];
    let redisBack: Promise<void> | undefined;
    const h = server();
    const f = sc.redis;
    if (f.k === 'kill') timers.push(setTimeout(() => void h.kill(), f.at * U));
    if (f.k === 'restart') timers.push(setTimeout(() => (redisBack = h.restart()), f.at * U));
    if (f.k === 'stop') {
      timers.push(setTimeout(() => process.kill(h.pid, 'SIGSTOP'), f.at * U));
      timers.push(setTimeout(() => process.kill(h.pid, 'SIGCONT'), (f.at + f.forUnits) * U));
    }
    if (f.k === 'pause') timers.push(setTimeout(() => void clients[0]!.call('CLIENT', 'PAUSE', String(Math.ceil(f.forUnits * U)), 'ALL').catch(() => undefined), f.at * U));
    const records = await launchCallers(sc.callers, pools, U, timers);
    await Promise.all(pools.map((p) => p.pool.close()));
    for (const t of timers) clearTimeout(t);
    const lag = Math.max(lag0, watch.stop());
    process.off('unhandledRejection', onUnhandled);
    const margin = withLag(15, lag, 4);
    const calm = lag < U / 3;
    const codes: Record<string, number> = {};
    let p2 = 0;
    const n = sc.endpoints.length;
    const healthy = sc.endpoints.some((e) => e.kind === 'server' && e.plan.every((x) => x.k === 'ok' && x.f <= 0.2));
    for (const r of records) {
      const key = r.ok ? 'ok' : isPoolError(r.error) ? r.error.code : String(r.error);
      codes[key] = (codes[key] ?? 0) + 1;
      const took = r.end! - r.start;
      const tag = `call ${r.i} (start ${Math.round(r.start)})`;
      if (took > sc.deadline * U + margin) violations.push(`${tag} took ${Math.round(took)} ms, deadline ${sc.deadline * U} ms + margin ${margin} ms (${key})`);
      if (!r.ok && !(isPoolError(r.error) && CODES.has(r.error.code))) violations.push(`${tag}: not a documented PoolError: ${String(r.error)}`);
      // 2. Fail-open liveness.
      const covers = sc.deadline * U >= n * (U + storeTimeoutMs) + (n - 1) * backoffMax + 0.2 * U + 2 * margin;
      if (calm && healthy && sc.degradedShare === 1 && sc.hold === 'none' && sc.perSecond >= 1000 && covers) {
        p2++;
        if (!r.ok) violations.push(`${tag} failed with ${key} (${(r.error as Error).message}) while an endpoint is healthy and the store fails open (redis ${f.k})`);
      } else if (!r.ok && healthy && process.env['FC_DEBUG'] === '1') {
        console.log(`not judged (calm ${calm}, lag ${Math.round(lag)}, U ${U}, covers ${covers}, share ${sc.degradedShare}, hold ${sc.hold}): ${tag} ${key}: ${(r.error as Error).message} [redis ${JSON.stringify(f)}; ${JSON.stringify(sc.endpoints)}]`);
      }
    }
    if (counting.pending() > 0) violations.push(`${counting.pending()} pool timer(s) pending after close()`);
    stores.forEach((s, p) => {
      if (s.subscriptions() > 0) violations.push(`pool ${p}: ${s.subscriptions()} store subscription(s) left after close()`);
    });
    events.forEach((log, p) => {
      const turns = log.filter((e) => e.type === 'store-degraded' || e.type === 'store-recovered').map((e) => e.type);
      const bad = turns.findIndex((t, k) => t !== (k % 2 === 0 ? 'store-degraded' : 'store-recovered'));
      if (bad !== -1) violations.push(`pool ${p}: store events out of turn: ${turns.join(', ')}`);
    });
    for (const u of unhandled) violations.push(`unhandled rejection: ${String(u)}`);
    // Redis back for the next run.
    if (f.k === 'stop') {
      try {
        process.kill(h.pid, 'SIGCONT');
      } catch {
        // gone
      }
    }
    await redisBack;
    if (f.k === 'kill') await h.restart();
    for (const c of clients) c.disconnect();
    await Promise.all(servers.map((s) => s?.close()));
    return { violations, calm, p2, codes };
  }

  function checkRedis(seed: number, liveness: boolean): Promise<void> {
    return checkRuns(liveness ? 'redis faults, liveness' : 'redis faults', 'test/faults/redis-faults.test.ts', scenarioArb(liveness), run, seed, RUNS);
  }

  test('Redis killed, restarted, stopped or paused in traffic: deadlines, codes, cleanup', () => checkRedis(seedOf(20261221), false), 120_000);
  test('liveness: fail-open while Redis is down or slow', () => checkRedis(seedOf(20261222), true), 120_000);
  test('close the round-trip server', () => closeRtt());
});
