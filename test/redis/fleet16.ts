/**
 * The fleet test of issue 19 (registered by fleet.test.ts): 16 processes share 9 keys through one Redis, calling an
 * upstream HTTP server that logs every arrival on its own clock. From that log, each key's
 * combined rate stays at or under its ceiling in every one-second window, through
 *
 * - a rolling change of `mode` (3 keys move from bucket to paced one process at a time),
 * - Redis killed and restarted empty (every process degrades to `degradedShare`, then
 *   ramps back through the store),
 *
 * and no call outlives its deadline. The window guard (`slotGraceMs`, added to the
 * store's one-second window) is derived from the event-loop lag measured on this machine
 * before the run, so a loaded machine gets a wider guard rather than a flaky test.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { maxInWindow, sleep } from './fleet.js';
import type { RedisServer } from './redis-env.js';

const PROCESSES = Number(process.env['FLEET_PROCESSES'] ?? 16);
const DURATION_MS = 12_000;
// With 16 processes, 16/s is the lowest ceiling a fleet on local shares can keep in every
// window without coordination: each process may then call at most once in any second.
const CEILING = 16;
const KEYS = [
  ...['b0', 'b1', 'b2'].map((name) => ({ name, rateLimit: { perSecond: CEILING, burst: 2 } })),
  ...['p0', 'p1', 'p2'].map((name) => ({ name, rateLimit: { perSecond: CEILING, mode: 'paced' } })),
  ...['m0', 'm1', 'm2'].map((name) => ({ name, rateLimit: { perSecond: CEILING, burst: 2 } })),
];
const ROLLING = ['m0', 'm1', 'm2'];
const DEADLINE_MS = 3000;

interface Report {
  sent: [string, number][];
  events: { pool: string; type: string; t: number }[];
  ok: number;
  failed: Record<string, number>;
  byPool: { before: number; after: number };
  maxCallMs: number;
  calls: number;
  maxLagMs: number;
  roundTrips: number;
}

/** The worst lateness of a 5 ms timer over ~300 ms, here and now. */
async function timerLagMs(): Promise<number> {
  let worst = 0;
  const until = Date.now() + 300;
  while (Date.now() < until) {
    const t = performance.now();
    await sleep(5);
    worst = Math.max(worst, performance.now() - t - 5);
  }
  return worst;
}

const DIR = import.meta.dirname;

