/**
 * Twenty-sixth session, triage of the first mutation run of `src/call/waits.ts`: a survivor no
 * test held, even in the properties (bench/notes/mutation-s26.md, waits.ts:179).
 */
import { describe, expect, test } from 'vitest';
import { Pool, PoolError } from '../../src/index.js';
import { FakeClock } from '../../src/testing/fake-clock.js';

describe('a turn that leaves the attempt too little time', () => {
  test('fails the call at once rather than queue for it, once the endpoint has a usual success time', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a', rateLimit: { perSecond: 1 } }], classify: () => 'transient', clock, deadlineMs: 1300 });
    // Answers take 300 ms: the endpoint's usual success time, so a turn must leave 600 ms.
    const op = (conn: string) => new Promise<string>((resolve) => clock.setTimeout(() => resolve(conn), 300));
    const first = pool.execute(op);
    await clock.advance(300);
    expect(await first).toBe('a');
    // The next token is due at 1,000 ms, 700 ms from now. A deadline 1,000 ms from now (at
    // 1,300) leaves the attempt 300 ms at that turn: not enough.
    const tooLate = pool.execute(op, { deadlineMs: 1000 });
    let settledAt: number | undefined;
    void tooLate.catch(() => (settledAt = clock.now()));
    await clock.advance(0);
    expect(settledAt).toBe(300);
    const err = (await tooLate.catch((e: unknown) => e)) as PoolError;
    expect(err).toBeInstanceOf(PoolError);
    expect(err.attempts).toBe(0);
    expect(err.message).toMatch(/rate limits leave no turn for the call within its deadline/);
    // One 1,400 ms from now (at 1,700) leaves 700: the call queues and is served at its turn.
    const fits = pool.execute(op, { deadlineMs: 1400 });
    await clock.advance(1000);
    expect(await fits).toBe('a');
    expect(clock.now()).toBe(1300);
  });
});
