/**
 * The fetch adapter's request path (src/fetch/pooled-fetch.ts) on a scripted `fetch`, where the
 * thirtieth session's first mutation run of it (74.3 %) found no test holding: the adapter's
 * option checks, what a 401 means with a token provider (and what other statuses still mean), a
 * 4xx answer as the endpoint's failure, the per-request init checks, and a body that cannot be
 * sent twice.
 */
import { describe, expect, test } from 'vitest';
import { createPooledFetch } from '../../src/fetch/index.js';

/** A `fetch` answering each request with the next status of `statuses` (then 200); records URLs and auth. */
function scripted(statuses: number[]) {
  const seen: { url: string; auth: string | null; method: string }[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    seen.push({ url: String(input), auth: new Headers(init?.headers).get('authorization'), method: init?.method ?? 'GET' });
    const status = statuses.shift() ?? 200;
    return new Response(status === 204 ? null : `s${status}`, { status });
  };
  return { seen, fetch: fetch as typeof globalThis.fetch };
}

describe('options', () => {
  test('unknown options and a non-object are refused, naming the field', () => {
    const { fetch } = scripted([]);
    expect(() => createPooledFetch({ endpoints: ['https://a.example'], fetch, retries: 3 } as never)).toThrow(/retries: unknown option; did you mean 'maxAttempts'/);
    expect(() => createPooledFetch(null as never)).toThrow(/INVALID_OPTIONS|options/);
    expect(() => createPooledFetch(5 as never)).toThrow(/endpoints: expected a non-empty array/);
  });
});

describe('a token provider', () => {
  test('a 401 refreshes the token and replays; a 503 is a transient failure like any other (no refresh)', async () => {
    const { seen, fetch } = scripted([401, 503]);
    let issued = 0;
    const f = createPooledFetch({ endpoints: ['https://a.example'], fetch, backoff: { initialMs: 1, maxMs: 1 }, getToken: async () => `t${++issued}` });
    const res = await f('/x');
    expect(res.status).toBe(200);
    expect(seen.map((s) => s.auth)).toEqual(['Bearer t1', 'Bearer t2', 'Bearer t2']);
    expect(issued).toBe(2);
    await f.pool.close();
  });

  test('without one, a 401 is the answer (no replay)', async () => {
    const { seen, fetch } = scripted([401]);
    const f = createPooledFetch({ endpoints: ['https://a.example'], fetch });
    const res = await f('/x');
    expect(res.status).toBe(401);
    expect(seen).toHaveLength(1);
    await f.pool.close();
  });
});

describe('answers', () => {
  test('a 400 is the answer, and the endpoint\'s failure in its stats; a 399 is a success', async () => {
    const { fetch } = scripted([400, 399]);
    const f = createPooledFetch({ endpoints: ['https://a.example'], fetch });
    expect((await f('/x')).status).toBe(400);
    expect(f.pool.stats().map((s) => [s.successes, s.failures])).toEqual([[0, 1]]);
    expect((await f('/y')).status).toBe(399);
    expect(f.pool.stats().map((s) => [s.successes, s.failures])).toEqual([[1, 1]]);
    await f.pool.close();
  });
});

describe('per-request init', () => {
  test.each([
    ['parse', { parse: 5 }, /parse: expected 'json', 'text' or a function/],
    ['idempotent', { idempotent: 'yes' }, /idempotent: expected a boolean/],
    ['pool: a number', { pool: 5 }, /pool: expected the pool's per-call options/],
    ['pool: null', { pool: null }, /pool: expected the pool's per-call options/],
  ])('%s is refused, naming the field', async (_label, init, message) => {
    const { seen, fetch } = scripted([]);
    const f = createPooledFetch({ endpoints: ['https://a.example'], fetch });
    await expect(Promise.resolve().then(() => f('/x', init as never))).rejects.toThrow(message);
    expect(seen).toEqual([]);
    await f.pool.close();
  });

  test("parse: 'text', 'json' or a function gives the body so read", async () => {
    const { fetch } = scripted([]);
    const f = createPooledFetch({ endpoints: ['https://a.example'], fetch });
    expect(await f('/x', { parse: 'text' })).toBe('s200');
    expect(await f('/x', { parse: async (res: Response) => (await res.text()).length })).toBe(4);
    await f.pool.close();
  });

  test("the pool's per-call options apply (a pin)", async () => {
    const { seen, fetch } = scripted([]);
    const f = createPooledFetch({ endpoints: [{ url: 'https://a.example', name: 'a' }, { url: 'https://b.example', name: 'b' }], fetch, strategy: 'ordered' });
    await f('/x', { pool: { pin: 'b' } });
    expect(seen.map((s) => s.url)).toEqual(['https://b.example/x']);
    await f.pool.close();
  });

  test('a stream body is sent once: a 503 is not retried (it cannot be sent again)', async () => {
    const { seen, fetch } = scripted([503, 503]);
    const f = createPooledFetch({ endpoints: ['https://a.example', 'https://b.example'], fetch, backoff: { initialMs: 1, maxMs: 1 } });
    const body = new ReadableStream({ start: (c) => { c.enqueue(new TextEncoder().encode('x')); c.close(); } });
    const res = await f('/x', { method: 'PUT', body, duplex: 'half', idempotent: true } as RequestInit);
    expect(res.status).toBe(503);
    expect(seen).toHaveLength(1);
    // A string body is sent again.
    const again = await f('/y', { method: 'PUT', body: 'x', idempotent: true } as RequestInit);
    expect(again.status).toBe(200);
    expect(seen).toHaveLength(3);
    await f.pool.close();
  });
});
