/**
 * Many calls failing at once (a `close()` with calls queued, one signal shared by many calls,
 * many requests of the fetch adapter refused together) settle without a `Promise.reject`: a
 * rejected promise that a later turn adopts has no handler for a while, and runtimes track
 * each such promise until it gets one. Deno 2.9 keeps them in a list it searches, so a
 * mass failure grew quadratic there: `close()` with 50,000 queued calls took 6.5 s on Deno
 * and 23 ms on Node (test/review/scale.test.ts, run on Deno). Counted here on any runtime.
 */
import { afterEach, expect, test, vi } from 'vitest';
import { Pool } from '../src/index.js';
import { createPooledFetch } from '../src/fetch/index.js';
import { FakeClock } from '../src/testing/index.js';

const N = 2_000;
const never = (): Promise<never> => new Promise(() => undefined);

afterEach(() => vi.restoreAllMocks());

test('close() with queued calls, and one aborted signal shared by many calls: every call rejects, no Promise.reject', async () => {
  const clock = new FakeClock();
  const pool = new Pool({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, maxConcurrentCalls: 1 });
  const ac = new AbortController();
  const shared = new Pool({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock });
  const settled: Promise<unknown>[] = [];
  void pool.execute(never).catch(() => undefined); // holds the one permit: the others queue
  for (let i = 0; i < N; i++) settled.push(pool.execute(never).catch((e: unknown) => (e as { code: string }).code));
  for (let i = 0; i < N; i++) settled.push(shared.execute(never, { signal: ac.signal }).catch((e: unknown) => (e as { code: string }).code));
  const rejects = vi.spyOn(Promise, 'reject');
  void pool.close();
  ac.abort();
  const codes = await Promise.all(settled);
  expect(codes.filter((c) => c === 'CLOSED').length).toBe(N);
  expect(codes.filter((c) => c === 'ABORTED').length).toBe(N);
  expect(rejects).not.toHaveBeenCalled();
});

test('the fetch adapter: many requests refused at once, with and without a replay guard, no Promise.reject', async () => {
  const refused = async (): Promise<Response> => {
    throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
  };
  const api = createPooledFetch({ endpoints: ['http://a.test', 'http://b.test'], fetch: refused, backoff: { initialMs: 0, maxMs: 0 } });
  const rejects = vi.spyOn(Promise, 'reject');
  const out = await Promise.all(
    Array.from({ length: 200 }, (_, i) => api('/x', i % 2 === 0 ? {} : { method: 'POST', body: 'b' }).catch((e: unknown) => (e as { code: string }).code)),
  );
  // Both endpoints refuse: each call fails (its code depends on when the breakers open), none hangs.
  expect(out.every((c) => c === 'RETRIES_EXHAUSTED' || c === 'NO_ENDPOINT')).toBe(true);
  expect(rejects).not.toHaveBeenCalled();
  await api.pool.close();
});
