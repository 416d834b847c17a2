/**
 * A fleet at scale on a real Redis (sixth round): 3-10 pools sharing one quota, each pool
 * drawing its own limiter kind (`bucket` or `paced`: a rolling change of `mode`, which
 * docs/fleet.md says keeps the fleet under the ceiling in every second), its callers (1-3,
 * closed loop), its deadline, the moment it joins and whether it leaves early (`close()` in
 * the middle of traffic); the quota's rate (4-40/s) and burst; Redis killed and restarted
 * empty, stopped (SIGSTOP) or paused (`CLIENT PAUSE`) once, or never. Checked:
 *
 * 1. in every window of one second (less a timer-lag guard) the upstream sees at most the
 *    ceiling (`max(burst, floor(perSecond))`, docs/fleet.md "Admission") when Redis never
 *    failed, and at most the ceiling plus each pool's degraded share (`degradedShare` =
 *    1 / pools of the rate and of the burst, at least one call, as generated5 bounds two
 *    pools) when it did;
 * 2. every call settles by its deadline (plus the lag margin), with a documented code;
 * 3. after `close()` no pool timer is left.
 *
 * `FC_SEED` / `FC_PATH` replay; `FC_FLEET_RUNS` sets the runs (default 5).
 */
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import fc from 'fast-check';
import { afterAll, test } from 'vitest';
import { isPoolError } from '../../src/index.js';
import { createPooledFetch } from '../../src/fetch/index.js';
import { describeRedis } from '../redis/redis-env.js';
import { timerLag, watchLag, withLag } from '../helpers/lag.js';
import { countingClock } from './gen.js';
import { checkRuns, closeRtt, seedOf } from './harness.js';
import { checkRate, endFleetRun, fleetStore, loggingUpstream, scheduleRedisFault, type RedisFault } from './redis-fault.js';

const FILE = 'test/faults/fleet6.test.ts';
const RUN_MS = 2000;
const CODES = new Set(['DEADLINE_EXCEEDED', 'RATE_LIMITED', 'NO_ENDPOINT', 'RETRIES_EXHAUSTED', 'CLOSED']);

interface Member {
  readonly mode: 'bucket' | 'paced';
  readonly callers: number;
  readonly deadlineMs: number;
  readonly joinMs: number;
  readonly leaveMs: number | undefined;
}

interface FleetScenario {
  readonly perSecond: number;
  readonly burst: number;
  readonly hold: 'none' | 'default';
  readonly storeTimeoutMs: number;
  readonly members: readonly Member[];
  readonly redis: RedisFault;
}

const fleetArb: fc.Arbitrary<FleetScenario> = fc.record({
  perSecond: fc.constantFrom(4, 10, 25, 40),
  burst: fc.constantFrom(1, 5, 20),
  hold: fc.constantFrom('none' as const, 'default' as const),
  storeTimeoutMs: fc.constantFrom(50, 150),
  members: fc.array(
    fc.record({
      mode: fc.constantFrom('bucket' as const, 'paced' as const),
      callers: fc.integer({ min: 1, max: 3 }),
      deadlineMs: fc.constantFrom(150, 400, 900),
      joinMs: fc.constantFrom(0, 0, 300, 700),
      leaveMs: fc.option(fc.constantFrom(900, 1500), { nil: undefined }),
    }),
    { minLength: 3, maxLength: 10 },
  ),
  redis: fc.oneof(
    fc.constant({ k: 'none' as const }),
    fc.record({ k: fc.constantFrom('kill' as const, 'stop' as const, 'pause' as const), atMs: fc.constantFrom(300, 800), forMs: fc.constantFrom(400, 1000) }),
  ),
});

