/**
 * One test per bug found by the reliability work, named after the bug. Each failed before
 * its fix (see the commit that added it).
 */
import { describe, expect, test, vi } from 'vitest';
import { Pool, isPoolError } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { classify, fail, FakeEndpoint, operation, start } from './support.js';

const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);

describe('regressions', () => {
  test.each([
    ['NaN', () => Number.NaN],
    ['Infinity', () => Number.POSITIVE_INFINITY],
    ['a throw', (): number => {
      throw new Error('rng broke');
    }],
  ])('a random source answering %s made a retrying call wait forever instead of backing off', async (_, random) => {
    const clock = new FakeClock();
    const a = new FakeEndpoint('a').then(fail('transient'));
    const pool = new Pool<FakeEndpoint>({
      endpoints: [{ name: 'a', conn: a }],
      classify,
      clock,
      random,
      deadlineMs: Number.POSITIVE_INFINITY,
      backoff: { initialMs: 100, maxMs: 1000, jitter: 'full' },
    });
    const call = start(pool.execute(operation(clock)));
    await clock.advance(1000);
    expect(call.settled).toBe(true);
    expect(call.value).toBe('a');
    expect(a.calls).toBe(2);
    expect(clock.pendingForegroundTimers).toBe(0);
    expect(pool.activeCalls).toBe(0);
  });
});

describe('regressions: signals', () => {
  test('a signal-like object without removeEventListener passed validation, then left the call unsettled', async () => {
    const clock = new FakeClock();
    const a = new FakeEndpoint('a');
    const pool = new Pool<FakeEndpoint>({ endpoints: [{ name: 'a', conn: a }], classify, clock });
    const signal = { aborted: false, addEventListener: () => undefined } as unknown as AbortSignal;
    const err = await pool.execute(operation(clock), { signal }).catch((e: unknown) => e);
    expect(code(err)).toBe('INVALID_OPTIONS');
    expect((err as Error).message).toBe('signal: expected an AbortSignal, got an object');
    expect(a.calls).toBe(0);
    expect(pool.activeCalls).toBe(0);
    // The pool still works for other calls.
    expect(await pool.execute(operation(clock))).toBe('a');
  });
});

describe('regressions: the system clock', () => {
  const LONG = 2 ** 31; // just above the hosts' 2^31 - 1 ms timer ceiling

  test('a deadline above 2^31-1 ms failed a call queued for a permit after 1 ms (the host timer overflowed)', async () => {
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', maxConcurrentCalls: 1, deadlineMs: LONG });
    const first = pool.execute(() => new Promise<string>((resolve) => setTimeout(() => resolve('first'), 50)));
    const second = pool.execute(async () => 'second').catch((e: unknown) => code(e));
    expect(await first).toBe('first');
    expect(await second).toBe('second');
    await pool.close();
  });

  test('an attempt timeout above 2^31-1 ms timed every attempt out after 1 ms', async () => {
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', attemptTimeoutMs: LONG, deadlineMs: Number.POSITIVE_INFINITY, maxAttempts: 1 });
    const result = await pool.execute(() => new Promise<string>((resolve) => setTimeout(() => resolve('it answered'), 30))).catch((e: unknown) => code(e));
    expect(result).toBe('it answered');
    await pool.close();
  });
});

