/**
 * `resolveBreaker` as `Pool` calls it, with the failureRate feature's slot: the breaker
 * tests check every option of the breaker, `failure-rate` mode's included (a pool built
 * without that feature refuses them: test/features.test.ts).
 */
import { resolveBreaker as resolveCore, type ResolvedBreaker } from '../../src/health/breaker.js';
import { ALL_FEATURES } from '../../src/features-all.js';
import type { Features } from '../../src/features.js';

/** `probeLostMs`: the pool's bound on an attempt, as the pool hands it (0: none). */
export function resolveBreaker(value: unknown, _failureRate?: unknown, probeLostMs = 0): ResolvedBreaker {
  return resolveCore(value, (ALL_FEATURES as unknown as Features).failureRate, probeLostMs);
}
