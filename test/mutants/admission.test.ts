/**
 * Twenty-seventh session, first mutation run of `src/call/admission.ts`: the store's
 * failures and odd answers as a call meets them (bench/notes/mutation-s27.md). Fake clock,
 * public API only.
 */
import { describe, expect, test } from 'vitest';
import type { LimiterStore, PoolEvent } from '../../src/index.js';
import { harness, start } from '../support.js';

const limited = (name: string) => ({ name, rateLimit: { perSecond: 100 } });
const degraded = (events: PoolEvent[]) => events.filter((e): e is Extract<PoolEvent, { type: 'store-degraded' }> => e.type === 'store-degraded');

describe('a store that fails', () => {
  test.each([
    ['throws synchronously', () => { throw new Error('store down'); }],
    ['rejects', () => Promise.reject(new Error('store down'))],
  ])('one that %s: degraded at once, and the call goes ahead on the endpoint it asked about', async (_, acquire) => {
    const store: LimiterStore = { acquire: acquire as LimiterStore['acquire'] };
    const h = harness([limited('a'), limited('b')], { sharedQuota: { store, timeoutMs: 1_000 } });
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.a!.startedAt).toEqual([t0]);
    expect(h.eps.b!.calls).toBe(0);
    const d = degraded(h.events);
    expect(d).toHaveLength(1);
    expect((d[0]!.error as Error).message).toBe('store down');
  });

  test('one that does not answer in time: degraded with an ATTEMPT_TIMEOUT error saying so, and the call goes ahead on the endpoint it asked about', async () => {
    const store: LimiterStore = { acquire: () => new Promise<number>(() => undefined) };
    const h = harness([limited('a'), limited('b')], { sharedQuota: { store, timeoutMs: 30 } });
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(30);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.b!.calls).toBe(0);
    const d = degraded(h.events);
    expect(d).toHaveLength(1);
    expect(d[0]!.error).toMatchObject({ code: 'ATTEMPT_TIMEOUT', message: 'the shared limiter store did not answer in time' });
  });

  test('a failure that comes after the call stopped waiting (aborted) starts nothing', async () => {
    let rejectIt: (e: Error) => void = () => undefined;
    const store: LimiterStore = { acquire: () => new Promise<number>((_, reject) => (rejectIt = reject)) };
    const h = harness([limited('a')], { sharedQuota: { store, timeoutMs: 1_000 } });
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(10);
    ac.abort();
    await call.promise;
    expect((call.error as { code: string }).code).toBe('ABORTED');
    rejectIt(new Error('store down'));
    await h.clock.advance(10);
    expect(h.eps.a!.calls).toBe(0);
    expect(degraded(h.events)).toHaveLength(0);
  });
});

describe('what the store answers', () => {
  test.each([
    ['a string', '500'],
    ['null', null],
    ['NaN', Number.NaN],
    ['a negative wait', -500],
    ['zero', 0],
  ])('%s is no wait: the call is admitted and nothing cools down', async (_, answer) => {
    const store: LimiterStore = { acquire: () => Promise.resolve(answer as number) };
    const h = harness([limited('a'), limited('b')], { sharedQuota: { store, timeoutMs: 1_000 } });
    for (let i = 0; i < 3; i++) {
      const call = start(h.pool.execute(h.op, { pin: 'a' }));
      await h.clock.advance(0);
      expect(call.settled).toBe(true);
      expect(call.value).toBe('a');
    }
    expect(h.eps.a!.calls).toBe(3);
    expect(degraded(h.events)).toHaveLength(0);
  });
});
