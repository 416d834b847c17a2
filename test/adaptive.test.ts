/**
 * Issue 18: limits that tune themselves from bare 429s (`rateLimit.adaptive`). The
 * controller alone on made-up times, then in the pool on the fake clock, then one run of
 * the simulator (bench/sim/adaptive.mjs) against the goal.
 */
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type PoolEvent } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { AdaptiveLimit, resolveAdaptive, type ResolvedAdaptive } from '../src/limits/adaptive.js';
import { runAdaptive } from '../bench/sim/adaptive.mjs';
import { fail, harness, ok } from './support.js';

const opts = (o: Partial<ResolvedAdaptive> = {}): ResolvedAdaptive => ({ min: 1, max: 20, decrease: 0.8, windowMs: 1000, holdMs: 5000, maxHoldMs: 20_000, doublingMs: 8000, ...o });

/** Drives `a` for `ms` from `t`: `sent` attempts a second, `okRate` of them succeeding; applies increases. Returns the end time. */
function traffic(a: AdaptiveLimit, t: number, ms: number, sent: number, okRate = sent): number {
  const end = t + ms;
  let nextSend = t;
  let nextOk = t;
  while (nextSend < end || nextOk < end) {
    if (nextSend <= nextOk && nextSend < end) {
      a.taken(nextSend);
      a.increase(nextSend, 1000 / a.rate);
      nextSend += 1000 / sent;
    } else {
      a.succeeded(nextOk);
      a.increase(nextOk, 1000 / a.rate);
      nextOk += 1000 / okRate;
    }
  }
  return end;
}