describeRedis('a fleet at scale on one quota (sixth round)', (server) => {
  async function runFleet(sc: FleetScenario): Promise<{ violations: string[]; calm: boolean; p2: number; codes: Record<string, number> }> {
    const violations: string[] = [];
    const lag0 = await timerLag(5);
    const h = server();
    const prefix = `f6-${randomUUID()}`;
    const { arrivals, up } = await loggingUpstream();
    const share = 1 / sc.members.length;
    const counting = countingClock();
    const clients: Redis[] = [];
    const pools: ReturnType<typeof createPooledFetch>[] = [];
    for (const m of sc.members) {
      const { client, store } = await fleetStore(h, prefix, sc.hold);
      clients.push(client);
      pools.push(
        createPooledFetch({
          endpoints: [{ url: up.url, name: 'e0', rateLimit: m.mode === 'paced' ? { perSecond: sc.perSecond, mode: 'paced' as const } : { perSecond: sc.perSecond, burst: sc.burst } }],
          sharedQuota: { store, timeoutMs: sc.storeTimeoutMs, degradedShare: share, retryAfterMs: 200 },
          attemptTimeoutMs: 1000,
          deadlineMs: m.deadlineMs,
          clock: counting.clock,
        }),
      );
    }
    const watch = watchLag();
    const t0 = performance.now();
    const timers: ReturnType<typeof setTimeout>[] = [];
    const f = sc.redis;
    const fault = scheduleRedisFault(h, f, clients[0]!);
    const codes: Record<string, number> = {};
    const late: { took: number; deadline: number; code: string }[] = [];
    const closed = sc.members.map(() => false);
    sc.members.forEach((m, i) => {
      if (m.leaveMs !== undefined) timers.push(setTimeout(() => ((closed[i] = true), void pools[i]!.pool.close()), m.leaveMs));
    });
    const loop = async (i: number): Promise<void> => {
      const m = sc.members[i]!;
      await new Promise((r) => setTimeout(r, m.joinMs));
      while (performance.now() - t0 < RUN_MS && !closed[i]) {
        const start = performance.now();
        let watchdog: ReturnType<typeof setTimeout> | undefined;
        const ok = await Promise.race([
          pools[i]!('/x', { parse: 'json' }).then(
            () => true,
            (e: unknown) => {
              const k = isPoolError(e) ? e.code : `not a PoolError: ${String(e)}`;
              codes[k] = (codes[k] ?? 0) + 1;
              if (!CODES.has(k)) violations.push(`pool ${i}: a call failed with ${k}`);
              return false;
            },
          ),
          new Promise<'hung'>((r) => (watchdog = setTimeout(() => r('hung'), m.deadlineMs + 5_000))),
        ]);
        clearTimeout(watchdog);
        if (ok === 'hung') {
          violations.push(`pool ${i}${closed[i] ? ' (closed)' : ''}: a call started at ${Math.round(start - t0)} ms had not settled 5 s past its ${m.deadlineMs} ms deadline [redis ${JSON.stringify(f)}]`);
          return;
        }
        const took = performance.now() - start;
        if (took > m.deadlineMs) late.push({ took, deadline: m.deadlineMs, code: ok ? 'ok' : 'failed' });
        if (!ok) await new Promise((r) => setTimeout(r, 10));
      }
    };
    await Promise.all(sc.members.flatMap((m, i) => Array.from({ length: m.callers }, () => loop(i))));
    for (const t of timers) clearTimeout(t);
    const lag = Math.max(lag0, watch.stop());
    await endFleetRun(pools, fault, clients, up, counting.pending, violations);
    const margin = withLag(15, lag, 4);
    for (const l of late) if (l.took > l.deadline + margin) violations.push(`a call (${l.code}) took ${Math.round(l.took)} ms, deadline ${l.deadline} ms (margin ${Math.round(margin)} ms)`);
    // Paced pools never burst; the bucket pools' cap is the larger of burst and rate (docs/fleet.md).
    const burst = sc.members.some((m) => m.mode === 'bucket') ? sc.burst : 1;
    const cap = Math.max(burst, Math.floor(sc.perSecond));
    const local = Math.max(1, burst * share) + sc.perSecond * share;
    const bound = f.k === 'none' ? cap : Math.floor(cap + sc.members.length * local);
    const { worst, judged } = checkRate(arrivals, t0, withLag(5, lag, 3), bound, `(ceiling ${cap}, ${sc.members.length} pools at share ${share.toFixed(3)}) [redis ${JSON.stringify(f)}, lag ${Math.round(lag)} ms]`, violations);
    if (process.env['FC_DEBUG'] === '1') console.log(JSON.stringify(sc), `fleet6 ${sc.members.length} pools redis ${f.k}: worst ${worst}/${bound} (cap ${cap}), arrivals ${arrivals.length}, lag ${Math.round(lag)}`, JSON.stringify(codes));
    return { violations, calm: judged, p2: arrivals.length, codes };
  }

  test('3-10 pools, mixed modes, joining and leaving: the rate holds and no call outlives its deadline', async () => {
    await checkRuns('fleet6', FILE, fleetArb, runFleet, seedOf(20261260), Number(process.env['FC_FLEET_RUNS'] ?? 5));
  }, 120_000);
});

afterAll(() => closeRtt());
