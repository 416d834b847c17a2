import { describe, expect, test } from 'vitest';
import { isPoolError, type ClassifyResult, type PoolError } from '../src/index.js';
import { UNSENT } from '../src/base/classify.js';
import { FakeEndpoint, fail, harness, hang, ok, start } from './support.js';

const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);

describe('breaker in the pool', () => {
  test('opens after threshold consecutive transient failures; the metric counts transitions, not failures', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 3, cooldownMs: 1000 }, maxAttempts: 1 });
    h.eps.a!.fallback = fail('transient');
    for (let i = 0; i < 3; i++) await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.breakerState('a')).toEqual({ state: 'open', untilMs: 1_001_000 });
    expect(h.metrics.counter('endpoint_pool_breaker_opened_total', { endpoint: 'a' })).toBe(1);
    expect(h.metrics.counter('endpoint_pool_failures_total', { endpoint: 'a', class: 'transient' })).toBe(3);
    expect(h.trace((e) => e.type === 'breaker-opened')).toEqual(['breaker-opened:a']);
  });

  for (const [label, verdict, after] of [
    ['an unsupported answer reached the node: the half-open breaker closes', 'unsupported', 'closed'],
    ['an attempt refused before sending (UNSENT, as the RPC adapters mark a quorum collision or a node head routing now leaves out): the breaker stays half-open, its probe still to be made', { class: 'unsupported', [UNSENT]: true } as ClassifyResult, 'half-open'],
  ] as const) {
    test(label, async () => {
      const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 1000 }, strategy: 'ordered' });
      h.eps.a!.then(fail('transient'), fail(verdict));
      expect(await h.pool.execute(h.op)).toBe('b');
      await h.clock.advance(1000);
      expect(h.pool.breakerState('a')).toBe('half-open');
      // The probe goes to a, is classified as given, and the call moves on to b.
      expect(await h.pool.execute(h.op)).toBe('b');
      expect(h.events.some((e) => e.type === 'attempt-start' && e.endpoint === 'a' && e.probe)).toBe(true);
      expect(h.pool.breakerState('a')).toBe(after);
    });
  }

  test('a late failure of an endpoint replaced by setEndpoints opens no breaker under the live name (no event, no metric: a fleet health mark would exclude the new key)', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 1, strategy: 'ordered' });
    h.eps.a!.then(fail('transient', 100));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    const seen = h.events.length;
    h.pool.setEndpoints([{ name: 'a', conn: new FakeEndpoint('a') }, { name: 'b', conn: h.eps.b! }]);
    await h.clock.advance(90);
    expect(call.settled).toBe(true);
    expect(h.events.slice(seen).filter((e) => e.type === 'breaker-opened' || e.type === 'breaker-closed')).toEqual([]);
    expect(h.metrics.counter('endpoint_pool_breaker_opened_total', { endpoint: 'a' })).toBe(0);
    expect(h.pool.breakerState('a')).toBe('closed');
  });

  test('a late success of an endpoint replaced by setEndpoints closes no breaker under the live name', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 10_000 }, maxAttempts: 1, strategy: 'ordered' });
    // The old a: one call that answers late, after its breaker opened on another call's failure.
    h.eps.a!.then(ok('late', 500), fail('transient'));
    const late = start(h.pool.execute(h.op, { pin: 'a' }));
    await h.pool.execute(h.op, { pin: 'a' }).catch(() => undefined);
    expect(h.pool.breakerState('a')).toMatchObject({ state: 'open' });
    // The new a fails at once and opens its own breaker.
    const fresh = new FakeEndpoint('a', { fail: 'transient' });
    h.pool.setEndpoints([{ name: 'a', conn: fresh }, { name: 'b', conn: h.eps.b! }]);
    await h.pool.execute(h.op, { pin: 'a' }).catch(() => undefined);
    expect(h.pool.breakerState('a')).toMatchObject({ state: 'open' });
    const seen = h.events.length;
    await h.clock.advance(500);
    expect(late.value).toBe('late');
    expect(h.events.slice(seen).filter((e) => e.type === 'breaker-closed')).toEqual([]);
    expect(h.pool.breakerState('a')).toMatchObject({ state: 'open' });
  });

  test('transient, permanent, transient, permanent, transient opens at threshold 3 on the third transient', async () => {
    const h = harness(['a'], { breaker: { threshold: 3 }, maxAttempts: 1 });
    h.eps.a!.then(fail('transient'), fail('permanent'), fail('transient'), fail('permanent'), fail('transient'));
    const states: string[] = [];
    for (let i = 0; i < 5; i++) {
      await h.pool.execute(h.op).catch(() => undefined);
      const s = h.pool.breakerState('a');
      states.push(typeof s === 'string' ? s : s.state);
    }
    expect(states).toEqual(['closed', 'closed', 'closed', 'closed', 'open']);
  });

  test('rate-limited answers touch nothing', async () => {
    const h = harness(['a'], { breaker: { threshold: 2 }, maxAttempts: 1 });
    h.eps.a!.then(fail('transient'), fail('rate-limited'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.stats()[0]!.consecutiveFailures).toBe(1);
  });

  test('two callers race for the half-open probe: exactly one is granted, the other is turned away', async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 1 });
    h.eps.a!.then(fail('transient'), ok('probe', 50));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(1000);
    expect(h.pool.breakerState('a')).toBe('half-open');
    const first = start(h.pool.execute(h.op));
    const second = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    expect(code(second.error)).toBe('NO_ENDPOINT');
    expect(h.eps.a!.calls).toBe(2);
    await h.clock.advance(50);
    await first.promise;
    expect(first.value).toBe('probe');
    expect(h.pool.breakerState('a')).toBe('closed');
    expect(h.events.filter((e) => e.type === 'attempt-start' && e.probe).length).toBe(1);
    expect(h.trace((e) => e.type.startsWith('breaker'))).toEqual(['breaker-opened:a', 'breaker-closed:a']);
  });

  test("in 'wait' mode the turned-away caller waits for the probe's verdict, then goes", async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 1, breakerMode: 'wait' });
    h.eps.a!.then(fail('transient'), ok('probe', 50), ok('after', 0));
    await h.pool.execute(h.op).catch(() => undefined);
    const waiting = start(h.pool.execute(h.op, { deadlineMs: 5000 }));
    await h.clock.advance(999);
    expect(h.eps.a!.calls).toBe(1);
    await h.clock.advance(1);
    const second = start(h.pool.execute(h.op));
    await h.clock.advance(50);
    await waiting.promise;
    await second.promise;
    expect([waiting.value, second.value].sort()).toEqual(['after', 'probe']);
  });

  test("'wait' mode is bounded by the deadline", async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 10_000 }, maxAttempts: 1 });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    const call = start(h.pool.execute(h.op, { breakerMode: 'wait', deadlineMs: 2000 }));
    await h.clock.advance(2000);
    await call.promise;
    expect(code(call.error)).toBe('DEADLINE_EXCEEDED');
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test('a failed probe re-opens with a doubled cooldown, up to maxCooldownMs; breaker-opened fires each time', async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000, maxCooldownMs: 3000 }, maxAttempts: 1 });
    h.eps.a!.fallback = fail('transient');
    await h.pool.execute(h.op).catch(() => undefined);
    for (const wait of [1000, 2000, 3000, 3000]) {
      await h.clock.advance(wait);
      await h.pool.execute(h.op).catch(() => undefined);
    }
    const cooldowns = h.events.flatMap((e) => (e.type === 'breaker-opened' ? [e.cooldownMs] : []));
    expect(cooldowns).toEqual([1000, 2000, 3000, 3000, 3000]);
    expect(h.metrics.counter('endpoint_pool_breaker_opened_total')).toBe(5);
    h.eps.a!.fallback = ok('back');
    await h.clock.advance(3000);
    await h.pool.execute(h.op);
    h.eps.a!.fallback = fail('transient');
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.breakerState('a')).toEqual({ state: 'open', untilMs: h.clock.now() + 1000 });
  });

  test('a prober aborted mid-probe releases the slot: the breaker is not wedged', async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 1 });
    h.eps.a!.then(fail('transient'), hang(), ok('recovered'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(1000);
    const ac = new AbortController();
    const prober = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(10);
    ac.abort();
    await prober.promise;
    expect(code(prober.error)).toBe('ABORTED');
    expect(h.pool.breakerState('a')).toBe('half-open');
    expect(await h.pool.execute(h.op)).toBe('recovered');
    expect(h.pool.breakerState('a')).toBe('closed');
  });

  test('a stale failure after the breaker re-opened is not mistaken for a failed probe', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 2, cooldownMs: 1000 }, maxAttempts: 1 });
    // A slow attempt starts while the breaker is closed...
    h.eps.a!.then(fail('transient', 5000), fail('transient'), fail('transient'), ok('probe', 4500));
    const slow = start(h.pool.execute(h.op));
    await h.clock.advance(0);
    // ...two quick failures open it...
    await h.pool.execute(h.op).catch(() => undefined);
    await h.pool.execute(h.op, { pin: 'a' }).catch(() => undefined);
    expect(h.pool.breakerState('a')).toMatchObject({ state: 'open' });
    await h.clock.advance(1000);
    // ...a probe goes out, and the slow attempt's failure lands during it.
    const probe = start(h.pool.execute(h.op, { pin: 'a' }));
    await h.clock.advance(4000);
    await slow.promise;
    expect(h.trace((e) => e.type === 'breaker-opened')).toEqual(['breaker-opened:a']);
    expect(h.pool.breakerState('a')).toBe('half-open');
    await h.clock.advance(500);
    await probe.promise;
    // The probe's success closed it; the stale failure neither re-opened nor doubled anything.
    expect(probe.value).toBe('probe');
    expect(h.pool.breakerState('a')).toBe('closed');
  });

  test('NO_ENDPOINT carries retryAfterMs until the earliest breaker admits again', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 3 });
    h.eps.a!.then(fail('transient'));
    h.eps.b!.then(fail('transient'));
    const first = await h.pool.execute(h.op).catch((e: unknown) => e);
    expect(code(first)).toBe('NO_ENDPOINT');
    expect((first as PoolError).retryAfterMs).toBe(1000);
    expect((first as PoolError).attempts).toBe(2);
    await h.clock.advance(400);
    const second = await h.pool.execute(h.op).catch((e: unknown) => e);
    expect((second as PoolError).retryAfterMs).toBe(600);
    expect((second as PoolError).attempts).toBe(0);
  });

  test('breakerState reports closed, open with untilMs, and half-open', async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 700 }, maxAttempts: 1 });
    expect(h.pool.breakerState('a')).toBe('closed');
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.breakerState('a')).toEqual({ state: 'open', untilMs: 1_000_700 });
    await h.clock.advance(700);
    expect(h.pool.breakerState('a')).toBe('half-open');
    expect(() => h.pool.breakerState('zzz')).toThrow(/name: expected the name of an endpoint/);
  });
});

