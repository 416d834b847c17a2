import { describe, expect, test } from 'vitest';
import { RetryBudget } from '../src/limits/budget.js';
import { isPoolError, type PoolError } from '../src/index.js';
import { fail, harness, start } from './support.js';

describe('RetryBudget', () => {
  test('allows max(ratio × calls, floor × window) retries per window', () => {
    const b = new RetryBudget(0.2, 1, 10_000);
    for (let i = 0; i < 100; i++) b.deposit(0);
    let granted = 0;
    while (b.tryWithdraw(0)) granted++;
    expect(granted).toBe(20);
    // With little traffic, the floor: 1/s over 10 s.
    const quiet = new RetryBudget(0.2, 1, 10_000);
    quiet.deposit(0);
    let q = 0;
    while (quiet.tryWithdraw(0)) q++;
    expect(q).toBe(10);
  });

  test('the window slides: spent retries come back as they age out', () => {
    const b = new RetryBudget(0.5, 0, 10_000);
    for (let i = 0; i < 10; i++) b.deposit(0);
    for (let i = 0; i < 5; i++) expect(b.tryWithdraw(0)).toBe(true);
    expect(b.tryWithdraw(0)).toBe(false);
    for (let i = 0; i < 10; i++) b.deposit(10_500);
    expect(b.tryWithdraw(10_500)).toBe(true);
  });
});

describe('retry budget in the pool', () => {
  test('an empty budget stops retries: RETRY_BUDGET_EXHAUSTED with the last error as cause', async () => {
    const h = harness(['a', 'b'], { retryBudget: { ratio: 0, minPerSecond: 0.1 }, maxAttempts: 5, breaker: { threshold: 1000 } });
    for (const e of Object.values(h.eps)) e.fallback = fail('transient');
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    await call.promise;
    expect(isPoolError(call.error) && call.error.code).toBe('RETRY_BUDGET_EXHAUSTED');
    expect((call.error as PoolError).attempts).toBe(2); // one retry from the floor (0.1/s × 10 s)
    expect((call.error as PoolError).cause).toBeInstanceOf(Error);
  });

  test('during a full outage, upstream load stays near 1.2× the offered load (3× without a budget)', async () => {
    async function outage(withBudget: boolean): Promise<number> {
      const h = harness(['a', 'b', 'c'], {
        maxAttempts: 3,
        breaker: { threshold: 1_000_000 },
        backoff: { initialMs: 10, maxMs: 10, jitter: 'none' },
        ...(withBudget ? { retryBudget: { ratio: 0.2, minPerSecond: 10 } } : {}),
      });
      for (const e of Object.values(h.eps)) e.fallback = fail('transient', 5);
      const calls = [];
      const offered = 200 * 60; // 200 calls/s for a minute
      for (let i = 0; i < offered; i++) {
        calls.push(start(h.pool.execute(h.op)));
        if (i % 20 === 19) await h.clock.advance(100);
      }
      await h.clock.advance(1000);
      await Promise.all(calls.map((c) => c.promise));
      const upstream = Object.values(h.eps).reduce((n, e) => n + e.calls, 0);
      return upstream / offered;
    }
    const naive = await outage(false);
    const budgeted = await outage(true);
    console.log(`full outage, 200 calls/s for 60 s: upstream/offered = ${naive.toFixed(2)} without a budget, ${budgeted.toFixed(2)} with one`);
    expect(naive).toBeCloseTo(3, 1);
    expect(budgeted).toBeLessThanOrEqual(1.21);
    expect(budgeted).toBeGreaterThanOrEqual(1.15);
  });
});
