/**
 * The fetch adapter's token provider against a loopback server that rotates the token it
 * accepts: the token is fetched lazily, a 401 triggers one refresh for all the requests
 * that hit it, and each is replayed once with no backoff.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPooledFetch } from '../src/fetch/index.js';
import type { PoolEvent } from '../src/index.js';
import { startLoopback, type Loopback } from './helpers/loopback.js';
import { timerLag, withLag } from './helpers/lag.js';

let server: Loopback;
let accepted = 'token-1';
let generation = 1;
let rejected = 0;

/** Real-time budgets grown with the timer lag measured first (a loaded machine). */
let attemptTimeoutMs = 2000;
let deadlineMs = 30_000;

beforeAll(async () => {
  const lag = await timerLag();
  attemptTimeoutMs = withLag(2000, lag, 40);
  deadlineMs = withLag(30_000, lag, 100);
  server = await startLoopback((req, res) => {
    if (req.headers.authorization !== `Bearer ${accepted}`) {
      rejected++;
      res.writeHead(401).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});
afterAll(() => server.close());

describe('fetch adapter: token provider', () => {
  test('lazily fetches a token, refreshes once per rotation, replays without backoff', async () => {
    let tokenCalls = 0;
    const events: PoolEvent[] = [];
    const pooled = createPooledFetch({
      endpoints: [{ url: server.url, name: 'api' }],
      getToken: async () => {
        tokenCalls++;
        await new Promise((r) => setTimeout(r, 20)); // a real round trip to a token service
        return accepted;
      },
      onEvent: (e) => events.push(e),
      attemptTimeoutMs,
      deadlineMs,
    });
    expect(tokenCalls).toBe(0); // lazily: nothing before the first request

    const first = await Promise.all(Array.from({ length: 10 }, () => pooled('/items').then((r) => r.status)));
    expect(first).toEqual(Array(10).fill(200));
    expect(tokenCalls).toBe(1);

    // The server rotates its token: the next wave of requests gets 401s, one refresh, replays.
    accepted = `token-${++generation}`;
    const second = await Promise.all(Array.from({ length: 10 }, () => pooled('/items').then((r) => r.status)));
    expect(second).toEqual(Array(10).fill(200));
    expect(tokenCalls).toBe(2);
    expect(rejected).toBe(10);
    // One refresh for the first use, one for the rotation.
    expect(events.filter((e) => e.type === 'auth-refresh')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'retry-scheduled')).toHaveLength(0);
    await pooled.pool.close();
  });

  test('without a token provider a 401 is final', async () => {
    const pooled = createPooledFetch({ endpoints: [server.url], attemptTimeoutMs, deadlineMs });
    const res = await pooled('/items');
    expect(res.status).toBe(401);
    await pooled.pool.close();
  });

  test('a token provider that fails makes the call fail with AUTH', async () => {
    const hitsBefore = server.hits;
    const pooled = createPooledFetch({
      endpoints: [server.url],
      attemptTimeoutMs,
      deadlineMs,
      getToken: async () => {
        throw new Error('token service down');
      },
    });
    const err = (await pooled('/items').catch((e: unknown) => e)) as { code?: string; cause?: Error };
    expect(err.code).toBe('AUTH');
    expect(err.cause?.message).toBe('token service down');
    expect(server.hits).toBe(hitsBefore); // no request went out without a token
    await pooled.pool.close();
  });
});
