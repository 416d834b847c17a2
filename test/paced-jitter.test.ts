/**
 * A paced key kept busy, on a clock whose readings run ahead of its timers as on a real host
 * (Node fires timers on the event loop's whole-millisecond time, which lags
 * `performance.now()`): the queue's timer, armed for a call's slot, wakes it a fraction of a
 * millisecond before the slot by the clock's reading, and it waits one more millisecond.
 * Its start is recorded on its slot (within the margin), so the next slot does not move:
 * otherwise every such wake cost a millisecond of the key's capacity for good (1.1 % of a
 * 20/s key's calls with a 60 ms margin; 12.6 % more failures on generated key pools at
 * 90 % load). The same keeps whole-millisecond rounding from adding up on an exact clock.
 */
import { describe, expect, test } from 'vitest';
import { Pool } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { seeded } from './helpers/prng.js';
import { TrackedClock } from './properties/sim.js';

/** Calls started on one paced key kept busy by 30 callers for `ms`, and the closest two starts. */
async function saturate(perSecond: number, marginMs: number, jitterMs: number, ms = 60_000): Promise<{ starts: number; closest: number }> {
  const fake = new FakeClock(0);
  const clock = new TrackedClock(fake, jitterMs, seeded(perSecond * 1000 + 7));
  const pool = new Pool<number>({
    endpoints: [{ name: 'k', conn: 1, rateLimit: { perSecond, mode: 'paced', marginMs } }],
    classify: () => 'transient',
    clock,
    deadlineMs: 3_600_000,
    maxQueueWaitMs: 3_600_000,
  });
  const times: number[] = [];
  const op = async (): Promise<number> => {
    times.push(clock.stamp()); // the pool's last reading: no jitter drawn
    return 1;
  };
  let running = true;
  const caller = async (): Promise<void> => {
    while (running) await pool.execute(op).catch(() => undefined);
  };
  const callers = Array.from({ length: 30 }, caller);
  await fake.advance(ms);
  running = false;
  await pool.close();
  await Promise.all(callers);
  const inside = times.filter((t) => t < ms);
  let closest = Infinity;
  for (let i = 1; i < inside.length; i++) closest = Math.min(closest, inside[i]! - inside[i - 1]!);
  return { starts: inside.length, closest };
}

describe('a paced key on a clock that reads ahead of its timers', () => {
  test.each([
    [20, 60],
    [10, 60],
    [5, 25],
    [20, 25],
    [50, 25],
    [3, 0],
  ])('%i/s, margin %i ms: the calls the margin leaves, never two closer than 1000/perSecond', async (perSecond, marginMs) => {
    const slotMs = (1000 / perSecond) * (1 + marginMs / 1000);
    // The rounding is made up for where the margin's share of a slot covers a millisecond.
    const covered = (slotMs * marginMs) / (1000 + marginMs) >= 1;
    const exact = await saturate(perSecond, marginMs, 0);
    if (covered) expect(exact.starts).toBeGreaterThanOrEqual(Math.floor(60_000 / slotMs));
    for (const jitterMs of [0.05, 0.4, 0.9]) {
      const jittered = await saturate(perSecond, marginMs, jitterMs);
      if (covered) expect(jittered.starts, `jitter ${jitterMs} ms`).toBeGreaterThanOrEqual(exact.starts - 1);
      // Start times are the clock's readings, up to the jitter after the pool's own.
      expect(jittered.closest, `jitter ${jitterMs} ms`).toBeGreaterThanOrEqual(1000 / perSecond - jitterMs - 1e-9);
      expect(jittered.starts, `jitter ${jitterMs} ms`).toBeLessThanOrEqual(Math.ceil(60_000 / slotMs) + 1);
    }
    expect(exact.closest).toBeGreaterThanOrEqual(1000 / perSecond - 1e-9);
    expect(exact.starts).toBeLessThanOrEqual(Math.ceil(60_000 / slotMs) + 1);
  });
});
