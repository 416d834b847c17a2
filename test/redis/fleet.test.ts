/**
 * Several processes, one Redis: the combined rate on each key never exceeds its ceiling,
 * for a token bucket, a paced limit and a group; and when Redis dies and comes back, calls
 * keep flowing within the degraded limits, then the fleet shares its quota again.
 *
 * Times are real and the machine may be loaded (2 shared cores), so ceilings are checked
 * over sliding windows on the upstream arrival times with a stated tolerance: an arrival
 * is logged when the operation starts, a few ms (tens under load) after Redis admitted
 * it, so calls admitted just over a window apart can land inside one window.
 */
import Redis from 'ioredis';
import { expect, test } from 'vitest';
import { countIn, maxInWindow, merged, runFleet, sleep, type FleetConfig } from './fleet.js';
import { describeRedis } from './redis-env.js';
import { fleet16 } from './fleet16.js';

/** Extra arrivals tolerated in a window, for the admission-to-arrival jitter. */
const JITTER_CALLS = 2;

describeRedis('Redis store (several processes)', (server) => {
  test('3 processes: bucket, paced and a group each stay under their one fleet-wide ceiling', async () => {
    const cfg: FleetConfig = {
      port: server().port,
      prefix: 'fleet1:',
      endpoints: [
        { name: 'b', rateLimit: { perSecond: 8, burst: 2 } },
        { name: 'p', rateLimit: { perSecond: 5, mode: 'paced' } },
        { name: 'g1', rateLimit: { perSecond: 4, mode: 'paced' } },
        { name: 'g2', rateLimit: { perSecond: 4, mode: 'paced' } },
      ],
      groups: [['g1', 'g2']],
      concurrency: 8,
      opMs: 5,
      timeoutMs: 1000,
      retryAfterMs: 500,
      degradedShare: 0.5,
    };
    const durationMs = 3000;
    const run = await runFleet(cfg, 3, durationMs);
    for (const r of run.results) expect(r.events, 'no process lost the store').toEqual([]);
    const b = merged(run, 'b');
    const p = merged(run, 'p');
    const g = merged(run, 'g1', 'g2');
    if (process.env['DEBUG_FLEET'] !== undefined) console.log({ b: [b.length, maxInWindow(b, 1000), maxInWindow(b, 2000)], p: [p.length, maxInWindow(p, 1000)], g: [g.length, maxInWindow(g, 1000)] });
    // Bucket: at most burst + perSecond × W in any window W.
    expect(maxInWindow(b, 1000)).toBeLessThanOrEqual(2 + 8 + JITTER_CALLS);
    expect(maxInWindow(b, 2000)).toBeLessThanOrEqual(2 + 16 + JITTER_CALLS);
    // Paced: at most perSecond in any second (one process alone would be allowed as many).
    expect(maxInWindow(p, 1000)).toBeLessThanOrEqual(5 + JITTER_CALLS - 1);
    expect(maxInWindow(g, 1000)).toBeLessThanOrEqual(4 + JITTER_CALLS - 1);
    // And the fleet still gets most of its quota: without sharing it would get 3×, blocked ~0.
    const seconds = durationMs / 1000;
    expect(b.length).toBeGreaterThanOrEqual(0.6 * 8 * seconds);
    expect(p.length).toBeGreaterThanOrEqual(0.6 * (1000 / 225) * seconds);
    expect(g.length).toBeGreaterThanOrEqual(0.6 * (1000 / 275) * seconds);
    // The group's members both served: it is one quota, not one endpoint.
    expect(run.byEndpoint.get('g1')?.length ?? 0).toBeGreaterThan(0);
    expect(run.byEndpoint.get('g2')?.length ?? 0).toBeGreaterThan(0);
  });

  test('Redis killed mid-run and restarted: calls keep flowing at the degraded share, then the fleet shares again; nothing stuck', async () => {
    const port = server().port;
    const perSecond = { b: 20, p: 10 };
    const share = 0.5;
    const cfg: FleetConfig = {
      port,
      prefix: 'fleet2:',
      endpoints: [
        { name: 'b', rateLimit: { perSecond: perSecond.b, burst: 2 } },
        { name: 'p', rateLimit: { perSecond: perSecond.p, mode: 'paced', marginMs: 0 } },
      ],
      concurrency: 6,
      opMs: 5,
      timeoutMs: 150,
      retryAfterMs: 300,
      degradedShare: share,
      // This test is about the degraded share itself: no hold before local calls.
      storeOptions: { degradedHoldMs: 0 },
    };
    const processes = 2;
    let killedAt = 0;
    let restartedAt = 0;
    const run = await runFleet(cfg, processes, 5000, async (startAt) => {
      await sleep(startAt + 1500 - Date.now());
      killedAt = Date.now();
      await server().kill();
      await sleep(1500);
      await server().restart();
      restartedAt = Date.now();
    });
    const end = run.startAt + 5000;
    // Every process noticed, went degraded, and recovered after the restart.
    for (const r of run.results) {
      // (A loaded machine may add a spurious timeout: only the order and the recovery are asserted.)
      const types = r.events.map((e) => e.type);
      types.forEach((t, i) => expect(t).toBe(i % 2 === 0 ? 'store-degraded' : 'store-recovered'));
      expect(r.events.some((e) => e.type === 'store-degraded' && e.t >= killedAt && e.t < restartedAt)).toBe(true);
      expect(r.events.some((e) => e.type === 'store-recovered' && e.t >= restartedAt && e.t < restartedAt + 2000)).toBe(true);
      // Nothing stuck: every call settled (the worker only reports once its loops ended), few failed.
      expect(r.ok).toBeGreaterThan(0);
      const failures = Object.values(r.failed).reduce((a, n) => a + n, 0);
      expect(failures).toBeLessThanOrEqual(0.05 * r.ok);
    }
    const outage = { from: killedAt + 300, to: restartedAt };
    const outageS = (outage.to - outage.from) / 1000;
    for (const [name, rate] of Object.entries(perSecond)) {
      const times = merged(run, name);
      if (process.env['DEBUG_FLEET'] !== undefined) {
        console.log(name, { outage: countIn(times, outage.from, outage.to), outageS, after: countIn(times, restartedAt + 1000, end), max1s: maxInWindow(times, 1000, restartedAt + 1000, end), events: run.results.map((r) => r.events.map((e) => `${e.type}@${e.t - run.startAt}`)) });
      }
      const local = rate * share;
      // Flowing during the outage: at least a third of the degraded rate…
      expect(countIn(times, outage.from, outage.to), name).toBeGreaterThanOrEqual((processes * local * outageS) / 3);
      // …and within it: each process at `share` of the ceiling (plus a fresh local burst).
      const degradedMax = processes * (local * outageS + Math.ceil(local)) + JITTER_CALLS;
      expect(countIn(times, outage.from, outage.to), name).toBeLessThanOrEqual(degradedMax);
      // Flowing again once Redis is back, under the fleet ceiling again.
      const after = { from: restartedAt + 1000, to: end };
      expect(countIn(times, after.from, after.to), name).toBeGreaterThan(0);
      const ceiling1s = name === 'b' ? 2 + rate : rate;
      expect(maxInWindow(times, 1000, after.from, after.to), name).toBeLessThanOrEqual(ceiling1s + JITTER_CALLS);
    }
    // Every key the fleet left behind expires on its own.
    const redis = new Redis({ host: '127.0.0.1', port });
    try {
      const keys = await redis.keys('{fleet2:}*');
      expect(keys.length).toBeGreaterThan(0);
      for (const k of keys) expect(await redis.pttl(k), k).toBeGreaterThan(0);
    } finally {
      redis.disconnect();
    }
  });

  fleet16(server);
});