describe('the controller (limits/adaptive.ts)', () => {
  test('decrease: to what the server accepted, once per window, not for calls sent before it', () => {
    const a = new AdaptiveLimit(opts(), 20, 0);
    // Sending 20/s, the server accepts 12/s: just under that, in whole calls (never under half the rate in force).
    let t = traffic(a, 0, 3000, 20, 12);
    const rate = a.limited(t, t - 50)!;
    expect(a.anchor).toBeGreaterThanOrEqual(11);
    expect(a.anchor).toBeLessThanOrEqual(12);
    expect(rate).toBe(Math.ceil(a.anchor! * 0.95));
    // More refusals in the same window, or for calls sent before the decrease, change nothing.
    expect(a.limited(t + 500, t + 100)).toBeUndefined();
    expect(a.limited(t + 1500, t - 10)).toBeUndefined();
    t = traffic(a, t + 1500, 1000, 12, 12);
    // Refused at the rate it had been accepting: the limit moved under the reading, so multiply.
    expect(a.limited(t, t - 20)).toBeCloseTo(rate * 0.8);
    // Sending little (3/s of the rate in force), a reading of 2/s says more about the demand than the server: never under half.
    const before = a.rate;
    t = traffic(a, t + 1000, 2000, 3, 2);
    expect(a.limited(t, t)).toBeCloseTo(before / 2);
    // Sending all it may, the same reading is the server's limit: straight there.
    t = traffic(a, t + 1000, 2000, a.rate, 2);
    expect(a.limited(t, t)).toBe(2);
  });

  test('with too few successes to read, a refusal multiplies the rate by `decrease`', () => {
    const a = new AdaptiveLimit(opts({ decrease: 0.5 }), 20, 0);
    expect(a.limited(1000, 999)).toBe(10);
    expect(a.anchor).toBe(10);
  });

  test('increase: back to the anchor within two windows, hold, then probe one call per window above it, faster and faster', () => {
    const a = new AdaptiveLimit(opts(), 20, 0);
    let t = traffic(a, 0, 3000, 20, 10);
    a.limited(t, t);
    expect(a.rate).toBe(10);
    // Busy at whatever the limiter allows.
    const steps: [number, number][] = [];
    for (let i = 0; i < 40; i++) {
      const before = a.rate;
      t = traffic(a, t, 500, a.rate);
      if (a.rate !== before) steps.push([t - 3000, a.rate]);
    }
    const firstProbe = steps.find(([, r]) => r > 10)!;
    // The probe waited for the hold (5 s) after the two-window approach.
    expect(firstProbe[0]).toBeGreaterThanOrEqual(7000);
    expect(firstProbe[1]).toBeCloseTo(11, 5);
    const increments = steps.filter(([, r]) => r > 10 && r < 20).map(([, r], i, xs) => r - (i === 0 ? 10 : xs[i - 1]![1]));
    // After that first jump, each step is larger than the last.
    expect(increments.length).toBeGreaterThan(3);
    for (let i = 2; i < increments.length; i++) expect(increments[i]!).toBeGreaterThan(increments[i - 1]!);
    expect(steps.every(([, r]) => r <= 20)).toBe(true);
  });

  test('an idle endpoint does not grow; a busy one does', () => {
    const a = new AdaptiveLimit(opts(), 20, 0);
    let t = traffic(a, 0, 3000, 20, 10);
    a.limited(t, t);
    t = traffic(a, t, 30_000, 2); // 2/s against a limit of 10: not busy
    expect(a.rate).toBe(10);
    // Idle time did not count towards the hold: two busy seconds later it has not started probing.
    t = traffic(a, t, 2000, 40);
    expect(a.rate).toBe(10);
    traffic(a, t, 30_000, 40); // asking for more than it allows
    expect(a.rate).toBeGreaterThan(10);
  });

  test('a failed probe keeps the anchor and doubles the hold, up to maxHoldMs', () => {
    const a = new AdaptiveLimit(opts({ maxHoldMs: 12_000 }), 20, 0);
    let t = traffic(a, 0, 3000, 20, 10);
    a.limited(t, t);
    const holds: number[] = [];
    for (let i = 0; i < 4; i++) {
      while (a.rate <= 10) t = traffic(a, t, 250, a.rate + 5, 10);
      a.limited(t, t);
      expect(a.anchor).toBe(10);
      holds.push(a.hold);
    }
    expect(holds).toEqual([10_000, 12_000, 12_000, 12_000]);
  });

  test('a counted refusal always lowers the rate (above the floor), whatever the reading', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    for (let run = 0; run < 200; run++) {
      const a = new AdaptiveLimit(opts({ min: 0.5, max: 20 }), 1 + rnd() * 19, 0);
      let t = 0;
      for (let step = 0; step < 20; step++) {
        const rate = a.rate;
        t = traffic(a, t, 500 + rnd() * 5000, rate * (0.2 + rnd()), 0.1 + rnd() * rate);
        const before = a.rate;
        const r = a.limited(t, t);
        if (r !== undefined && before > 0.5) expect(r).toBeLessThan(before);
      }
    }
  });

  test('floor and ceiling: never under min, never over max', () => {
    const a = new AdaptiveLimit(opts({ min: 3, max: 12 }), 12, 0);
    for (let t = 1000; t < 20_000; t += 1000) a.limited(t, t);
    expect(a.rate).toBe(3);
    traffic(a, 20_000, 120_000, 50);
    expect(a.rate).toBe(12);
  });
});

