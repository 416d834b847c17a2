/**
 * Under sustained overload a rate-limited endpoint keeps serving at its limit: the excess
 * fails at once (`RATE_LIMITED`), every call admitted to the queue is served, and a turn
 * that comes late in a call never costs the endpoint its breaker. Found by the adaptive-limit
 * work: 15 calls/s offered to a 5/s paced key sent only 3.85/s, because turns came at the
 * last millisecond of the deadline, the attempts were cut short, and those cuts opened the
 * breaker (NO_ENDPOINT for everyone). All on the fake clock.
 */
import { describe, expect, test } from 'vitest';
import { FakeClock } from '../src/testing/index.js';
import { Pool, type PoolEvent } from '../src/index.js';

async function overload(offeredPerSecond: number, opMs: number) {
  const clock = new FakeClock(0);
  const events: PoolEvent[] = [];
  const pool = new Pool<number>({
    clock,
    classify: () => 'transient',
    deadlineMs: 10_000,
    attemptTimeoutMs: 5_000,
    endpoints: [{ name: 'a', conn: 1, rateLimit: { perSecond: 5, mode: 'paced' } }],
    onEvent: (e) => events.push(e),
  });
  const sends: number[] = [];
  const codes: Record<string, number> = {};
  let ok = 0;
  const op = () => {
    sends.push(clock.now());
    return new Promise<number>((r) => clock.setTimeout(() => r(1), opMs));
  };
  for (let t = 0; t < 60_000; t += 1000 / offeredPerSecond) {
    clock.setTimeout(() => {
      pool.execute(op).then(
        () => ok++,
        (e: { code: string }) => (codes[e.code] = (codes[e.code] ?? 0) + 1),
      );
    }, t);
  }
  await clock.advance(75_000);
  await pool.close();
  const steady = sends.filter((t) => t >= 10_000 && t < 50_000).length / 40;
  return { ok, codes, steady, sent: sends.length, opened: events.filter((e) => e.type === 'breaker-opened').length };
}

describe('overload on a rate-limited endpoint', () => {
  test.each([6, 10, 15, 30])('%d calls/s offered to a 5/s paced key: it sends at its limit, every sent call succeeds, the excess fails RATE_LIMITED', async (offered) => {
    const r = await overload(offered, 50);
    // The paced limiter's own margin (25 ms a second) leaves 4.88/s.
    expect(r.steady).toBeGreaterThanOrEqual(4.8);
    expect(r.ok).toBe(r.sent);
    expect(Object.keys(r.codes)).toEqual(['RATE_LIMITED']);
    expect(r.opened).toBe(0);
  });

  test('an attempt cut short by the deadline after a late turn does not count against the breaker; one that had its fair time does', async () => {
    const clock = new FakeClock(0);
    const events: PoolEvent[] = [];
    const pool = new Pool<number>({
      clock,
      classify: () => 'transient',
      deadlineMs: 1_000,
      breaker: { threshold: 1 },
      endpoints: [{ name: 'a', conn: 1, rateLimit: { perSecond: 1, mode: 'paced' } }],
      onEvent: (e) => events.push(e),
    });
    let durationMs = 10;
    const op = () => new Promise<number>((r) => clock.setTimeout(() => r(1), durationMs));
    const first = pool.execute(op);
    await clock.advance(10);
    await first;
    // Its turn comes 25 ms before its deadline (the endpoint's successes take 10 ms): admitted;
    // this time the operation takes 300 ms and the deadline cuts it after 25 ms.
    durationMs = 300;
    await clock.advance(40);
    const late = pool.execute(op).catch((e: { code: string }) => e.code);
    await clock.advance(1_100);
    expect(await late).toBe('DEADLINE_EXCEEDED');
    expect(events.some((e) => e.type === 'attempt-failure')).toBe(true);
    expect(events.filter((e) => e.type === 'breaker-opened')).toHaveLength(0);
    // An attempt that ran its fair share (the whole deadline) before the cut does count.
    await clock.advance(2_000);
    durationMs = 5_000;
    const hung = pool.execute(op).catch((e: { code: string }) => e.code);
    await clock.advance(1_100);
    expect(await hung).toBe('DEADLINE_EXCEEDED');
    expect(events.filter((e) => e.type === 'breaker-opened')).toHaveLength(1);
    await pool.close();
  });
});