/** Registers the test (called inside fleet.test.ts's block, so that the fleet tests never run at the same time). */
export function fleet16(server: () => RedisServer): void {
  test('every key at or under its ceiling in every 1 s window of the upstream log, through a rolling mode change and a Redis restart; no call past its deadline', { timeout: 60_000 }, async () => {
    if (!existsSync(join(DIR, '..', '..', 'dist', 'redis', 'index.js'))) throw new Error('the fleet tests run on the built package: run `npm run build` (npm test does) first');
    const children: ChildProcess[] = [];
    const killAll = () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL'));
    const guard = setTimeout(killAll, 55_000);
    try {
      const upstream = fork(join(DIR, 'upstream.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      children.push(upstream);
      const upstreamPort = await new Promise<number>((resolve) => upstream.once('message', (m: { port: number }) => resolve(m.port)));
      const lag = await timerLagMs();
      // Arrivals can bunch by about the lag of the busiest process: the store's window is widened by that much.
      const guardMs = Math.min(500, Math.max(250, Math.ceil(10 * lag)));
      const cfg = {
        port: server().port,
        upstreamPort,
        prefix: 'fleet16:',
        keys: KEYS,
        rolling: ROLLING,
        loopsPerKey: 2,
        deadlineMs: DEADLINE_MS,
        timeoutMs: 250,
        retryAfterMs: 500,
        // Below 1/16: each process at most one call in any second on local limits, with room for lag.
        degradedShare: 0.8 / PROCESSES,
        guardMs,
      };
      const reports: Promise<Report>[] = [];
      const readies: Promise<void>[] = [];
      for (let i = 0; i < PROCESSES; i++) {
        const child = fork(join(DIR, 'fleet16-worker.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
        children.push(child);
        let onReady!: () => void;
        let onExit!: (error: Error) => void;
        readies.push(new Promise<void>((resolve, reject) => ((onReady = resolve), (onExit = reject))));
        reports.push(
          new Promise<Report>((resolve, reject) => {
            child.on('message', (m: { ready?: boolean } & Report) => (m.ready === true ? onReady() : resolve(m)));
            child.once('exit', (code) => {
              const error = new Error(`fleet worker exited with ${code} before reporting`);
              onExit(error);
              reject(error);
            });
          }),
        );
        reports.at(-1)!.catch(() => undefined);
        // The rolling deploy: one process after another, from 1.5 s to 4.5 s.
        child.send({ ...cfg, switchAtMs: 1500 + Math.round((3000 * i) / PROCESSES) });
      }
      await Promise.all(readies);
      const startAt = Date.now() + 500;
      for (const c of children.slice(1)) c.send({ startAt, durationMs: DURATION_MS });
      await sleep(startAt + 6000 - Date.now());
      const killedAt = Date.now();
      await server().kill();
      await sleep(2000);
      await server().restart();
      const restartedAt = Date.now();
      const all = await Promise.all(reports);
      upstream.send('log');
      const log = await new Promise<[string, number][]>((resolve) => upstream.on('message', (m: { log?: [string, number][] }) => m.log !== undefined && resolve(m.log)));
      const byKey = new Map<string, number[]>();
      for (const [k, t] of log) if (k !== 'warmup') (byKey.get(k) ?? byKey.set(k, []).get(k)!).push(t);
      for (const ts of byKey.values()) ts.sort((a, b) => a - b);

      const summary = {
        guardMs,
        lagBeforeMs: Math.round(lag),
        maxLagMs: Math.max(...all.map((r) => r.maxLagMs)),
        perKey: Object.fromEntries(KEYS.map((k) => [k.name, { calls: byKey.get(k.name)?.length ?? 0, worst1s: maxInWindow(byKey.get(k.name) ?? [], 1000) }])),
        maxCallMs: Math.max(...all.map((r) => r.maxCallMs)),
        roundTripsPerCall: all.reduce((n, r) => n + r.roundTrips, 0) / Math.max(1, all.reduce((n, r) => n + r.ok, 0)),
        failed: all.reduce<Record<string, number>>((acc, r) => {
          for (const [c, n] of Object.entries(r.failed)) acc[c] = (acc[c] ?? 0) + n;
          return acc;
        }, {}),
      };
      if (process.env['DEBUG_FLEET'] !== undefined) {
        console.log(JSON.stringify(summary));
        for (const k of KEYS) {
          const ts = byKey.get(k.name) ?? [];
          const over: number[] = [];
          for (let i = 0, j = 0; j < ts.length; j++) {
            while (ts[j]! - ts[i]! >= 1000) i++;
            if (j - i + 1 > CEILING) over.push(ts[i]! - startAt);
          }
          const sentTs = all.flatMap((r) => r.sent.filter(([n]) => n === k.name).map(([, t]) => t)).sort((a, b) => a - b);
          console.log(k.name, 'worst by send time', maxInWindow(sentTs, 1000));
          if (over.length > 0) console.log('sent', JSON.stringify(all.map((r, i) => r.sent.filter(([n, t]) => n === k.name && t - startAt < over[0]! + 1000 && t - startAt > over[0]! - 100).map(([, t]) => `${i}@${t - startAt}`)).flat().sort((a, b) => Number(a.split('@')[1]) - Number(b.split('@')[1]))));
          if (over.length > 0) console.log('events', JSON.stringify(all.map((r) => r.events.map((e) => `${e.pool[0]}${e.type.slice(6, 9)}@${e.t - startAt}`))));
          if (over.length > 0) console.log(k.name, 'over from', over.slice(0, 3), 'kill', killedAt - startAt, 'restart', restartedAt - startAt, ts.filter((t) => t - startAt >= over[0]! - 200 && t - startAt < over[0]! + 1200).map((t) => t - startAt));
        }
      }

      // The ceiling, in every 1 s window of the upstream's own log, for every key. A sending
      // process frozen for longer than the guard (the worst lag its workers saw) releases at once
      // the calls the store admitted during the freeze: calls admitted over 1 s plus the excess
      // can land in one window. With lag under the guard (a quiet or merely busy machine) the
      // bound is the ceiling itself.
      const excessMs = Math.max(0, summary.maxLagMs - guardMs);
      const bound = Math.floor((CEILING * (1000 + excessMs)) / 1000);
      for (const k of KEYS) expect(maxInWindow(byKey.get(k.name) ?? [], 1000), `${k.name} (bound ${bound}): ${JSON.stringify(summary)}`).toBeLessThanOrEqual(bound);
      // Nothing hung: every worker reported, and no call outlived its deadline (plus twice the worst lag seen).
      // The workers sample their lag between ticks, so a timer can fire later than the worst sample: twice it, with room.
      expect(summary.maxCallMs).toBeLessThanOrEqual(DEADLINE_MS + 2 * summary.maxLagMs + 250);
      for (const r of all) {
        // Every process went degraded while Redis was down and came back after the restart.
        expect(r.events.some((e) => e.type === 'store-degraded' && e.t >= killedAt - 100 && e.t < restartedAt)).toBe(true);
        expect(r.events.some((e) => e.type === 'store-recovered' && e.t >= restartedAt)).toBe(true);
        // Both modes served the rolling keys.
        expect(r.byPool.before).toBeGreaterThan(0);
        expect(r.byPool.after).toBeGreaterThan(0);
      }
      // The keys were used: at least a third of the fleet's capacity on each (outage included).
      for (const k of KEYS) expect(byKey.get(k.name)?.length ?? 0, k.name).toBeGreaterThanOrEqual((CEILING * DURATION_MS) / 1000 / 3);
    } finally {
      clearTimeout(guard);
      killAll();
    }
  });
}
