/**
 * Issue 15, mutation rerun of the call loop (src/call/call.ts): the shared-store admission
 * wait, what ends it, and what a late answer may no longer do. Fake clock, public API only.
 */
import { describe, expect, test } from 'vitest';
import type { LimiterStore, SharedLimit } from '../../src/index.js';
import { fail, harness, ok, start } from '../support.js';

/** A store whose answers the test gives by hand, in the order asked. */
function manualStore() {
  const asked: { key: string; answer: (waitMs: number) => void; fail: (e: Error) => void }[] = [];
  const store: LimiterStore = {
    acquire(limit: SharedLimit) {
      return new Promise<number>((resolve, reject) => asked.push({ key: limit.key, answer: resolve, fail: reject }));
    },
  };
  return { store, asked };
}

const limited = (name: string) => ({ name, rateLimit: { perSecond: 100 } });
const code = (e: unknown) => (e as { code?: string } | undefined)?.code;

describe('the admission wait', () => {
  test('bounded by the deadline when that comes first: DEADLINE_EXCEEDED, the store is not marked degraded', async () => {
    for (const deadlineMs of [20, 30]) {
      const { store } = manualStore();
      const h = harness([limited('a')], { sharedQuota: { store, timeoutMs: 30 }, deadlineMs });
      const call = start(h.pool.execute(h.op));
      await h.clock.advance(deadlineMs - 1);
      expect(call.settled).toBe(false);
      await h.clock.advance(1);
      await call.promise;
      expect(code(call.error)).toBe('DEADLINE_EXCEEDED');
      expect(h.events.some((e) => e.type === 'store-degraded')).toBe(false);
      expect(h.eps.a!.calls).toBe(0);
    }
  });

  test('the store’s time-out before the deadline: degraded, and the call goes ahead at once', async () => {
    const { store } = manualStore();
    const h = harness([limited('a')], { sharedQuota: { store, timeoutMs: 30 }, deadlineMs: 1000 });
    const t0 = h.clock.now();
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(30);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.a!.startedAt).toEqual([t0 + 30]);
    expect(h.events.some((e) => e.type === 'store-degraded')).toBe(true);
  });

  test('an answer that comes after the call was aborted starts nothing', async () => {
    const { store, asked } = manualStore();
    const h = harness([limited('a')], { sharedQuota: { store, timeoutMs: 1000 } });
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(10);
    ac.abort();
    await call.promise;
    asked[0]!.answer(0);
    await h.clock.advance(10);
    expect(code(call.error)).toBe('ABORTED');
    expect(h.eps.a!.calls).toBe(0);
    expect(h.events.some((e) => e.type === 'store-recovered' || e.type === 'store-degraded')).toBe(false);
  });

  test('an answer that comes after the store timed out (the call went ahead) starts no second attempt', async () => {
    const { store, asked } = manualStore();
    const h = harness([limited('a')], { sharedQuota: { store, timeoutMs: 30 } });
    h.eps.a!.then(ok('a', 100));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(40);
    expect(h.eps.a!.calls).toBe(1);
    asked[0]!.answer(0);
    await h.clock.advance(100);
    await call.promise;
    expect(call.value).toBe('a');
    expect(h.eps.a!.calls).toBe(1);
  });

  test('a late answer about an endpoint the call no longer waits for is ignored', async () => {
    const { store, asked } = manualStore();
    const h = harness([limited('a'), limited('b')], { sharedQuota: { store, timeoutMs: 30, retryAfterMs: 1 } });
    h.eps.a!.then(fail('transient', 10));
    const call = start(h.pool.execute(h.op));
    // a: no answer in 30 ms, the call goes ahead on local limits; a fails at 40.
    await h.clock.advance(40);
    expect(asked.map((q) => q.key)).toEqual(['endpoint:a', 'endpoint:b']);
    // The call now waits for the store about b; the answer about a comes in.
    asked[0]!.answer(0);
    await h.clock.advance(5);
    expect(h.eps.a!.calls).toBe(1);
    expect(call.settled).toBe(false);
    asked[1]!.answer(0);
    await h.clock.advance(0);
    await call.promise;
    expect(call.value).toBe('b');
    expect(h.eps.a!.calls).toBe(1);
  });

  test('an acceptance at the deadline’s last moment starts no attempt', async () => {
    const { store, asked } = manualStore();
    const h = harness([limited('a')], { sharedQuota: { store, timeoutMs: 1000 }, deadlineMs: 50 });
    // The answer is given by a timer armed before the call's own deadline timer.
    h.clock.setTimeout(() => asked[0]!.answer(0), 50);
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(50);
    await call.promise;
    expect(code(call.error)).toBe('DEADLINE_EXCEEDED');
    expect(h.eps.a!.calls).toBe(0);
  });

  test('an acceptance for an endpoint whose breaker opened meanwhile: the call selects again', async () => {
    const { store, asked } = manualStore();
    const h = harness([limited('a'), limited('b')], { sharedQuota: { store, timeoutMs: 1000 }, breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.a!.then(fail('transient', 5));
    const first = start(h.pool.execute(h.op, { pin: 'a', retry: 'none' }));
    await h.clock.advance(0);
    asked[0]!.answer(0);
    await h.clock.advance(0);
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(asked.map((q) => q.key)).toEqual(['endpoint:a', 'endpoint:a']);
    await h.clock.advance(5);
    await first.promise;
    expect(h.pool.breakerState('a')).toMatchObject({ state: 'open' });
    asked[1]!.answer(0);
    await h.clock.advance(0);
    expect(asked.map((q) => q.key)).toEqual(['endpoint:a', 'endpoint:a', 'endpoint:b']);
    asked[2]!.answer(0);
    await h.clock.advance(0);
    await call.promise;
    expect(call.value).toBe('b');
    expect(h.eps.a!.calls).toBe(1);
  });

  test('a refusal: the call selects again and the refused endpoint cools down', async () => {
    const { store, asked } = manualStore();
    const h = harness([limited('a'), limited('b')], { sharedQuota: { store, timeoutMs: 1000 } });
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    asked[0]!.answer(300);
    await h.clock.advance(0);
    asked[1]!.answer(0);
    await h.clock.advance(0);
    await call.promise;
    expect(call.value).toBe('b');
    expect(h.eps.a!.calls).toBe(0);
    expect(h.pool.stats()[0]!.cooldownRemainingMs).toBe(300);
  });

  test('in panic, an admitted endpoint with an open breaker still takes the attempt (one question to the store)', async () => {
    const { store, asked } = manualStore();
    const h = harness([limited('a'), limited('b')], { sharedQuota: { store, timeoutMs: 1000, retryAfterMs: 1 }, breaker: { threshold: 1, cooldownMs: 60_000 }, maxEjectedPercent: 50 });
    h.eps.a!.then(fail('transient'));
    h.eps.b!.then(fail('transient'));
    for (const pin of ['a', 'b']) {
      const c = start(h.pool.execute(h.op, { pin, retry: 'none' }));
      await h.clock.advance(0);
      asked.at(-1)!.answer(0);
      await h.clock.advance(0);
      await c.promise;
    }
    expect([h.pool.breakerState('a'), h.pool.breakerState('b')]).toMatchObject([{ state: 'open' }, { state: 'open' }]);
    const before = asked.length;
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(asked.length).toBe(before + 1);
    asked.at(-1)!.answer(0);
    await h.clock.advance(0);
    await call.promise;
    expect(call.value).toBe(asked.at(-1)!.key.slice('endpoint:'.length));
    expect(asked.length).toBe(before + 1);
  });

  test('a rate-limit turn in panic goes to the endpoint whose breaker is open', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 10, burst: 1 } }, { name: 'b', rateLimit: { perSecond: 10, burst: 1 } }], { breaker: { threshold: 1, cooldownMs: 60_000 }, maxEjectedPercent: 50 });
    h.eps.a!.then(fail('transient'));
    h.eps.b!.then(fail('transient'));
    await h.pool.execute(h.op, { pin: 'a', retry: 'none' }).catch(() => undefined);
    await h.pool.execute(h.op, { pin: 'b', retry: 'none' }).catch(() => undefined);
    expect([h.pool.breakerState('a'), h.pool.breakerState('b')]).toMatchObject([{ state: 'open' }, { state: 'open' }]);
    // Both buckets are empty: the call queues for a token and takes its turn in panic.
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(200);
    await call.promise;
    expect(['a', 'b']).toContain(call.value);
    expect(h.eps.a!.calls + h.eps.b!.calls).toBe(3);
  });
});
