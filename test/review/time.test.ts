/**
 * Issue 15, "Time": durations run on a monotonic clock; only the daily reset reads the
 * calendar. Each test here failed before the fix.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { Pool, isPoolError, systemClock } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { fail, harness, hang, start } from '../support.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

afterEach(() => vi.restoreAllMocks());

describe('the system clock', () => {
  test('now() does not follow a wall-clock step; wallNow() does', () => {
    const real = Date.now.bind(Date);
    const before = systemClock.now();
    vi.spyOn(Date, 'now').mockImplementation(() => real() - 5_000);
    const after = systemClock.now();
    expect(after - before).toBeGreaterThanOrEqual(0);
    expect(after - before).toBeLessThan(1_000);
    // Read the stepped wall clock first: the real one read after it can only be later (a
    // busy machine once put 6 ms between the two reads, in the other order).
    const wall = systemClock.wallNow!();
    expect(real() - wall).toBeGreaterThanOrEqual(5_000);
  });

  test('a 500 ms deadline holds with the wall clock stepped back 5 s mid-call', async () => {
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', deadlineMs: 500, attemptTimeoutMs: 60_000 });
    const real = Date.now.bind(Date);
    const t0 = performance.now();
    const call = pool.execute(() => new Promise(() => undefined));
    vi.spyOn(Date, 'now').mockImplementation(() => real() - 5_000);
    const error = await call.catch((e: unknown) => e);
    const took = performance.now() - t0;
    expect(isPoolError(error) && error.code).toBe('DEADLINE_EXCEEDED');
    // Far from the 5.5 s a wall-clock deadline takes; generous for a loaded machine.
    expect(took).toBeLessThan(4_000);
    await pool.close();
  });

  // Needs dist/ (a child process imports the build), which Stryker's sandbox does not have.
  test.skipIf(process.env['STRYKER_MUTATOR_WORKER'] !== undefined)('a process whose call used a timeout over 2^31 - 1 ms exits on its own', () => {
    const script = `
      import { Pool } from ${JSON.stringify(join(root, 'dist', 'index.js'))};
      const pool = new Pool({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', attemptTimeoutMs: 2 ** 32, deadlineMs: Number.MAX_SAFE_INTEGER });
      await pool.execute(async (c) => c);
      console.log('done');`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stdout.trim()).toBe('done');
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
  }, 40_000);
});

describe('FakeClock', () => {
  test('setTimeout(fn, Infinity) never fires, as on the system clock', async () => {
    const c = new FakeClock();
    let fired = 0;
    c.setTimeout(() => fired++, Number.POSITIVE_INFINITY);
    expect(await c.runAll()).toBe(0);
    await c.advance(1e12);
    expect(fired).toBe(0);
    expect(c.pendingTimers).toBe(0);
  });

  test('stepWall moves wallNow() only', async () => {
    const c = new FakeClock(1_000);
    let fired = 0;
    c.setTimeout(() => fired++, 10);
    c.stepWall(3_600_000);
    c.stepWall(-5_000);
    expect(c.now()).toBe(1_000);
    expect(c.wallNow()).toBe(1_000 + 3_600_000 - 5_000);
    expect(fired).toBe(0);
    await c.advance(10);
    expect(c.wallNow() - c.now()).toBe(3_595_000);
    expect(fired).toBe(1);
  });
});

describe('a wall-clock step changes no duration', () => {
  test.each([-5_000, -30_000, 3_600_000])('step %i ms: deadline, bucket and cooldown unchanged', async (step) => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, burst: 1 } }, 'b'], { deadlineMs: 5_000, attemptTimeoutMs: 60_000 });
    // b cools down for 2 s; a's only token is spent.
    h.eps['b']!.then(fail({ class: 'rate-limited', retryAfterMs: 2_000 }));
    const first = start(h.pool.execute(h.op, { pin: 'b', retry: 'none' }));
    expect(await h.pool.execute(h.op, { pin: 'a' })).toBe('a');
    await first.promise;
    const cooling = h.pool.stats()[1]!.cooldownRemainingMs;
    expect(cooling).toBeGreaterThanOrEqual(2_000); // Retry-After plus its jitter
    h.clock.stepWall(step);
    expect(h.pool.stats()[1]!.cooldownRemainingMs).toBe(cooling);
    // The bucket refills in 100 ms whatever the step; the call's 5 s deadline is not moved by a second step.
    h.eps['a']!.then(hang());
    const c = start(h.pool.execute(h.op, { pin: 'a' }));
    const startedAt = h.clock.now();
    await h.clock.advance(20);
    h.clock.stepWall(step);
    await h.clock.advance(100);
    expect(h.eps['a']!.startedAt.at(-1)).toBe(startedAt + 100);
    await h.clock.advance(4_850);
    expect(c.settled).toBe(false);
    await h.clock.advance(30);
    expect(c.settled).toBe(true);
    expect(isPoolError(c.error) && c.error.code).toBe('DEADLINE_EXCEEDED');
  });

  test('the daily quota resets at the calendar boundary, read from wallNow()', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 23, 0));
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a', rateLimit: { perDay: 10, dailyStopFraction: 1 } }], classify: () => 'transient', clock });
    for (let i = 0; i < 10; i++) await pool.execute(async (c) => c);
    expect(pool.stats()[0]!.dailyCount).toBe(10);
    const blocked = start(pool.execute(async (c) => c, { breakerMode: 'fail-fast' }));
    await clock.flush();
    expect(isPoolError(blocked.error) && blocked.error.code).toBe('NO_ENDPOINT');
    // The calendar passes midnight (an NTP correction) while monotonic time stands still.
    clock.stepWall(3_600_000);
    expect(pool.stats()[0]!.dailyCount).toBe(0);
    expect(await pool.execute(async (c) => c)).toBe('a');
  });

  test('a wall clock stepped forward across the reset and back again does not count that day afresh', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 23, 0));
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a', rateLimit: { perDay: 10, dailyStopFraction: 1 } }], classify: () => 'transient', clock });
    for (let i = 0; i < 6; i++) await pool.execute(async (c) => c);
    // NTP steps the wall past midnight: taken as a reset while it lasts.
    clock.stepWall(2 * 3_600_000);
    expect(pool.stats()[0]!.dailyCount).toBe(0);
    for (let i = 0; i < 2; i++) await pool.execute(async (c) => c);
    // ... and back: the provider's day never ended, so its 6 calls count again, with the 2 made meanwhile.
    clock.stepWall(-2 * 3_600_000);
    expect(pool.stats()[0]!.dailyCount).toBe(8);
    for (let i = 0; i < 2; i++) await pool.execute(async (c) => c);
    const blocked = start(pool.execute(async (c) => c, { breakerMode: 'fail-fast' }));
    await clock.flush();
    expect(isPoolError(blocked.error) && blocked.error.code).toBe('NO_ENDPOINT');
    expect(pool.stats()[0]!.status).toBe('parked');
    // The real midnight resets it.
    await clock.advance(3_600_000);
    expect(pool.stats()[0]!.dailyCount).toBe(0);
    expect(await pool.execute(async (c) => c)).toBe('a');
    await pool.close();
  });

  test('after the wall clock steps back a day or more, the quota still resets at the next reset hour the wall reaches', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 23, 0));
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a', rateLimit: { perDay: 1, dailyStopFraction: 1 } }], classify: () => 'transient', clock });
    expect(await pool.execute(async (c) => c)).toBe('a');
    expect(pool.stats()[0]!.status).toBe('parked');
    // Back a year (a VM restored from a snapshot): the count stands, the day it belongs to is the wall's.
    clock.stepWall(-365 * 86_400_000);
    expect(pool.stats()[0]!.dailyCount).toBe(1);
    expect(pool.stats()[0]!.status).toBe('parked');
    await clock.advance(3_600_000 - 1);
    expect(pool.stats()[0]!.status).toBe('parked');
    await clock.advance(1);
    expect(pool.stats()[0]!.dailyCount).toBe(0);
    expect(pool.stats()[0]!.status).toBe('ok');
    expect(await pool.execute(async (c) => c)).toBe('a');
    await pool.close();
  });
});
