/**
 * Refresher on FakeClock: no real sleeps; checks are promises the test settles.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { Pool, Refresher, type EndpointConfig, type RefreshResult } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

const ep = (name: string): EndpointConfig<string> => ({ name, conn: name });
const SEED = [ep('seed')];

let clock: FakeClock;
const refreshers: Refresher<string>[] = [];

function setup(options: Partial<ConstructorParameters<typeof Refresher<string>>[1]> & Pick<ConstructorParameters<typeof Refresher<string>>[1], 'check'>) {
  clock = new FakeClock();
  const pool = new Pool<string>({ endpoints: SEED, classify: () => 'transient', clock, breaker: { threshold: 1 } });
  const results: RefreshResult[] = [];
  const r = new Refresher(pool, { candidates: ['a', 'b', 'c'].map(ep), fallback: SEED, onRefresh: (x) => results.push(x), ...options });
  refreshers.push(r);
  return { pool, r, results };
}

afterEach(() => {
  for (const r of refreshers.splice(0)) r.stop();
});

describe('Refresher', () => {
  test('start() refreshes at once in the background, admitting only the survivors', async () => {
    const { pool, r, results } = setup({ check: async (c) => c !== 'b' });
    r.start();
    expect(pool.endpointNames).toEqual(['seed']); // nothing happened synchronously
    await clock.advance(0);
    expect(pool.endpointNames).toEqual(['a', 'c']);
    expect(results[0]).toMatchObject({ checked: 3, healthy: ['a', 'c'], installed: ['a', 'c'], usedFallback: false });
  });

  test('a rejecting check, a false check and a check past its timeout all fail; the timed-out one is aborted', async () => {
    let aborted = false;
    const { pool, r } = setup({
      timeoutMs: 1_000,
      check: (c, signal) => {
        if (c === 'a') return Promise.reject(new Error('down'));
        if (c === 'b') {
          signal.addEventListener('abort', () => (aborted = true));
          return new Promise(() => undefined); // hangs
        }
        return Promise.resolve(true);
      },
    });
    r.start();
    await clock.advance(999);
    expect(pool.endpointNames).toEqual(['seed']); // still waiting for b
    await clock.advance(1);
    expect(pool.endpointNames).toEqual(['c']);
    expect(aborted).toBe(true);
  });

  test('at most `concurrency` checks run at once', async () => {
    let inFlight = 0;
    let peak = 0;
    const { r } = setup({
      candidates: ['a', 'b', 'c', 'd', 'e'].map(ep),
      concurrency: 2,
      check: async () => {
        peak = Math.max(peak, ++inFlight);
        await new Promise<void>((res) => clock.setTimeout(res, 10));
        inFlight--;
      },
    });
    const done = r.refresh();
    await clock.advance(100);
    expect((await done).healthy).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(peak).toBe(2);
  });

  test('repeats every intervalMs after a refresh ends; runs never overlap', async () => {
    let checks = 0;
    const { r, results } = setup({ candidates: [ep('a')], intervalMs: 1_000, check: async () => void checks++ });
    r.start();
    await clock.advance(0);
    await clock.advance(3_000);
    expect(results).toHaveLength(4);
    expect(checks).toBe(4);
    expect(results.map((x) => x.startedAt)).toEqual([0, 1_000, 2_000, 3_000]);
  });

  test('stale while revalidate: calls go on with the current set while a refresh hangs', async () => {
    const { pool, r } = setup({ timeoutMs: 60_000, check: () => new Promise(() => undefined) });
    r.start();
    await clock.advance(10);
    expect(r.refreshing).toBe(true);
    expect(await pool.execute(async (c) => c)).toBe('seed');
  });

  test('none healthy: the fallback is installed; without a fallback the set is left alone', async () => {
    const a = setup({ check: async () => false });
    a.pool.setEndpoints([ep('x')]);
    await a.r.refresh();
    expect(a.pool.endpointNames).toEqual(['seed']);
    expect(a.results[0]).toMatchObject({ usedFallback: true, installed: ['seed'] });

    clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [ep('x')], classify: () => 'transient', clock });
    const r = new Refresher(pool, { candidates: [ep('a')], check: async () => false });
    refreshers.push(r);
    expect(await r.refresh()).toMatchObject({ installed: undefined, usedFallback: false });
    expect(pool.endpointNames).toEqual(['x']);
  });

  test('minHealthy: too few survivors fall back, merged with the survivors', async () => {
    const { pool, r } = setup({ minHealthy: 2, check: async (c) => c === 'a' });
    await r.refresh();
    expect(pool.endpointNames).toEqual(['a', 'seed']);
  });

  test('`always` endpoints are appended to every set', async () => {
    const { pool, r } = setup({ always: [{ name: 'paid', conn: 'paid', priority: 'low' }], check: async (c) => c === 'c' });
    await r.refresh();
    expect(pool.endpointNames).toEqual(['c', 'paid']);
  });

  test('endpoints kept by name keep their breaker across refreshes', async () => {
    const { pool, r } = setup({ candidates: [ep('a'), ep('b')], check: async () => true });
    await r.refresh();
    await pool.execute(async (c) => {
      if (c === 'a') throw new Error('down');
      return c;
    });
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
    await r.refresh();
    expect(pool.breakerState('a')).toMatchObject({ state: 'open' });
  });

  test('order: latency puts the fastest check first', async () => {
    const delays: Record<string, number> = { a: 30, b: 10, c: 20 };
    const { pool, r } = setup({ order: 'latency', check: (c) => new Promise((res) => clock.setTimeout(() => res(true), delays[c]!)) });
    const p = r.refresh();
    await clock.advance(50);
    await p;
    expect(pool.endpointNames).toEqual(['b', 'c', 'a']);
  });

  test('a candidate source that fails or times out keeps the current set and reports why', async () => {
    const { pool, r, results } = setup({ timeoutMs: 500, candidates: () => new Promise(() => undefined), check: async () => true });
    const p = r.refresh();
    await clock.advance(500);
    const res = await p;
    expect(res.installed).toBeUndefined();
    expect((res.error as Error).name).toBe('TimeoutError');
    // It said "health check timed out" before the fiftieth session: no check had run.
    expect((res.error as Error).message).toBe('the candidate source timed out after 500 ms');
    expect(pool.endpointNames).toEqual(['seed']);
    expect(results).toHaveLength(1);
  });

  test('regression (issue 19): when the source fails, the last candidates it gave are checked again, with their time', async () => {
    let up = true;
    let healthy = new Set(['a', 'b']);
    const { pool, r } = setup({
      candidates: async () => {
        if (!up) throw new Error('registry down');
        return ['a', 'b', 'c'].map(ep);
      },
      check: async (c) => healthy.has(c),
    });
    const first = await r.refresh();
    expect(pool.endpointNames).toEqual(['a', 'b']);
    expect(first.lastGoodAt).toBe(first.startedAt);
    up = false;
    healthy = new Set(['b']);
    await clock.advance(60_000);
    const second = await r.refresh();
    // Verified again: a died meanwhile and is gone; the source's failure is reported with the age of its list.
    expect(pool.endpointNames).toEqual(['b']);
    expect((second.error as Error).message).toBe('registry down');
    expect(second.lastGoodAt).toBe(first.startedAt);
    expect(second.checked).toBe(3);
  });

  test('shared: the fleet list decides; only the process asked to check runs the checks', async () => {
    const asked: number[] = [];
    let published: readonly string[] | undefined;
    const shared = {
      refreshSurvivors: async (check: () => Promise<readonly string[]>, o: { ttlMs: number }) => {
        asked.push(o.ttlMs);
        published ??= await check();
        return published;
      },
    };
    let checks = 0;
    const one = setup({ shared, intervalMs: 60_000, check: async (c) => (checks++, c !== 'b') });
    await one.r.refresh();
    expect(one.pool.endpointNames).toEqual(['a', 'c']);
    expect(checks).toBe(3);
    const two = setup({ shared, check: async () => (checks++, true) });
    const res = await two.r.refresh();
    // The second process installed the fleet's list without checking anything.
    expect(two.pool.endpointNames).toEqual(['a', 'c']);
    expect(checks).toBe(3);
    expect(res).toMatchObject({ fromShared: true, checked: 0, installed: ['a', 'c'] });
    expect(asked).toEqual([60_000, 300_000]);
  });

  test('shared: a store that asks for the check only after the step timed out is refused, and no timer is left', async () => {
    // generated5 (seed 17120433): Redis paused, the step gave up at timeoutMs, the store then ran
    // this process's check, and its end re-armed the step's timer while the store was still
    // publishing: a timer pending after stop() and close().
    let late: (() => Promise<readonly string[]>) | undefined;
    let finish: ((names: readonly string[] | undefined) => void) | undefined;
    const shared = {
      refreshSurvivors: (check: () => Promise<readonly string[]>) =>
        new Promise<readonly string[] | undefined>((resolve) => {
          late = check;
          finish = resolve;
        }),
    };
    const { r } = setup({ shared, timeoutMs: 1_000, check: async () => true });
    const res = r.refresh();
    await clock.advance(1_000);
    expect((await res).error).toBeInstanceOf(Error);
    await clock.advance(4_000);
    // Since the thirty-seventh session a refresh that gave up on the store checks nothing more for it
    // (the late checks ran beside the next refresh's, and re-checks queued behind one another).
    await expect(late!()).rejects.toThrow(/after the refresh gave up/);
    expect(clock.pendingTimers).toBe(0);
    finish!(['a']);
    r.stop();
    await clock.advance(0);
    expect(clock.pendingTimers).toBe(0);
  });

  test('shared: stop() during the check this process runs for the fleet gives the fleet nothing (it used to hand back an empty list)', async () => {
    let published: unknown = 'not asked';
    const shared = {
      refreshSurvivors: async (check: () => Promise<readonly string[]>) => {
        published = await check().then(
          (names) => names,
          () => 'rejected',
        );
        return undefined;
      },
    };
    const { r } = setup({ shared, timeoutMs: 10_000, check: () => new Promise(() => undefined) });
    r.start();
    await clock.advance(100);
    r.stop();
    await clock.advance(0);
    expect(published).toBe('rejected');
  });

  test('shared: a re-check the list runs in the background holds the next run until it ends (never two at once)', async () => {
    let inFlight = 0;
    let peak = 0;
    const shared = {
      // Stale while revalidate: a list at once, the re-check in the background.
      refreshSurvivors: async (check: () => Promise<readonly string[]>) => {
        void check().catch(() => undefined);
        return ['a'];
      },
    };
    const { r, results } = setup({
      shared,
      intervalMs: 100,
      timeoutMs: 1_000,
      concurrency: 3,
      check: async () => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise<void>((resolve) => clock.setTimeout(resolve, 500));
        inFlight--;
        return true;
      },
    });
    r.start();
    await clock.advance(2_000);
    expect(peak).toBe(3);
    // Each run waits for the last one's re-check (500 ms from its start), then starts its own.
    expect(results.map((x) => x.startedAt).slice(0, 4)).toEqual([0, 100, 600, 1100]);
    expect(results.map((x) => x.durationMs).slice(0, 4)).toEqual([0, 400, 400, 400]);
  });

  test('shared: no list yet and another process is checking: the current set stays', async () => {
    const { pool, r } = setup({ shared: { refreshSurvivors: async () => undefined }, check: async () => true });
    const res = await r.refresh();
    expect(res.installed).toBeUndefined();
    expect(pool.endpointNames).toEqual(['seed']);
  });

  test('the candidate source gets used when it answers', async () => {
    const { pool, r } = setup({ candidates: async () => [ep('z')], check: async () => true });
    await r.refresh();
    expect(pool.endpointNames).toEqual(['z']);
  });

  test('a throwing check or onRefresh is contained', async () => {
    const { pool, r } = setup({
      check: (c) => {
        if (c === 'a') throw new Error('sync throw');
        return Promise.resolve(true);
      },
      onRefresh: () => {
        throw new Error('observer');
      },
    });
    await r.refresh();
    expect(pool.endpointNames).toEqual(['b', 'c']);
  });

  test('refresh() called synchronously by the source or a check joins the run (it used to start runs inside runs until the stack overflowed)', async () => {
    let r!: Refresher<string>;
    let sources = 0;
    let checks = 0;
    const joined: Promise<RefreshResult>[] = [];
    ({ r } = setup({
      candidates: () => {
        sources++;
        joined.push(r.refresh());
        return Promise.resolve(['a', 'b'].map(ep));
      },
      check: () => {
        checks++;
        joined.push(r.refresh());
        return Promise.resolve(true);
      },
    }));
    const p = r.refresh();
    expect(joined.every((j) => j === p)).toBe(true);
    const result = await p;
    expect([sources, checks, joined.length]).toEqual([1, 2, 3]);
    expect(result.installed).toEqual(['a', 'b']);
    expect(r.refreshing).toBe(false);
  });

  test('refresh() called from onRefresh starts the next run (it used to join the run that had just ended)', async () => {
    let r!: Refresher<string>;
    let round = 0;
    const seen: RefreshResult[] = [];
    const next: Promise<RefreshResult>[] = [];
    ({ r } = setup({
      candidates: () => Promise.resolve([ep(`x${round++}`)]),
      check: () => new Promise((res) => clock.setTimeout(() => res(true), 10)),
      onRefresh: (x) => {
        seen.push(x);
        expect(r.refreshing).toBe(false);
        if (seen.length === 1) next.push(r.refresh());
      },
    }));
    const first = await (async () => {
      const p = r.refresh();
      await clock.advance(10);
      return p;
    })();
    expect(first.installed).toEqual(['x0']);
    expect(next).toHaveLength(1);
    expect(r.refreshing).toBe(true);
    await clock.advance(10);
    const second = await next[0]!;
    expect(second).not.toBe(first);
    expect(second.installed).toEqual(['x1']);
    expect(second.startedAt).toBe(10);
    expect(seen).toEqual([first, second]);
  });

  test('a refresher of a closed pool stops: no check, no install, no timer; refresh() answers CLOSED (it used to check and install every interval forever)', async () => {
    let checks = 0;
    const { pool, r, results } = setup({ intervalMs: 1_000, check: async () => (checks++, true) });
    r.start();
    await clock.advance(10);
    expect([checks, pool.endpointNames]).toEqual([3, ['a', 'b', 'c']]);
    await pool.close();
    expect(pool.closed).toBe(true);
    await clock.advance(5_000);
    expect(checks).toBe(3);
    expect(results).toHaveLength(1);
    expect(clock.pendingTimers).toBe(0);
    const late = await r.refresh();
    expect((late.error as { code?: string }).code).toBe('CLOSED');
    expect(late.installed).toBeUndefined();
  });

  test('a run in progress when the pool closes installs nothing and schedules no next run', async () => {
    let release!: () => void;
    const { pool, r } = setup({ intervalMs: 1_000, check: () => new Promise<boolean>((res) => (release = () => res(true))) });
    r.start();
    await clock.advance(0);
    await pool.close();
    release();
    await clock.advance(5_000);
    expect(pool.endpointNames).toEqual(['seed']);
    expect(clock.pendingTimers).toBe(0);
    expect(r.refreshing).toBe(false);
  });

  test('pool.close() stops a started refresher at once: its timer cleared, its checks aborted (it used to wait for its next run)', async () => {
    const signals: AbortSignal[] = [];
    const { pool, r, results } = setup({ intervalMs: 60_000, timeoutMs: 30_000, check: (_c, signal) => (signals.push(signal), new Promise(() => undefined)) });
    r.start();
    await clock.advance(10);
    expect(signals.map((s) => s.aborted)).toEqual([false, false, false]);
    expect(clock.pendingTimers).toBeGreaterThan(0);
    void pool.close();
    // In the same turn: nothing of the refresher's is left on the clock, and its checks' requests are told to close.
    expect(clock.pendingTimers).toBe(0);
    expect(signals.map((s) => s.aborted)).toEqual([true, true, true]);
    await clock.advance(0);
    expect([r.refreshing, results.length, pool.endpointNames]).toEqual([false, 0, ['seed']]);
  });

  test('shared: a source that stops the refresher (its list then counts as failed: the last one is reused) leaves no timer for the store it no longer asks', async () => {
    let asked = 0;
    const shared = { refreshSurvivors: async () => (asked++, ['a']) };
    let r!: Refresher<string>;
    let sources = 0;
    ({ r } = setup({
      shared,
      timeoutMs: 1_000,
      candidates: () => {
        if (sources++ === 1) r.stop();
        return Promise.resolve(['a', 'b'].map(ep));
      },
      check: async () => true,
    }));
    expect((await clock.runUntilSettled(r.refresh())).installed).toEqual(['a']);
    expect(asked).toBe(1);
    const res = r.refresh();
    // In the same turn as stop(): no timer waits on a store that will not be asked.
    expect(clock.pendingTimers).toBe(0);
    expect((await clock.runUntilSettled(res)).installed).toBeUndefined();
    expect(asked).toBe(1);
  });

  test('timers are background only, and stop() leaves none behind', async () => {
    const { r } = setup({ intervalMs: 1_000, check: () => new Promise(() => undefined) });
    r.start();
    await clock.advance(10);
    expect(clock.pendingTimers).toBeGreaterThan(0);
    expect(clock.pendingForegroundTimers).toBe(0);
    r.stop();
    await clock.advance(0);
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(10_000);
    expect(clock.pendingTimers).toBe(0);
  });

  test('a refresh() asked for by hand keeps the process alive until it ends (a script awaiting it exited with code 13 before timeoutMs ended a hung check); the scheduled runs do not', async () => {
    const { r } = setup({ intervalMs: 1_000, timeoutMs: 200, check: () => new Promise(() => undefined) });
    const p = r.refresh();
    await clock.advance(10);
    expect(clock.pendingForegroundTimers).toBeGreaterThan(0); // the checks' timeouts
    await clock.advance(200);
    expect((await p).healthy).toEqual([]);
    expect(clock.pendingForegroundTimers).toBe(0);
    r.start(); // its runs come from the timer: background, as before
    await clock.advance(10);
    expect(clock.pendingTimers).toBeGreaterThan(0);
    expect(clock.pendingForegroundTimers).toBe(0);
  });

  test('a refresh in flight when stop() is called installs nothing', async () => {
    let release!: () => void;
    const { pool, r } = setup({ check: () => new Promise<void>((res) => (release = res)) });
    const p = r.refresh();
    await clock.flush();
    r.stop();
    release();
    await p;
    expect(pool.endpointNames).toEqual(['seed']);
  });

  test('options are validated with the field named', () => {
    clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: SEED, classify: () => 'transient', clock });
    expect(() => new Refresher(pool, { candidates: [], check: async () => true, concurrency: 0 })).toThrow(/concurrency/);
    expect(() => new Refresher(pool, { candidates: [], check: 'no' as never })).toThrow(/check/);
  });
});

describe('Refresher options name what was wrong (issue 17)', () => {
  test('URLs where endpoint configs are needed are rejected at construction, with a hint', () => {
    const pool = new Pool<string>({ endpoints: SEED, classify: () => 'transient', clock: new FakeClock() });
    const check = async () => true;
    expect(() => new Refresher(pool, { candidates: ['https://a.example'] as never, check })).toThrow(
      "candidates[0]: expected an endpoint config { name, conn } (a URL? wrap it: { name: 'eu', conn: url }), got a string of 17 characters",
    );
    expect(() => new Refresher(pool, { candidates: [ep('a')], fallback: ['x'] as never, check })).toThrow(/^fallback\[0\]: expected an endpoint config/);
    expect(() => new Refresher(pool, { candidates: [ep('a')], check, interval: 5 } as never)).toThrow("interval: unknown option; did you mean 'intervalMs'?");
  });

  test('a candidate source that returns URLs fails the refresh with that message', async () => {
    const { r } = setup({ candidates: async () => ['https://a.example'] as never, check: async () => true });
    const result = await r.refresh();
    expect(String((result.error as Error).message)).toMatch(/^candidates\(\)\[0\]: expected an endpoint config \{ name, conn \} \(a URL\?/);
    expect(result.installed).toBeUndefined();
  });
});
