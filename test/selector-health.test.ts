import { describe, expect, test } from 'vitest';
import { EndpointState } from '../src/selection/endpoint.js';
import { Quota } from '../src/limits/quota.js';
import { selectHealthiest } from '../src/selection/health.js';
import { resolveBreaker } from '../src/health/breaker.js';
import { fail, harness } from './support.js';

const BREAKER = resolveBreaker({});

function ep(name: string, failures: number, usage: number, perSecond?: number): EndpointState<string> {
  const e = new EndpointState(name, name, 'high', 1, Number.POSITIVE_INFINITY, BREAKER, new Quota(perSecond === undefined ? undefined : { perSecond, burst: 1, mode: 'bucket', marginMs: 25, perDay: undefined, dailyStopFraction: 0.95 }, 0, 0));
  for (let i = 0; i < failures; i++) e.recentFailures.add(0);
  for (let i = 0; i < usage; i++) e.usage.add(0);
  return e;
}

const opts = { windowMs: 300_000, longWindowMs: 900_000, maxWaitForHealthyMs: 1500 };

describe('selectHealthiest (pure)', () => {
  test.each<[string, [number, number][], string]>([
    ['fewest failures wins', [[3, 0], [1, 50], [2, 0]], 'e1'],
    ['then the least used', [[0, 9], [0, 4], [0, 7]], 'e1'],
    ['then config order', [[0, 4], [0, 4], [0, 4]], 'e0'],
    ['a failing endpoint is overflow, not a peer', [[5, 0], [0, 100]], 'e1'],
  ])('%s', (_, specs, expected) => {
    const ring = specs.map(([f, u], i) => ep(`e${i}`, f, u));
    const sel = selectHealthiest({ tiers: [ring, []], now: 1000, tried: undefined, excluded: undefined, ...opts });
    expect(sel.kind === 'endpoint' && sel.endpoint.name).toBe(expected);
  });

  test('waits for a healthier untried endpoint ready within the bound rather than use a worse one now', () => {
    const healthy = ep('healthy', 0, 0, 1);
    healthy.quota.take(0); // its next token is 1000 ms away
    const worse = ep('worse', 4, 0);
    const sel = selectHealthiest({ tiers: [[healthy, worse], []], now: 0, tried: undefined, excluded: undefined, ...opts });
    expect(sel).toMatchObject({ kind: 'wait', waitMs: 1000 });
    // Beyond the bound, the worse endpoint serves now.
    const late = selectHealthiest({ tiers: [[healthy, worse], []], now: 0, tried: undefined, excluded: undefined, ...opts, maxWaitForHealthyMs: 999 });
    expect(late.kind === 'endpoint' && late.endpoint.name).toBe('worse');
    // And never waits for an endpoint this call already tried.
    const tried = selectHealthiest({ tiers: [[healthy, worse], []], now: 0, tried: [healthy], excluded: undefined, ...opts });
    expect(tried.kind === 'endpoint' && tried.endpoint.name).toBe('worse');
  });

  test('untried before tried, low tier only when the high tier has nothing admissible', () => {
    const a = ep('a', 0, 0);
    const b = ep('b', 3, 0);
    const low = ep('low', 0, 0);
    const sel = selectHealthiest({ tiers: [[a, b], [low]], now: 0, tried: [a], excluded: undefined, ...opts });
    expect(sel.kind === 'endpoint' && sel.endpoint.name).toBe('b');
    const both = selectHealthiest({ tiers: [[a, b], [low]], now: 0, tried: [a, b], excluded: undefined, ...opts });
    expect(both).toMatchObject({ kind: 'endpoint', tried: true });
    const excluded = selectHealthiest({ tiers: [[a, b], [low]], now: 0, tried: undefined, excluded: [a, b], ...opts });
    expect(excluded.kind === 'endpoint' && excluded.endpoint.name).toBe('low');
  });
});

describe("strategy: 'health' in the pool", () => {
  test('traffic follows health: a key that keeps failing gets little, the healthy ones share the rest', async () => {
    const h = harness(['a', 'b', 'c'], { strategy: 'health', breaker: { threshold: 1000 } });
    h.eps.b!.fallback = fail('rate-limited');
    for (let i = 0; i < 60; i++) {
      await h.pool.execute(h.op).catch(() => undefined);
      await h.clock.advance(1000);
    }
    expect(h.eps.b!.calls).toBeLessThan(5);
    expect(Math.abs(h.eps.a!.calls - h.eps.c!.calls)).toBeLessThanOrEqual(1);
  });

  test('maxAttempts go to distinct endpoints as far as the pool allows', async () => {
    const h = harness(['a', 'b', 'c'], { strategy: 'health', maxAttempts: 3, breaker: { threshold: 1000 } });
    for (const e of Object.values(h.eps)) e.fallback = fail('transient');
    await h.pool.execute(h.op).catch(() => undefined);
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([1, 1, 1]);
  });
});