describe('rateLimit.adaptive in the pool', () => {
  const adaptive = { rateLimit: { perSecond: 10, mode: 'paced' as const, adaptive: { min: 1, max: 10 } } };

  test('a bare 429 lowers the limit: endpoint-adapted, stats().adaptive and capacity() agree; a 429 with a number still sets a learned ceiling', async () => {
    const h = harness([{ name: 'a', ...adaptive }], { deadlineMs: 60_000, maxAttempts: 1 });
    h.eps.a!.then(fail('rate-limited'));
    await h.pool.execute(h.op).catch(() => undefined);
    const adapted = h.events.filter((e): e is Extract<PoolEvent, { type: 'endpoint-adapted' }> => e.type === 'endpoint-adapted');
    expect(adapted).toEqual([{ type: 'endpoint-adapted', endpoint: 'a', perSecond: 8, previous: 10, reason: 'decrease' }]);
    expect(h.pool.stats()[0]!.adaptive).toMatchObject({ perSecond: 8, foundPerSecond: 8 });
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(8);
    expect(h.pool.capacity()).toBe(8);
    // Bare 429s cool for one interval of the new rate, not the doubling cooldown.
    expect(h.pool.stats()[0]!.cooldownRemainingMs).toBeLessThanOrEqual(Math.ceil((1000 / 8) * 1.025));
    // A hinted 429 goes to the learned ceiling; the lower of the two is in force.
    await h.clock.advance(2000);
    h.eps.a!.then(fail({ class: 'rate-limited', ceilingPerSecond: 3 }));
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.events.some((e) => e.type === 'endpoint-recalibrated' && e.perSecond === 3)).toBe(true);
    expect(h.events.filter((e) => e.type === 'endpoint-adapted')).toHaveLength(1);
    expect(h.pool.stats()[0]!.ceilingPerSecond).toBe(3);
    expect(h.pool.stats()[0]!.adaptive!.perSecond).toBe(8);
  });

  test('successes under pressure raise it again, reported as increases', async () => {
    const h = harness([{ name: 'a', ...adaptive }], { maxAttempts: 1 });
    h.eps.a!.then(fail('rate-limited'));
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.stats()[0]!.adaptive!.perSecond).toBe(8);
    // Keep it busy for a minute: more calls than it allows (those it cannot take in time fail fast).
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 1200; i++) {
      calls.push(h.pool.execute(h.op).catch(() => undefined));
      await h.clock.advance(50);
    }
    await h.clock.advance(30_000);
    await Promise.all(calls);
    const ups = h.events.filter((e) => e.type === 'endpoint-adapted' && e.reason === 'increase');
    expect(ups.length).toBeGreaterThan(0);
    expect(h.pool.stats()[0]!.adaptive!.perSecond).toBe(10);
  });

  test('in a group, the shared quota adapts: a bare 429 on one key lowers the account for both', async () => {
    const h = harness([{ name: 'a', ...adaptive }, { name: 'b', ...adaptive }], { groups: [['a', 'b']], maxAttempts: 1 });
    h.eps.a!.then(fail('rate-limited'));
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.events.filter((e) => e.type === 'endpoint-adapted')).toEqual([{ type: 'endpoint-adapted', endpoint: 'a', perSecond: 8, previous: 10, reason: 'decrease' }]);
    expect(h.pool.stats().map((x) => x.ceilingPerSecond)).toEqual([8, 8]);
    expect(h.pool.capacity()).toBe(8);
  });

  test('without it, nothing changes: a bare 429 cools down and doubles, no endpoint-adapted', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, mode: 'paced' } }], { maxAttempts: 1 });
    h.eps.a!.then(fail('rate-limited'));
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.events.some((e) => e.type === 'endpoint-adapted')).toBe(false);
    expect(h.pool.stats()[0]!.adaptive).toBeUndefined();
    expect(h.pool.stats()[0]!.cooldownRemainingMs).toBe(1000);
  });

  test('`adaptive: true` takes its ceiling from perSecond; no perSecond starts at max', () => {
    const clock = new FakeClock(0);
    const make = (rateLimit: object) => new Pool({ clock, classify: () => 'transient', endpoints: [{ name: 'a', conn: 1, rateLimit }] });
    expect(make({ perSecond: 6, adaptive: true }).capacity()).toBe(6);
    expect(make({ adaptive: { max: 7 } }).capacity()).toBe(7);
    expect(ok).toBeTypeOf('function');
  });

  test.each([
    [{ adaptive: {} }, 'endpoints[0].rateLimit.adaptive.max'],
    [{ perSecond: 5, adaptive: { min: 6 } }, 'endpoints[0].rateLimit.adaptive.min'],
    [{ perSecond: 50, adaptive: { max: 10 } }, 'endpoints[0].rateLimit.perSecond'],
    [{ perSecond: 5, adaptive: { decrease: 1 } }, 'endpoints[0].rateLimit.adaptive.decrease'],
    [{ perSecond: 5, adaptive: { decrease: 0 } }, 'endpoints[0].rateLimit.adaptive.decrease'],
    [{ perSecond: 5, adaptive: { windowMs: 0 } }, 'endpoints[0].rateLimit.adaptive.windowMs'],
    [{ perSecond: 5, adaptive: { holdMs: 9000, maxHoldMs: 1000 } }, 'endpoints[0].rateLimit.adaptive.maxHoldMs'],
    [{ perSecond: 5, adaptive: { max: Number.NaN } }, 'endpoints[0].rateLimit.adaptive.max'],
    [{ perSecond: 5, adaptive: { mx: 9 } }, 'endpoints[0].rateLimit.adaptive.mx'],
    [{ perSecond: 5, adaptive: 'yes' }, 'endpoints[0].rateLimit.adaptive'],
  ])('INVALID_OPTIONS for %j', (rateLimit, field) => {
    let caught: unknown;
    try {
      new Pool({ classify: () => 'transient', endpoints: [{ name: 'a', conn: 1, rateLimit: rateLimit as never }] });
    } catch (e) {
      caught = e;
    }
    expect(isPoolError(caught) && caught.code).toBe('INVALID_OPTIONS');
    expect((caught as Error).message).toContain(field);
  });

  test('resolved defaults', () => {
    expect(resolveAdaptive('x', { max: 50 }, undefined)).toEqual({ min: 0.5, max: 50, decrease: 0.8, windowMs: 1000, holdMs: 5000, maxHoldMs: 15_000, doublingMs: 8000 });
    expect(resolveAdaptive('x', undefined, 5)).toBeUndefined();
  });
});