describe('systemClock long timers', () => {
  test('a wait above the host ceiling is neither fired early nor left behind when cleared', async () => {
    const { systemClock } = await import('../src/index.js');
    let fired = 0;
    const long = systemClock.setTimeout(() => fired++, 2 ** 31);
    const never = systemClock.setTimeout(() => fired++, Number.POSITIVE_INFINITY);
    await new Promise((r) => setTimeout(r, 20));
    expect(fired).toBe(0);
    systemClock.clearTimeout(long);
    systemClock.clearTimeout(never);
    const short = systemClock.setTimeout(() => fired++, 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(fired).toBe(1);
    systemClock.clearTimeout(short);
  });
});

describe('no negative timer delay (Node 23+ warns: TimeoutNegativeWarning)', () => {
  test('systemClock hands the host 0 for a negative or NaN delay, and fires', async () => {
    const { systemClock } = await import('../src/index.js');
    const spy = vi.spyOn(globalThis, 'setTimeout');
    let fired = 0;
    try {
      systemClock.setTimeout(() => fired++, -0.03);
      systemClock.setTimeout(() => fired++, Number.NaN);
      const given = spy.mock.calls.map((c) => c[1]);
      expect(given).toEqual([0, 0]);
    } finally {
      spy.mockRestore();
    }
    await new Promise((r) => setTimeout(r, 20));
    expect(fired).toBe(2);
  });

  test('a call that finds its deadline passed between two readings of the clock waits 0 ms, not a negative delay (seed 2026120431, Node 26)', async () => {
    // breakerMode 'wait' with the breaker open: the call sleeps until its deadline; when that
    // timer fires, the clock reads a hair before the deadline (the call selects again, finds
    // the breaker still open and sleeps again) and then a hair after it.
    const fake = new FakeClock();
    let phase = 0;
    const delays: number[] = [];
    const clock = {
      now: () => (phase === 1 ? ((phase = 2), fake.now() - 0.1) : phase === 2 ? fake.now() + 0.1 : fake.now()),
      setTimeout: (fn: () => void, ms: number, background?: boolean) => {
        delays.push(ms);
        return fake.setTimeout(() => {
          const deadlineTimer = ms === 100;
          if (deadlineTimer) phase = 1;
          try {
            fn();
          } finally {
            if (deadlineTimer) phase = 0;
          }
        }, ms, background);
      },
      clearTimeout: (h: unknown) => fake.clearTimeout(h as never),
    };
    const pool = new Pool({
      endpoints: [{ name: 'a', conn: 1 }],
      classify: () => 'transient',
      clock,
      deadlineMs: 100,
      breaker: { threshold: 1, cooldownMs: 1000 },
      breakerMode: 'wait',
    });
    const call = pool.execute(() => Promise.reject(new Error('down'))).catch((e: unknown) => code(e));
    await fake.runAll();
    expect(await call).toBe('DEADLINE_EXCEEDED');
    expect(delays.filter((d) => d < 0)).toEqual([]);
    expect(delays).toContain(0); // the path above was taken
    await pool.close();
  });
});

describe('regressions: secrets', () => {
  test('a URL or key passed to the wrong option was echoed into the error message', async () => {
    const url = 'https://u:sk_live_SECRET@h/?k=SECRET';
    let caught: unknown;
    try {
      new Pool({ endpoints: url as never, classify: () => 'transient' });
    } catch (e) {
      caught = e;
    }
    expect((caught as Error).message).toBe('endpoints: expected a non-empty array, got a string of 36 characters');
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: url }], classify: () => 'transient' });
    const err = await pool.execute(async () => 1, { pin: url }).catch((e: unknown) => e);
    expect(code(err)).toBe('PIN_UNAVAILABLE');
    expect((err as Error).message).toBe('pinned endpoint a string of 36 characters is not in the pool');
    // Names and choices are still echoed, so typos stay easy to spot.
    const typo = await pool.execute(async () => 1, { pin: 'primray' }).catch((e: unknown) => e);
    expect((typo as Error).message).toBe('pinned endpoint "primray" is not in the pool');
    // A bare API key (32 characters, as Infura's or Alchemy's) given to the wrong option is not echoed either.
    const key = 'a1B2c3D4e5F6a7B8c9D0e1F2a3B4c5D6';
    const wrong = await pool.execute(async () => 1, { pin: key }).catch((e: unknown) => e);
    expect((wrong as Error).message).toBe('pinned endpoint a string of 32 characters is not in the pool');
    expect(() => new Pool({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', strategy: key as never })).toThrow(/got a string of 32 characters$/);
  });
});

describe('regressions: from the reliability report', () => {
  test('clock: null is rejected instead of silently using the system clock', async () => {
    const { Pool } = await import('../src/index.js');
    expect(() => new Pool({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', clock: null as never })).toThrow(/clock: expected a Clock/);
  });

  test('a weight beyond 1000 is rejected (the ring would repeat the endpoint that many times)', async () => {
    const { Pool } = await import('../src/index.js');
    expect(() => new Pool({ endpoints: [{ name: 'a', conn: 1, weight: 1e7 }], classify: () => 'transient' })).toThrow(/endpoints\[0\]\.weight: expected a positive integer up to 1000, got 10000000/);
  });

  test('an async listener that rejects does not surface as an unhandled rejection', async () => {
    const { Pool } = await import('../src/index.js');
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const pool = new Pool<number>({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', onEvent: async () => Promise.reject(new Error('async listener bug')) });
      expect(await pool.execute(async (c) => c)).toBe(1);
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
