/**
 * Where timers and promises belong to the request that made them (Cloudflare Workers; see
 * src/base/request-bound.ts), a pool kept across requests must not let a call depend on a
 * timer another call armed, or go on inside another call's continuation. workerd itself runs
 * in `scripts/runtimes/workerd.mjs --adapters` (module-scope pools shared by concurrent
 * requests); here the mode is switched on by hand: what each call arms, and the properties
 * of the mixed generator and of deadlines, which must hold in this mode too.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Pool, type PoolEvent } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { isWorkerd, setRequestBound } from '../src/base/request-bound.js';
import { mixArb, simulateMix, type MixBias } from './properties/mix.js';
import { scenarioArb } from './properties/sim.js';
import { checkScenarios } from './properties/run.js';

beforeAll(() => setRequestBound(true));
afterAll(() => setRequestBound(false));

const hang = (): Promise<string> => new Promise(() => undefined);
/** Runs per mixed property (`FC_BOUND_RUNS` for more; `FC_SEED` for other scenarios). */
const RUNS = Number(process.env['FC_BOUND_RUNS'] ?? 150);

describe('request-bound timers and wake-ups', () => {
  test("is on in workerd only: its navigator's user agent is Cloudflare-Workers", () => {
    expect(isWorkerd({ userAgent: 'Cloudflare-Workers' })).toBe(true);
    // Node 21+ and Deno have a navigator of their own; browsers another user agent; Node 20 none.
    expect(isWorkerd((globalThis as { navigator?: unknown }).navigator)).toBe(false);
    expect(isWorkerd({ userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0.0.0' })).toBe(false);
    expect(isWorkerd({ userAgent: 'Node.js/24' })).toBe(false);
    expect(isWorkerd(undefined)).toBe(false);
    expect(isWorkerd(null)).toBe(false);
  });

  test('each attempt timeout has a timer of its own, armed by its call; they fire and are cleared', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, attemptTimeoutMs: 100, deadlineMs: 10_000, maxAttempts: 1 });
    const calls = [pool.execute(hang).catch((e: { code?: string }) => e.code), pool.execute(hang).catch((e: { code?: string }) => e.code)];
    await clock.advance(0);
    // Two attempts, two timers (the shared queue arms one for both: see the control below).
    expect(clock.pendingForegroundTimers).toBe(2);
    await clock.advance(100);
    expect(await Promise.all(calls)).toEqual(['RETRIES_EXHAUSTED', 'RETRIES_EXHAUSTED']);
    const ok = pool.execute(async () => 'ok');
    expect(await ok).toBe('ok');
    expect(clock.pendingForegroundTimers).toBe(0);
    await pool.close();

    setRequestBound(false);
    try {
      const shared = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, attemptTimeoutMs: 100, deadlineMs: 10_000, maxAttempts: 1 });
      const two = [shared.execute(hang).catch(() => undefined), shared.execute(hang).catch(() => undefined)];
      await clock.advance(0);
      expect(clock.pendingForegroundTimers).toBe(1);
      await clock.advance(100);
      await Promise.all(two);
      await shared.close();
    } finally {
      setRequestBound(true);
    }
  });

  test('a call waiting for a rate limit sleeps on its own timer and selects again (no shared queue); the limit and maxQueueWaitMs hold', async () => {
    const clock = new FakeClock();
    const events: PoolEvent[] = [];
    const pool = new Pool<string>({
      endpoints: [{ name: 'a', conn: 'a', rateLimit: { perSecond: 2, mode: 'paced' } }],
      classify: () => 'transient',
      clock,
      deadlineMs: 10_000,
      maxQueueWaitMs: 1_200,
      onEvent: (e) => void events.push(e),
    });
    const started: number[] = [];
    const op = async (): Promise<string> => (started.push(clock.now()), 'ok');
    const failedAt: number[] = [];
    const calls = [0, 1, 2, 3].map(() =>
      pool.execute(op).catch((e: { code?: string }) => {
        failedAt.push(clock.now());
        return e.code;
      }),
    );
    await clock.advance(0);
    await clock.advance(3_000);
    const out = await Promise.all(calls);
    // Three turns within 1,200 ms of waiting, paced half a second apart (plus the paced margin).
    expect(out.filter((x) => x === 'ok')).toHaveLength(3);
    const gaps = started.slice(1).map((t, i) => t - started[i]!);
    for (const g of gaps) expect(g).toBeGreaterThanOrEqual(500), expect(g).toBeLessThan(600);
    // Every waiting call slept (one wait each, counted once however often it woke and selected
    // again), and the one left without a turn failed within its bound: no queue handed out turns
    // (with one, the fourth would be refused at once, its turn 1.5 s away).
    expect(events.filter((e) => e.type === 'rate-limit-wait')).toHaveLength(3);
    expect(out[3]).toBe('RATE_LIMITED');
    expect(failedAt[0]).toBeGreaterThan(0);
    expect(failedAt[0]).toBeLessThanOrEqual(1_200);
    expect(clock.pendingForegroundTimers).toBe(0);
    await pool.close();
  });

  test('a call handed a permit by another goes on through its own promise, not inside the other call', async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, maxConcurrentCalls: 1 });
    let release: () => void = () => undefined;
    const first = pool.execute(() => new Promise<string>((r) => (release = () => r('first'))));
    let secondStarted = false;
    const second = pool.execute(async () => {
      secondStarted = true;
      return 'second';
    });
    await clock.advance(0);
    expect(secondStarted).toBe(false);
    // The first call ends; the permit goes to the second, which must not start within the
    // first call's own continuation (the turn of the microtask queue that settles it).
    let startedWithinFirst: boolean | undefined;
    void first.then(() => {
      startedWithinFirst = secondStarted;
    });
    release();
    expect(await first).toBe('first');
    expect(startedWithinFirst).toBe(false);
    expect(await second).toBe('second');
    await pool.close();
  });

  test('a permit handed to a call that is aborted before it goes on is not lost (an abort at every microtask depth)', async () => {
    for (let depth = 0; depth < 12; depth++) {
      const clock = new FakeClock();
      const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, maxConcurrentCalls: 1, deadlineMs: 1_000 });
      let release: (v: string) => void = () => undefined;
      const first = pool.execute(() => new Promise<string>((r) => (release = r)));
      const ac = new AbortController();
      const second = pool.execute(async () => 'second', { signal: ac.signal }).catch((e: { code?: string }) => e.code);
      const third = pool.execute(async () => 'third').catch((e: { code?: string }) => e.code);
      await clock.advance(0);
      release('first');
      // The abort lands `depth` microtasks after the first call's answer: somewhere between
      // the permit's hand-over to the second call and that call going on.
      let chain = Promise.resolve();
      for (let i = 0; i < depth; i++) chain = chain.then(() => undefined);
      void chain.then(() => ac.abort());
      await first;
      await clock.advance(2_000);
      // With the permit lost, the third call would wait for it until its deadline.
      expect([depth, await third]).toEqual([depth, 'third']);
      expect(['second', 'ABORTED']).toContain(await second);
      await pool.close();
    }
  });
});

describe('the properties hold where timers are request-bound', () => {
  const biases: [string, MixBias][] = [
    ['hedging', { hedge: 0.8, hang: 3 }],
    ['limits', { limits: 0.9, rateLimited: 4, spread: 300 }],
    ['hints', { hints: true, disable: 4, change: 0.5, limits: 0.6, spread: 1000 }],
    ['changes', { change: 0.9, close: 0.5, unauthorized: 2 }],
  ];
  for (const [name, bias] of biases) {
    test(`mixed generator, "${name}" (${RUNS} runs)`, async () => {
      await fc.assert(
        fc.asyncProperty(mixArb(bias), async (sc) => {
          const o = await simulateMix(sc);
          expect(o.violations).toEqual([]);
        }),
        { seed: Number(process.env['FC_SEED'] ?? 20261204), numRuns: RUNS },
      );
    }, 120_000);
  }

  test('every call settles exactly once and never after its deadline (300 runs)', async () => {
    const t = await checkScenarios('deadlines (request-bound)', scenarioArb({ hang: 4, transient: 4, rateLimited: 3, maxInFlight: 0.5, maxCalls: 2 }), 300);
    expect(t.runs).toBe(300);
  }, 120_000);
});
