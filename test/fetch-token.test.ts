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

/** A `Headers`' pairs, as `fetch` sends them (sorted, names in lower case). */
function pairsOf(h: Headers): [string, string][] {
  const out: [string, string][] = [];
  h.forEach((value, name) => out.push([name, value]));
  return out;
}

describe('fetch adapter: the token in each shape of headers', () => {
  /** What the server would see: the sent headers through `Headers`, as `fetch` reads them. */
  const shapes: [string, () => HeadersInit | undefined][] = [
    ['none', () => undefined],
    ['a plain object with a stale token in another case', () => ({ Authorization: 'Bearer stale', 'x-api-key': 'k' })],
    ['a null-prototype object', () => Object.assign(Object.create(null) as Record<string, string>, { 'x-api-key': 'k', authorization: 'Basic old' })],
    ['pairs with a stale token', () => [['x-api-key', 'k'], ['AUTHORIZATION', 'Bearer stale'], ['accept', 'text/plain']]],
    ['a Headers', () => new Headers({ 'x-api-key': 'k', authorization: 'Bearer stale' })],
  ];
  test.each(shapes)('%s: one authorization header with the token; the rest kept; the caller\'s headers untouched', async (_name, make) => {
    const sent: Headers[] = [];
    const pooled = createPooledFetch({
      endpoints: ['http://127.0.0.1:9/'],
      getToken: async () => 'fresh',
      fetch: async (_url, init) => {
        sent.push(new Headers(init?.headers));
        return new Response('ok');
      },
    });
    const headers = make();
    const before = headers === undefined ? undefined : JSON.stringify(pairsOf(new Headers(headers)));
    expect((await pooled('/x', headers === undefined ? undefined : { headers })).status).toBe(200);
    expect((await pooled('/x', headers === undefined ? undefined : { headers })).status).toBe(200);
    expect(sent).toHaveLength(2);
    for (const h of sent) {
      expect(h.get('authorization')).toBe('Bearer fresh');
      const expected = headers === undefined ? [] : pairsOf(new Headers(headers)).filter(([k]) => k !== 'authorization');
      expect(pairsOf(h).filter(([k]) => k !== 'authorization')).toEqual(expected);
    }
    if (headers !== undefined) expect(JSON.stringify(pairsOf(new Headers(headers)))).toBe(before);
    await pooled.pool.close();
  });
});
