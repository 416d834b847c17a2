/**
 * Issue 15, mutation rerun: what a successful attempt records (src/call/outcome.ts
 * `recordSuccess`): the slow-call feed of the breaker, the latency feed, the metrics and
 * events, and the parked calls a closing breaker wakes. Through the public API.
 */
import { describe, expect, test } from 'vitest';
import { isPoolError } from '../../src/index.js';
import { fail, harness, ok, start } from '../support.js';

const OPENED = 'endpoint_pool_breaker_opened_total';
const DURATION = 'endpoint_pool_attempt_duration_ms';

describe('slow-call feed', () => {
  test('a success exactly at slowCallMs is not slow; one millisecond more counts as a breaker failure', async () => {
    const h = harness(['a'], { breaker: { threshold: 3, slowCallMs: 500 }, maxAttempts: 1 });
    h.eps.a!.then(ok('x', 501));
    const slow = start(h.pool.execute(h.op));
    await h.clock.advance(501);
    await slow.promise;
    expect(slow.value).toBe('x');
    expect(h.pool.stats()[0]!.consecutiveFailures).toBe(1);
    h.eps.a!.then(ok('y', 500));
    const edge = start(h.pool.execute(h.op));
    await h.clock.advance(500);
    await edge.promise;
    expect(edge.value).toBe('y');
    // Not slow: a success, which resets the streak.
    expect(h.pool.stats()[0]!.consecutiveFailures).toBe(0);
    expect(h.metrics.observations(DURATION, { endpoint: 'a' })).toEqual([501, 500]);
  });

  test('slow successes open the breaker: breaker-opened with its cooldown, the metric, never breaker-closed', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 2, slowCallMs: 100, cooldownMs: 5000 }, maxAttempts: 1, strategy: 'ordered' });
    for (let i = 0; i < 2; i++) {
      h.eps.a!.then(ok('slow', 300));
      const c = start(h.pool.execute(h.op));
      await h.clock.advance(300);
      await c.promise;
      expect(c.value).toBe('slow');
    }
    expect(h.pool.stats()[0]!.breaker.state).toBe('open');
    expect(h.metrics.counter(OPENED, { endpoint: 'a' })).toBe(1);
    expect(h.trace((e) => e.type.startsWith('breaker'))).toEqual(['breaker-opened:a']);
    expect(h.events.find((e) => e.type === 'breaker-opened')).toMatchObject({ cooldownMs: 5000 });
    // The attempt-success of the slow call still comes, after the breaker event.
    expect(h.trace((e) => e.type === 'breaker-opened' || e.type === 'attempt-success').slice(-2)).toEqual(['breaker-opened:a', 'attempt-success:a']);
  });

  test('a slow probe success still closes the breaker (a probe is never held against the endpoint)', async () => {
    const h = harness(['a'], { breaker: { threshold: 1, slowCallMs: 100, cooldownMs: 1000 }, maxAttempts: 1 });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    expect(h.pool.stats()[0]!.breaker.state).toBe('open');
    await h.clock.advance(1000);
    h.eps.a!.then(ok('probe', 400));
    const probe = start(h.pool.execute(h.op));
    await h.clock.advance(400);
    await probe.promise;
    expect(probe.value).toBe('probe');
    expect(h.pool.stats()[0]!.breaker.state).toBe('closed');
    expect(h.trace((e) => e.type.startsWith('breaker'))).toEqual(['breaker-opened:a', 'breaker-closed:a']);
    expect(h.metrics.counter(OPENED, { endpoint: 'a' })).toBe(1);
  });

  test('ordinary successes emit no breaker event and count no opening', async () => {
    const h = harness(['a'], { breaker: { threshold: 1, slowCallMs: 100 } });
    for (let i = 0; i < 3; i++) expect(await h.pool.execute(h.op)).toBe('a');
    expect(h.trace((e) => e.type.startsWith('breaker'))).toEqual([]);
    expect(h.metrics.counter(OPENED)).toBe(0);
    expect(h.pool.stats()[0]!.successes).toBe(3);
  });
});

describe('a closing breaker wakes parked calls', () => {
  test("breakerMode 'wait': a call parked behind the probe goes as soon as the probe succeeds", async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 1, breakerMode: 'wait', deadlineMs: 60_000 });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(1000);
    h.eps.a!.then(ok('probe', 200), ok('parked', 0));
    const probe = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    const parked = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    expect(h.eps.a!.calls).toBe(2); // the failure and the probe: the second call waits
    await h.clock.advance(180);
    await probe.promise;
    await parked.promise;
    expect(parked.value).toBe('parked');
    expect(h.eps.a!.startedAt[2]).toBe(h.eps.a!.startedAt[1]! + 200);
  });
});

