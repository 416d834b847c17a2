/**
 * Issue 15, mutation rerun: option resolution of the selection modules (health, hedge,
 * latency), each field named in its message, each default and edge pinned.
 */
import { describe, expect, test } from 'vitest';
import { message } from './support.js';
import { resolveHealth } from '../../src/selection/health.js';
import { DEFAULT_HEDGE, resolveHedge } from '../../src/selection/hedge.js';
import { resolveLatency } from '../../src/selection/latency.js';


describe('resolveHealth', () => {
  test('defaults: 5 and 15 minutes, 1.5 s', () => {
    expect(resolveHealth(undefined)).toEqual({ windowMs: 300_000, longWindowMs: 900_000, maxWaitForHealthyMs: 1_500 });
    expect(resolveHealth({ windowMs: 1, longWindowMs: 2, maxWaitForHealthyMs: 0 })).toEqual({ windowMs: 1, longWindowMs: 2, maxWaitForHealthyMs: 0 });
  });

  test.each([
    [{ windowMs: 0 }, 'health.windowMs: expected a finite number > 0, got 0'],
    [{ longWindowMs: 0 }, 'health.longWindowMs: expected a finite number > 0, got 0'],
    [{ maxWaitForHealthyMs: -1 }, 'health.maxWaitForHealthyMs: expected a finite number >= 0, got -1'],
    [{ window: 1 }, "health.window: unknown option; did you mean 'windowMs'?"],
  ])('%j', (value, expected) => {
    expect(message(() => resolveHealth(value))).toBe(expected);
  });
});

describe('resolveHedge', () => {
  test('defaults and overrides', () => {
    expect(DEFAULT_HEDGE).toEqual({ afterMs: 100, maxHedges: 1, percentile: undefined });
    expect(resolveHedge('hedge', undefined, DEFAULT_HEDGE)).toBe(DEFAULT_HEDGE);
    expect(resolveHedge('hedge', {}, DEFAULT_HEDGE)).toEqual(DEFAULT_HEDGE);
    expect(resolveHedge('hedge', { percentile: 0.9, afterMs: 0, maxHedges: 3 }, DEFAULT_HEDGE)).toEqual({ afterMs: 0, percentile: 0.9, maxHedges: 3 });
    const base = { afterMs: 50, percentile: 0.5, maxHedges: 2 };
    expect(resolveHedge('hedge', { afterMs: 7 }, base)).toEqual({ afterMs: 7, percentile: 0.5, maxHedges: 2 });
  });

  test.each([
    [{ percentile: 0 }, 'hedge.percentile: expected a finite number > 0, got 0'],
    [{ percentile: 1 }, 'hedge.percentile: expected a quantile in (0, 1), got 1'],
    [{ afterMs: -1 }, 'hedge.afterMs: expected a finite number >= 0, got -1'],
    [{ maxHedges: 0 }, 'hedge.maxHedges: expected a positive integer, got 0'],
    [{ delayMs: 1 }, "hedge.delayMs: unknown option; did you mean 'afterMs'?"],
    [{ max: 1 }, "hedge.max: unknown option; did you mean 'maxHedges'?"],
  ])('%j', (value, expected) => {
    expect(message(() => resolveHedge('hedge', value, DEFAULT_HEDGE))).toBe(expected);
  });
});

describe('resolveLatency', () => {
  test('the failure penalty defaults to the attempt timeout, else to the default timeout', () => {
    expect(resolveLatency(undefined, 2_000)).toEqual({ decayMs: 10_000, failurePenaltyMs: 2_000, coldStartMs: undefined });
    expect(resolveLatency(undefined, Number.POSITIVE_INFINITY).failurePenaltyMs).toBe(10_000);
    expect(resolveLatency(undefined, 'soon').failurePenaltyMs).toBe(10_000);
    expect(resolveLatency({ decayMs: 5, failurePenaltyMs: 0, coldStartMs: 0 }, 2_000)).toEqual({ decayMs: 5, failurePenaltyMs: 0, coldStartMs: 0 });
  });

  test.each([
    [{ decayMs: 0 }, 'latency.decayMs: expected a finite number > 0, got 0'],
    [{ failurePenaltyMs: -1 }, 'latency.failurePenaltyMs: expected a finite number >= 0, got -1'],
    [{ coldStartMs: -1 }, 'latency.coldStartMs: expected a finite number >= 0, got -1'],
  ])('%j', (value, expected) => {
    expect(message(() => resolveLatency(value, 1_000))).toBe(expected);
  });
});
