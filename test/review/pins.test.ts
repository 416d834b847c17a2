/**
 * Issue 15: rules the mutation review found unpinned (a mutant survived every test). One
 * test per rule, each written to fail when that rule's code is changed.
 */
import { describe, expect, test } from 'vitest';
import { Breaker, resolveBreaker } from '../../src/health/breaker.js';
import { fail, harness, hang, ok, start } from '../support.js';

describe('breaker', () => {
  const opts = resolveBreaker({ threshold: 2, cooldownMs: 1000, maxCooldownMs: 8000 });

  test('a probe that fails after a late success closed the breaker counts once in the closed streak, and does not re-open it', () => {
    const b = new Breaker(opts);
    const before = b.generation;
    b.recordFailure(before, 0, 0);
    expect(b.recordFailure(before, 0, 0)).toBe(true); // opens
    const probe = b.enter(1000);
    expect(probe).not.toBe(0);
    // A late success from before the opening closes it while the probe is out.
    expect(b.recordSuccess(1001)).toBe(true);
    expect(b.state(1001)).toBe('closed');
    // The probe's failure is an ordinary failure now: the streak is 1, below the threshold of 2.
    expect(b.recordFailure(b.generation, probe, 1002)).toBe(false);
    expect(b.failures).toBe(1);
    expect(b.state(1002)).toBe('closed');
    expect(b.recordFailure(b.generation, 0, 1003)).toBe(true);
  });

  test('a failed probe re-opens with the cooldown doubled; the slot is free again after it', () => {
    const b = new Breaker(opts);
    b.recordFailure(b.generation, 0, 0);
    b.recordFailure(b.generation, 0, 0);
    const probe = b.enter(1000);
    expect(b.admits(1000)).toBe(false);
    expect(b.recordFailure(b.generation, probe, 1000)).toBe(true);
    expect(b.state(1000)).toEqual({ state: 'open', untilMs: 3000 });
    expect(b.admits(3000)).toBe(true);
  });
});

describe('health probes', () => {
  test('probeHealth needs no free permit and no token', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1, burst: 1 } }], { maxConcurrentCalls: 1 });
    h.eps['a']!.then(hang());
    const holder = start(h.pool.execute(h.op, { deadlineMs: 10_000, attemptTimeoutMs: 10_000 }));
    await h.clock.flush();
    expect(h.pool.pendingCalls).toBe(0);
    const probed = start(h.pool.probeHealth(async () => 'up'));
    await h.clock.flush();
    expect(probed.value).toEqual([{ endpoint: 'a', ok: true, durationMs: 0 }]);
    await h.clock.advance(10_000);
    expect(holder.settled).toBe(true);
  });

  test("probe failures never feed a closed breaker's failure streak", async () => {
    const h = harness(['a'], { breaker: { threshold: 2, cooldownMs: 1000 } });
    h.eps['a']!.then(fail('transient'), ok());
    await start(h.pool.execute(h.op, { retry: 'none' })).promise;
    expect(h.pool.stats()[0]!.consecutiveFailures).toBe(1);
    const probed = start(h.pool.probeHealth(() => Promise.reject(new Error('down'))));
    await h.clock.flush();
    expect(probed.value?.[0]?.ok).toBe(false);
    expect(h.pool.stats()[0]!.consecutiveFailures).toBe(1);
    expect(h.pool.breakerState('a')).toBe('closed');
  });
});

describe('selection', () => {
  test("health: equal failures and 5-minute usage, the endpoint less used over 15 minutes wins", async () => {
    const h = harness(['a', 'b'], { strategy: 'health' });
    // a is used 3 times, 10 minutes ago: outside the 5-minute window, inside the 15-minute one.
    for (let i = 0; i < 3; i++) expect(await h.pool.execute(h.op, { pin: 'a' })).toBe('a');
    await h.clock.advance(600_000);
    expect(h.pool.stats().map((s) => [s.usage5m, s.usage15m])).toEqual([
      [0, 3],
      [0, 0],
    ]);
    expect(await h.pool.execute(h.op)).toBe('b');
  });

  test("weights are inert under 'ordered', even in panic, where calls spread evenly over the tier", async () => {
    const h = harness([{ name: 'a', weight: 1 }, { name: 'b', weight: 50 }], { maxEjectedPercent: 50, breaker: { threshold: 1, cooldownMs: 60_000 } });
    const seen = new Set<unknown>();
    for (let i = 0; i < 10; i++) seen.add(await h.pool.execute(h.op));
    expect([...seen]).toEqual(['a']);
    // Both down, both breakers open: the tier panics and calls rotate over its endpoints, one each, not 1 to 50.
    h.eps['a']!.fallback = fail('transient');
    h.eps['b']!.fallback = fail('transient');
    await start(h.pool.execute(h.op, { retry: 'none' })).promise;
    await start(h.pool.execute(h.op, { retry: 'none', pin: 'b' })).promise;
    const before = h.eps['a']!.calls;
    for (let i = 0; i < 10; i++) await start(h.pool.execute(h.op, { retry: 'none' })).promise;
    expect(h.eps['a']!.calls - before).toBe(5);
  });

  test("'ordered' reclaims the primary once its breaker closes after recovery", async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 1000 } });
    h.eps['a']!.then(fail('transient'));
    const first = start(h.pool.execute(h.op));
    await h.clock.advance(1);
    expect(first.value).toBe('b');
    expect(await h.pool.execute(h.op)).toBe('b'); // a is open
    await h.clock.advance(1000);
    expect(await h.pool.execute(h.op)).toBe('a'); // the probe succeeds and closes it
    expect(h.pool.breakerState('a')).toBe('closed');
    expect(await h.pool.execute(h.op)).toBe('a');
  });
});