describe('the simulator (bench/sim/adaptive.mjs), one run', () => {
  test('10/s that halves and comes back: the adaptive limit uses >= 90 % of each phase after 30 s with <= 2 % 429s; fixed limits do not both', async () => {
    const runs = await runAdaptive({ Pool, FakeClock, rate: 10, seed: 1, phaseMs: 90_000, only: ['fixed at the higher rate', 'adaptive, max = plan rate'] });
    const fixed = runs.find((r) => r.contender === 'fixed at the higher rate')!;
    const adaptive = runs.find((r) => r.contender === 'adaptive, max = plan rate')!;
    console.log(`adaptive: ${JSON.stringify(adaptive.phases)}, 429 ${adaptive.limitedPct} %; fixed: ${JSON.stringify(fixed.phases)}, 429 ${fixed.limitedPct} %`);
    for (const p of adaptive.phases) expect(p.utilisationAfter30s).toBeGreaterThanOrEqual(0.9);
    expect(adaptive.limitedPct).toBeLessThanOrEqual(2);
    expect(adaptive.adapted).toBeGreaterThan(0);
    // The fixed limit at the plan rate loses most of the halved phase to 429 cooldowns.
    expect(fixed.phases[1]!.utilisationAfter30s).toBeLessThan(0.9);
    expect(fixed.limitedPct).toBeGreaterThan(adaptive.limitedPct);
  }, 60_000);

  test('2/s (1/s in the middle), the hardest case with max at the plan rate: still >= 90 %, <= 2 % 429s, 90 % within 30 s of each change', async () => {
    const [run] = await runAdaptive({ Pool, FakeClock, rate: 2, seed: 1, phaseMs: 90_000, only: ['adaptive, max = plan rate'] });
    for (const p of run!.phases) {
      expect(p.utilisationAfter30s).toBeGreaterThanOrEqual(0.9);
      expect(p.reach90Ms).not.toBeNull();
      expect(p.reach90Ms!).toBeLessThanOrEqual(30_000);
    }
    expect(run!.limitedPct).toBeLessThanOrEqual(2);
  }, 60_000);
});