/** Draws a, b, a, b, ... among two endpoints, so the power-of-two choice compares both. */
function alternating(): () => number {
  let i = 0;
  return () => (i++ % 2 === 0 ? 0 : 0.6);
}

describe('latency feed', () => {
  test("strategy 'latency': the faster endpoint (by its successes) gets the next call", async () => {
    for (const [da, db, expected] of [
      [300, 100, 'b'],
      [100, 300, 'a'],
    ] as const) {
      const h = harness(['a', 'b'], { strategy: 'latency', random: alternating() });
      h.eps.a!.then(ok('a', da));
      h.eps.b!.then(ok('b', db));
      const first = start(h.pool.execute(h.op, { pin: 'a' }));
      const second = start(h.pool.execute(h.op, { pin: 'b' }));
      await h.clock.advance(300);
      await Promise.all([first.promise, second.promise]);
      expect(await h.pool.execute(h.op)).toBe(expected);
    }
  });

  test("strategy 'latency': a failure weighs at least the failure penalty, a success only its duration", async () => {
    const h = harness(['a', 'b'], { strategy: 'latency', random: alternating(), latency: { failurePenaltyMs: 5000 }, maxAttempts: 1 });
    // a: a success in 1000 ms; b: a failure in 10 ms, which counts as 5000 ms.
    h.eps.a!.then(ok('a', 1000));
    h.eps.b!.then(fail('transient', 10));
    const first = start(h.pool.execute(h.op, { pin: 'a' }));
    const second = start(h.pool.execute(h.op, { pin: 'b' }));
    await h.clock.advance(1000);
    await Promise.all([first.promise, second.promise]);
    expect(isPoolError(second.error)).toBe(true);
    expect(await h.pool.execute(h.op)).toBe('a');
  });
});

describe("the smoothed success time of a rate-limited endpoint (admission's reserve)", () => {
  /** The wait to the next turn, read from a call that cannot wait at all. */
  async function etaMs(h: ReturnType<typeof harness>): Promise<number> {
    const e = await h.pool.execute(h.op, { deadlineMs: 1 }).then(
      () => undefined,
      (err: unknown) => err,
    );
    const m = /next turn in (\d+) ms/.exec(String((e as Error).message));
    expect(m).not.toBeNull();
    return Number(m![1]);
  }

  /** A call whose deadline leaves `slackMs` beyond the next turn: admitted (true) or failed at once (false). */
  async function admitted(h: ReturnType<typeof harness>, deadlineMs: number): Promise<boolean> {
    const c = start(h.pool.execute(h.op, { deadlineMs }));
    await h.clock.advance(0);
    return !c.settled;
  }

  async function serve(h: ReturnType<typeof harness>, ...durations: number[]): Promise<void> {
    for (const d of durations) {
      h.eps.k!.then(ok('k', d));
      const c = start(h.pool.execute(h.op));
      // Step to the moment it succeeds, so the next call comes right after it.
      for (let i = 0; i < 5000 && !c.settled; i++) await h.clock.advance(1);
      expect(c.value).toBe('k');
    }
  }

  for (const quiet of [false, true]) {
    test(`the first success is taken as is: a queued call needs twice it before its deadline${quiet ? ' (no metrics, no listener)' : ''}`, async () => {
      const h = harness([{ name: 'k', rateLimit: { perSecond: 1, mode: 'paced' } }], quiet ? ({ metrics: undefined, onEvent: undefined } as object) : {});
      h.eps.k!.then(ok('k', 200));
      const first = start(h.pool.execute(h.op));
      await h.clock.advance(200);
      await first.promise;
      const eta = await etaMs(h);
      expect(eta).toBeGreaterThan(0);
      expect(await admitted(h, eta + 399)).toBe(false);
      expect(await admitted(h, eta + 400)).toBe(true);
    });
  }

  test('later successes weigh 1/8: 200 then 600 ms is 250 ms', async () => {
    const h = harness([{ name: 'k', rateLimit: { perSecond: 1, mode: 'paced' } }]);
    await serve(h, 200, 600);
    const eta = await etaMs(h);
    expect(await admitted(h, eta + 499)).toBe(false);
    expect(await admitted(h, eta + 500)).toBe(true);
  });
});
