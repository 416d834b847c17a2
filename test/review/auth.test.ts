/**
 * Issue 15: credentials carry a generation. A 401 to a request sent with credentials a
 * refresh has already replaced replays with the current ones instead of refreshing again;
 * the replay spends no retry. Each test failed before the fix (or pins a rule the
 * mutation run found unprotected).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Pool, isPoolError, type AttemptContext } from '../../src/index.js';
import { createPooledFetch } from '../../src/fetch/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { startLoopback, type Loopback } from '../helpers/loopback.js';

class Unauthorized extends Error {}
class Flaky extends Error {}

/** An upstream that accepts one credential at a time; `rotate()` invalidates it. */
function upstream(clock: FakeClock) {
  const state = { accepted: 1, held: 1, refreshes: 0 };
  const pool = (opts: { refreshMs?: number; maxAttempts?: number } = {}) =>
    new Pool<'api'>({
      endpoints: [{ name: 'api', conn: 'api' }],
      clock,
      random: () => 0.5,
      maxAttempts: opts.maxAttempts ?? 3,
      classify: (e) => (e instanceof Unauthorized ? 'unauthorized' : 'transient'),
      refreshAuth: async () => {
        state.refreshes++;
        if (opts.refreshMs !== undefined) await new Promise<void>((r) => clock.setTimeout(r, opts.refreshMs!));
        state.held = state.accepted;
      },
    });
  return { state, pool };
}

describe('core refreshAuth: one refresh per rotation', () => {
  test.each([0, 5])('50 calls spread over 9 ms after a rotation (refresh takes %i ms): one refresh', async (refreshMs) => {
    const clock = new FakeClock();
    const { state, pool } = upstream(clock);
    const p = pool({ refreshMs });
    state.accepted = 2; // the server rotates
    // Each request is answered after a delay; 401 if the credential it was sent with is stale.
    const op = (_c: 'api', _ctx: AttemptContext): Promise<string> => {
      const sent = state.held;
      return new Promise((resolve, reject) => clock.setTimeout(() => (sent === state.accepted ? resolve('ok') : reject(new Unauthorized('401'))), 3));
    };
    const calls: Promise<string>[] = [];
    for (let i = 0; i < 50; i++) {
      calls.push(p.execute(op));
      if (i % 6 === 5) await clock.advance(1);
    }
    await clock.advance(100);
    expect(await Promise.all(calls)).toEqual(Array(50).fill('ok'));
    expect(state.refreshes).toBe(1);
  });

  test('the replay spends no retry: 401, refresh, a transient failure, then success, under maxAttempts: 2', async () => {
    const clock = new FakeClock();
    const { state, pool } = upstream(clock);
    const p = pool({ maxAttempts: 2 });
    state.accepted = 2;
    let n = 0;
    const op = (): Promise<string> => {
      n++;
      if (state.held !== state.accepted) return Promise.reject(new Unauthorized('401'));
      return n === 2 ? Promise.reject(new Flaky('reset')) : Promise.resolve('ok');
    };
    const call = p.execute(op);
    await clock.advance(1_000);
    expect(await call).toBe('ok');
    expect(n).toBe(3);
    expect(state.refreshes).toBe(1);
  });

  test('a 401 with the current credentials after this call refreshed twice is final', async () => {
    const clock = new FakeClock();
    const { state, pool } = upstream(clock);
    const p = pool();
    state.accepted = 2;
    const call = p.execute(() => Promise.reject(new Unauthorized('401'))).catch((e: unknown) => e);
    await clock.advance(1_000);
    const e = await call;
    expect(isPoolError(e) && e.code).toBe('UNAUTHORIZED');
    // Two refreshes per endpoint per call (a rotation right after a refresh is no one's fault)...
    expect(state.refreshes).toBe(2);
    // ...on each later call too.
    const again = p.execute(() => Promise.reject(new Unauthorized('401'))).catch((e: unknown) => e);
    await clock.advance(1_000);
    const e2 = await again;
    expect(isPoolError(e2) && e2.code).toBe('UNAUTHORIZED');
    expect(state.refreshes).toBe(4);
  });
});

describe('fetch adapter over loopback HTTP: one getToken per rotation', () => {
  let server: Loopback;
  let accepted = 'token-1';
  beforeAll(async () => {
    server = await startLoopback((req, res) => {
      // Answer slightly out of order, as a real server under load would.
      const delay = Math.floor(Math.random() * 4);
      setTimeout(() => {
        if (req.headers.authorization !== `Bearer ${accepted}`) res.writeHead(401).end();
        else res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      }, delay);
    });
  });
  afterAll(() => server.close());

  test.each([0, 5])('50 concurrent requests after a rotation (login takes %i ms): one getToken', async (loginMs) => {
    let tokenCalls = 0;
    const pooled = createPooledFetch({
      endpoints: [{ url: server.url, name: 'api' }],
      attemptTimeoutMs: 30_000,
      deadlineMs: 60_000,
      getToken: async () => {
        tokenCalls++;
        if (loginMs > 0) await new Promise((r) => setTimeout(r, loginMs));
        return accepted;
      },
    });
    expect((await pooled('/warm')).status).toBe(200);
    expect(tokenCalls).toBe(1);
    accepted = `token-${Math.random()}`;
    const statuses = await Promise.all(Array.from({ length: 50 }, () => pooled('/items').then((r) => r.status)));
    expect(statuses).toEqual(Array(50).fill(200));
    expect(tokenCalls).toBe(2);
    await pooled.pool.close();
  });
});
