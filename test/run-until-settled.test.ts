import { describe, expect, test } from 'vitest';
import { Pool, type PoolOptions } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

function pool(clock: FakeClock, extra: Partial<PoolOptions<string>> = {}): Pool<string> {
  return new Pool<string>({
    endpoints: [{ name: 'only', conn: 'x' }],
    classify: () => 'transient',
    backoff: { initialMs: 1_000, jitter: 'none' },
    clock,
    ...extra,
  });
}

describe('FakeClock.runUntilSettled', () => {
  test('a call with a backoff due settles, at the virtual time the backoff ends', async () => {
    const clock = new FakeClock();
    const p = pool(clock);
    let calls = 0;
    const result = await clock.runUntilSettled(
      p.execute(async () => {
        calls++;
        if (calls < 3) throw new Error('reset');
        return 'ok';
      }),
    );
    expect(result).toBe('ok');
    expect(calls).toBe(3);
    expect(clock.now()).toBe(3_000); // 1000 then 2000 ms of backoff, nothing more
    await p.close();
  });

  test('rejects with the call error, never as unhandled', async () => {
    const clock = new FakeClock();
    const p = pool(clock, { maxAttempts: 2 });
    await expect(clock.runUntilSettled(p.execute(() => Promise.reject(new Error('down'))))).rejects.toMatchObject({ code: 'RETRIES_EXHAUSTED' });
    expect(clock.now()).toBe(1_000);
  });

  test('bounded: maxMs, maxSteps, and no timer left', async () => {
    const clock = new FakeClock();
    const never = new Promise<void>(() => undefined);
    await expect(clock.runUntilSettled(never)).rejects.toThrow(/no timer is left/);
    const tick = (): void => void clock.setTimeout(tick, 10);
    tick();
    await expect(clock.runUntilSettled(never, { maxMs: 100 })).rejects.toThrow(/after 100 ms of virtual time/);
    expect(clock.now()).toBeLessThanOrEqual(100);
    await expect(clock.runUntilSettled(never, { maxSteps: 5, maxMs: 1e9 })).rejects.toThrow(/after 5 timers fired/);
  });

  test('after every call settled, no timer would keep a process alive', async () => {
    const clock = new FakeClock();
    const p = pool(clock, { attemptTimeoutMs: 5_000 });
    let n = 0;
    await clock.runUntilSettled(Promise.all([1, 2, 3].map(() => p.execute(async () => (++n % 2 === 0 ? Promise.reject(new Error('x')) : 'ok')))));
    expect(clock.pendingForegroundTimers).toBe(0);
    // At most the shared attempt-timeout timer, idle and in the background (docs/testing.md says so).
    expect(clock.pendingTimers).toBeLessThanOrEqual(1);
    await p.close();
    expect(clock.pendingTimers).toBe(0);
  });
});
