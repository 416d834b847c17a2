/**
 * A user's own tests, written the way docs/testing.md says (second new-user pass,
 * NOTES-newuser2.md): a quota that resets at midnight UTC, a hanging endpoint behind a
 * deadline, and the user's own timer on the same clock. All in virtual time: each test
 * checks that it took well under a second of real time.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { Pool, isPoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

let realStart = 0;
beforeEach(() => {
  realStart = performance.now();
});
afterEach(() => {
  expect(performance.now() - realStart).toBeLessThan(1_000);
});

describe('FakeClock in a user test', () => {
  test('a daily quota resets at the configured UTC hour, read from the fake wall clock', async () => {
    const clock = new FakeClock(Date.parse('2026-03-01T23:59:00Z'));
    const pool = new Pool<string>({
      endpoints: [{ name: 'free-tier', conn: 'k', rateLimit: { perDay: 2, dailyStopFraction: 1 } }],
      classify: () => 'transient',
      dailyResetUtcHour: 0,
      clock,
    });
    const op = async (conn: string): Promise<string> => conn;
    expect(await pool.execute(op)).toBe('k');
    expect(await pool.execute(op)).toBe('k');
    const spent = await pool.execute(op).catch((e: unknown) => e);
    expect(isPoolError(spent) && [spent.code, spent.retryAfterMs, spent.message]).toEqual(['NO_ENDPOINT', 60_000, 'no endpoint admits calls: "free-tier" parked']);
    expect(pool.stats()[0]).toMatchObject({ status: 'parked', dailyCount: 2 });
    await clock.advance(60_000); // midnight UTC
    expect(await pool.execute(op)).toBe('k');
    await pool.close();
    expect(clock.pendingTimers).toBe(0);
  });

  test('a hanging endpoint: the attempt timeout moves the call on, the deadline bounds it', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({
      endpoints: [
        { name: 'hangs', conn: 'h' },
        { name: 'works', conn: 'w' },
      ],
      classify: () => 'transient',
      attemptTimeoutMs: 2_000,
      deadlineMs: 5_000,
      clock,
    });
    const seen: string[] = [];
    const op = (conn: string, ctx: { signal: AbortSignal }): Promise<string> => {
      seen.push(conn);
      if (conn === 'w') return Promise.resolve('served by works');
      return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted by the pool'))));
    };
    expect(await clock.runUntilSettled(pool.execute(op))).toBe('served by works');
    expect(clock.now()).toBe(2_000); // one attempt timeout, no backoff before an untried endpoint
    expect(seen).toEqual(['h', 'w']);
    // Pinned to the hanging one: the deadline ends it, and the message says what happened.
    const e = await clock.runUntilSettled(pool.execute(op, { pin: 'hangs' })).catch((error: unknown) => error);
    expect(isPoolError(e) && [e.code, e.attempts, e.message]).toEqual(['DEADLINE_EXCEEDED', 3, `the call's deadline of 5000 ms passed after 3 attempts (failed: "hangs" timeout, "hangs" timeout, "hangs" timeout)`]);
    await pool.close();
    expect(clock.pendingForegroundTimers).toBe(0);
  });

  test("the user's own timer on the same clock moves with the pool's", async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a', rateLimit: { perSecond: 1 } }], classify: () => 'transient', clock });
    // The user's own refresh loop, every 1.5 s, on the pool's clock.
    const refreshed: number[] = [];
    const tick = (): void => {
      refreshed.push(clock.now());
      if (refreshed.length < 3) clock.setTimeout(tick, 1_500);
    };
    clock.setTimeout(tick, 1_500);
    const calls = [1, 2, 3].map(() => pool.execute(async () => clock.now()));
    await clock.advance(5_000);
    expect(await Promise.all(calls)).toEqual([0, 1_000, 2_000]); // one call a second
    expect(refreshed).toEqual([1_500, 3_000, 4_500]);
    await pool.close();
  });
});