describe('a half-open probe that never settles (forty-first session)', () => {
  test("a call with no bound of its own as the probe: once it has been out for the open period and the pool's attempt bound, the next call probes (it used to turn every call away for good)", async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 1, attemptTimeoutMs: 3000 });
    h.eps.a!.then(fail('transient'), hang(false));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(1000);
    // The probe: a call that lifts every bound, whose operation never settles.
    const stuck = start(h.pool.execute(h.op, { attemptTimeoutMs: Infinity, deadlineMs: Infinity }));
    await h.clock.advance(10);
    expect(h.pool.breakerState('a')).toBe('half-open');
    // The message says why: not "open" (its cooldown is over) but a probe still out.
    await expect(h.pool.execute(h.op)).rejects.toMatchObject({ code: 'NO_ENDPOINT', message: 'no endpoint admits calls: "a" breaker half-open (probe out)' });
    await expect(h.pool.execute(h.op, { pin: 'a' })).rejects.toMatchObject({ message: expect.stringContaining('its breaker is half-open, its probe still out') });
    await h.clock.advance(2980); // 2,990 ms out: within the pool's 3,000 ms bound, still the probe
    await expect(h.pool.execute(h.op)).rejects.toMatchObject({ code: 'NO_ENDPOINT' });
    await h.clock.advance(10);
    expect(await h.pool.execute(h.op)).toBe('a');
    expect(h.pool.breakerState('a')).toBe('closed');
    expect(stuck.settled).toBe(false);
  });

  test('a pool with no bound at all: the open period alone', async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 1, attemptTimeoutMs: Infinity, deadlineMs: Infinity });
    h.eps.a!.then(fail('transient'), hang(false));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(1000);
    start(h.pool.execute(h.op));
    await h.clock.advance(999);
    await expect(h.pool.execute(h.op)).rejects.toMatchObject({ code: 'NO_ENDPOINT' });
    await h.clock.advance(1);
    expect(await h.pool.execute(h.op)).toBe('a');
  });
});

