/**
 * A call keeps the clock reading it began at, and its first attempt reads its start and the
 * call's deadline through it (the attempt is the call itself, see call-core.ts; its due time
 * is derived, not stored). Whatever the reading, they must come out exact: the deadline an
 * operation sees, the attempt timeout and the duration an attempt reports. (Rounds four and
 * five of issue 16 kept the reading as small integers, 2^-12 ms steps past a first reading,
 * to save its boxed double, 16 B per call; these readings pinned that encoding, which cost
 * 7-20 % CPU per call both times and was taken out.) Each case makes a first call at
 * `startMs` (an encoding's epoch), then the call under test at `startMs + offsetMs`.
 */
import { describe, expect, test } from 'vitest';
import { Pool, type PoolEvent } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

const PAST_SMALL_MS = 2 ** 36;

describe('the begin reading of a call reads back exactly', () => {
  test.each([
    ['a whole reading', 5_000, 0],
    ['a reading in 2^-12 ms steps', 5_000, 0.000244140625 * 3],
    ['a reading of the system clock (about 1.7e12 ms, 2^-12 ms apart)', 1_764_000_000_000.5, 0.123046875],
    ['a reading finer than 2^-12 ms', 5_000, 0.1],
    ['a reading in 2^-12 ms steps, 2^36 ms (2.2 years) past the first', 5_000, PAST_SMALL_MS + 0.25],
    ['a reading before the epoch', 5_000, -300.5],
  ])('%s', async (_, startMs, offsetMs) => {
    const clock = new FakeClock(startMs);
    const events: PoolEvent[] = [];
    const pool = new Pool({ endpoints: [{ name: 'a', conn: 0 }], classify: () => 'transient', clock, deadlineMs: 30_000, attemptTimeoutMs: 700, maxAttempts: 1, onEvent: (e) => events.push(e) });
    await pool.execute(() => Promise.resolve(1)); // the pool's epoch: `startMs`
    // Move the clock without firing anything (the first call's attempt timer is ahead).
    (clock as unknown as { now(): number }).now = ((t) => () => t)(startMs + offsetMs);
    const begin = clock.now();
    let seen: number | undefined;
    const settled = pool.execute((_c, ctx) => {
      seen = ctx.deadlineAt;
      return new Promise(() => undefined);
    }).catch((e: unknown) => e);
    expect(seen).toBe(begin + 30_000);
    // The attempt times out 700 ms after the begin reading, to the bit.
    (clock as unknown as { now(): number }).now = () => begin + 700;
    await clock.advance(10_000);
    await settled;
    const failure = events.find((e) => e.type === 'attempt-failure');
    expect(failure).toMatchObject({ type: 'attempt-failure', errorClass: 'timeout' });
    expect((failure as { durationMs: number }).durationMs).toBe(700);
    await pool.close();
  });
});
