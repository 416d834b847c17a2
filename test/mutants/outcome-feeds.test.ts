/**
 * Issue 15, mutation rerun: the feeds a success gives the limits (src/call/outcome.ts
 * `recordSuccess`): the successes an adaptive limit reads its accepted rate from, and the
 * recovery of a key's own learned ceiling in a group. Through the public API.
 */
import { describe, expect, test } from 'vitest';
import type { PoolEvent } from '../../src/index.js';
import { fail, harness, ok } from '../support.js';

describe('adaptive limits read the accepted rate from the successes', () => {
  test('served at 12/s, a bare 429 sets the rate from what was accepted, not by the blind decrease factor', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 20, mode: 'paced', adaptive: { min: 1, max: 20 } } }], { maxAttempts: 1 });
    for (let i = 0; i < 36; i++) {
      expect(await h.pool.execute(h.op)).toBe('a');
      await h.clock.advance(84);
    }
    h.eps.a!.then(fail('rate-limited'));
    await h.pool.execute(h.op).catch(() => undefined);
    const adapted = h.events.filter((e): e is Extract<PoolEvent, { type: 'endpoint-adapted' }> => e.type === 'endpoint-adapted');
    expect(adapted).toHaveLength(1);
    expect(adapted[0]).toMatchObject({ previous: 20, reason: 'decrease' });
    // With no successes read, the rate would be 20 x 0.8 = 16.
    expect(adapted[0]!.perSecond).toBeGreaterThanOrEqual(11);
    expect(adapted[0]!.perSecond).toBeLessThanOrEqual(12);
  });
});

describe("a key's own learned ceiling recovers on a success", () => {
  test('after the quiet period, the success itself applies the due step (no stats() needed)', async () => {
    const h = harness(
      [
        { name: 'k1', rateLimit: { perSecond: 6, mode: 'paced' } },
        { name: 'k2', rateLimit: { perSecond: 6, mode: 'paced' } },
      ],
      { groups: [['k1', 'k2']], maxAttempts: 1, ceilingRecovery: { quietMs: 1000, stepMs: 1000, stepFraction: 0.5 } },
    );
    h.eps.k1!.then(fail({ class: 'rate-limited', ceilingPerSecond: 2, ceilingScope: 'key' }));
    await h.pool.execute(h.op, { pin: 'k1' }).catch(() => undefined);
    expect(h.events.filter((e) => e.type === 'endpoint-recalibrated')).toMatchObject([{ endpoint: 'k1', scope: 'key', perSecond: 2, reason: 'hint' }]);
    await h.clock.advance(2500);
    h.eps.k1!.then(ok('k1'));
    expect(await h.pool.execute(h.op, { pin: 'k1' })).toBe('k1');
    const recovered = h.events.filter((e) => e.type === 'endpoint-recalibrated' && e.reason === 'recovery');
    expect(recovered).toMatchObject([{ endpoint: 'k1', scope: 'key' }]);
  });
});