describe('slow calls', () => {
  test('a success slower than slowCallMs answers the caller but counts as a breaker failure', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 2, slowCallMs: 500 }, maxAttempts: 1 });
    h.eps.a!.then(ok('slow1', 600), ok('slow2', 600));
    for (const expected of ['slow1', 'slow2']) {
      const call = start(h.pool.execute(h.op));
      await h.clock.advance(600);
      await call.promise;
      expect(call.value).toBe(expected);
    }
    expect(h.pool.breakerState('a')).toMatchObject({ state: 'open' });
    expect(await h.pool.execute(h.op)).toBe('b');
  });

  test('failure-rate breaker in the pool', async () => {
    const h = harness(['a', 'b'], { breaker: { mode: 'failure-rate', failureRate: 0.5, minThroughput: 4, windowMs: 10_000 }, maxAttempts: 1 });
    h.eps.a!.then(ok(), fail('transient'), ok(), fail('transient'));
    for (let i = 0; i < 4; i++) await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.breakerState('a')).toMatchObject({ state: 'open' });
  });
});

describe('stats().breaker is one shape for every state (issue 17)', () => {
  test('closed, open with untilMs, half-open: always { state }', async () => {
    const h = harness(['a'], { maxAttempts: 1, breaker: { threshold: 1, cooldownMs: 100 } });
    expect(h.pool.stats()[0]!.breaker).toEqual({ state: 'closed' });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    const now = h.clock.now();
    expect(h.pool.stats()[0]!.breaker).toEqual({ state: 'open', untilMs: now + 100 });
    expect(h.pool.breakerState('a')).toEqual({ state: 'open', untilMs: now + 100 });
    await h.clock.advance(100);
    expect(h.pool.stats()[0]!.breaker).toEqual({ state: 'half-open' });
    expect(h.pool.breakerState('a')).toBe('half-open');
    expect(h.pool.stats().map((s) => s.breaker.state)).toEqual(['half-open']);
  });
});
