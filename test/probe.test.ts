import { describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { fail, harness, hang, start } from './support.js';

describe('probeHealth', () => {
  test('a probe that never settles, in a pool with no attempt timeout: the deadline bounds it, and with neither 10 s (forty-first session: the round never ended)', async () => {
    for (const [deadlineMs, expectedMs] of [[5_000, 5_000], [Infinity, 10_000]] as const) {
      const h = harness(['a'], { attemptTimeoutMs: Infinity, deadlineMs });
      const round = start(h.pool.probeHealth(() => new Promise(() => undefined)));
      await h.clock.advance(expectedMs - 1);
      expect(round.settled).toBe(false);
      await h.clock.advance(1);
      expect(round.settled).toBe(true);
      expect(round.value).toMatchObject([{ endpoint: 'a', ok: false, timedOut: true }]);
    }
  });

  test('probes every endpoint whose breaker is not strictly open, concurrently, and omits open ones', async () => {
    const h = harness(['a', 'b', 'c'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 1 });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    const started: string[] = [];
    const report = start(
      h.pool.probeHealth((conn) => {
        started.push(conn.name);
        return new Promise((resolve) => h.clock.setTimeout(() => resolve(1), 100));
      }),
    );
    await h.clock.advance(0);
    expect(started).toEqual(['b', 'c']);
    await h.clock.advance(100);
    await report.promise;
    expect(report.value).toEqual([
      { endpoint: 'b', ok: true, durationMs: 100 },
      { endpoint: 'c', ok: true, durationMs: 100 },
    ]);
  });

  test('close() ends the probes still running (CLOSED, their signals aborted, their timers gone); a closed pool probes nothing', async () => {
    const h = harness(['a', 'b']);
    const signals: AbortSignal[] = [];
    const report = start(
      h.pool.probeHealth((_conn, ctx) => {
        signals.push(ctx.signal);
        return new Promise(() => undefined); // never answers
      }, { timeoutMs: 10_000 }),
    );
    await h.clock.advance(5);
    await h.pool.close();
    expect(h.clock.pendingForegroundTimers).toBe(0);
    await report.promise;
    expect(report.value).toMatchObject([
      { endpoint: 'a', ok: false, timedOut: false, durationMs: 5, error: { code: 'CLOSED' } },
      { endpoint: 'b', ok: false, timedOut: false, durationMs: 5, error: { code: 'CLOSED' } },
    ]);
    expect(signals.map((x) => x.aborted)).toEqual([true, true]);
    const after = await h.pool.probeHealth(async () => 1).catch((e: unknown) => e);
    expect(isPoolError(after) && after.code).toBe('CLOSED');
  });

  test('a half-open endpoint is probed, and the result never feeds its breaker', async () => {
    const h = harness(['a'], { breaker: { threshold: 1, cooldownMs: 1000 }, maxAttempts: 1 });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    await h.clock.advance(1000);
    const report = await h.pool.probeHealth(async () => 'fine');
    expect(report).toEqual([{ endpoint: 'a', ok: true, durationMs: 0 }]);
    expect(h.pool.breakerState('a')).toBe('half-open');
    const bad = await h.pool.probeHealth(async () => {
      throw new Error('nope');
    });
    expect(bad[0]).toMatchObject({ endpoint: 'a', ok: false, timedOut: false });
    expect(h.pool.breakerState('a')).toBe('half-open');
  });

  test('runs under the attempt timeout and aborts the probe signal; bypasses permits and limiters', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1 } }], { attemptTimeoutMs: 300, maxConcurrentCalls: 1 });
    await h.pool.execute(h.op); // spends a's only token
    const signals: AbortSignal[] = [];
    const report = start(
      h.pool.probeHealth((_c, ctx) => {
        signals.push(ctx.signal);
        return new Promise(() => undefined);
      }),
    );
    await h.clock.advance(300);
    await report.promise;
    expect(report.value?.[0]).toMatchObject({ endpoint: 'a', ok: false, timedOut: true, durationMs: 300 });
    expect(signals[0]?.aborted).toBe(true);
    expect(h.clock.pendingForegroundTimers).toBe(0);
    const custom = start(h.pool.probeHealth(() => new Promise(() => undefined), { timeoutMs: 50 }));
    await h.clock.advance(50);
    await custom.promise;
    expect(custom.value?.[0]).toMatchObject({ timedOut: true, durationMs: 50 });
    void hang;
  });
});
