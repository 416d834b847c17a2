/**
 * A call is its own first attempt (one object: heap per call in flight), and that attempt
 * keeps its endpoint and its breaker and credential tickets in one object the endpoint
 * shares with every attempt started under the same generations (a half-open probe has its
 * own). Later attempts are objects of their own. These pin what each path must still do.
 */
import { describe, expect, test } from 'vitest';
import { Pool, type AttemptContext, type PoolEvent } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import type { EndpointState } from '../src/selection/endpoint.js';
import { fail, harness, ok, start, type FakeEndpoint } from './support.js';

describe("the own attempt's credential ticket", () => {
  // An unauthorized answer to an attempt sent with the current credentials refreshes them;
  // one sent with older credentials replays at once without a refresh. Either reading of
  // the ticket that is off (a stale shared ticket, a generation cut short) turns one into the other.
  test.each([
    ['small', 3],
    ['2^14 - 1', 2 ** 14 - 1],
    ['2^16 + 5', 2 ** 16 + 5],
    ['2^40', 2 ** 40],
  ])('credential generation %s: an unauthorized answer sent with the current credentials refreshes them', async (_, generation) => {
    const runs: string[] = [];
    const h = harness(['a'], {
      maxAttempts: 1,
      refreshAuth: (conn: FakeEndpoint) => {
        runs.push(conn.name);
        return Promise.resolve();
      },
    });
    // Reach the endpoint's state through a context (the attempt knows its endpoint).
    let ep: EndpointState<FakeEndpoint> | undefined;
    await h.pool.execute((conn: FakeEndpoint, ctx: AttemptContext) => {
      ep = (ctx as unknown as { ep: EndpointState<FakeEndpoint> }).ep;
      return Promise.resolve(conn.name);
    });
    ep!.authGeneration = generation;
    h.eps.a!.then(fail('unauthorized'), ok('after refresh'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    await call.promise;
    expect(call.value).toBe('after refresh');
    expect(runs).toEqual(['a']);
    expect(ep!.authGeneration).toBe(generation + 1);
  });

  test('a later attempt is an object of its own; the first is the call', async () => {
    const h = harness(['a', 'b'], { classify: () => 'transient', maxAttempts: 2 });
    h.eps.a!.then(fail('transient'));
    h.eps.b!.then(ok('b'));
    const contexts: AttemptContext[] = [];
    const call = start(h.pool.execute((conn: FakeEndpoint, ctx: AttemptContext) => {
      contexts.push(ctx);
      return h.op(conn, ctx);
    }));
    await h.clock.advance(10_000);
    await call.promise;
    expect(call.value).toBe('b');
    expect(contexts.map((c) => [c.endpoint, c.attempt])).toEqual([['a', 1], ['b', 2]]);
    expect(contexts[0]).not.toBe(contexts[1]);
    expect(contexts[0]!.deadlineAt).toBe(contexts[1]!.deadlineAt);
  });
});

describe('call numbers (callId)', () => {
  test('a call made before any listener is numbered when a listener first needs it; every number stays unique and stable', async () => {
    const clock = new FakeClock(0);
    const pool = new Pool({ endpoints: [{ name: 'a', conn: 0 }], classify: () => 'transient', clock, attemptTimeoutMs: 100, deadlineMs: 5_000, maxAttempts: 2, backoff: { initialMs: 10, jitter: 'none' } });
    const settle: ((ok: boolean) => void)[] = [];
    const op = (): Promise<number> => new Promise((resolve, reject) => settle.push((ok) => (ok ? resolve(1) : reject(new Error('no')))));
    const early = [pool.execute(op), pool.execute(op)]; // no listener: no number yet
    const events: PoolEvent[] = [];
    pool.on((e) => events.push(e));
    const late = pool.execute(op); // a listener: numbered when made
    settle[0]!(true);
    settle[1]!(false); // the second early call fails once, then retries
    settle[2]!(true);
    await clock.advance(50);
    settle[3]!(true);
    await Promise.all([...early, late]);
    const ids = (type: string) => events.filter((e) => e.type === type).map((e) => (e as { callId: number }).callId);
    const [lateId] = ids('attempt-start'); // the late call's first attempt; then the retry's
    expect(ids('attempt-success')).toHaveLength(3);
    expect(new Set(ids('attempt-success')).size).toBe(3);
    expect(ids('attempt-success')).toContain(lateId);
    // The early call that failed keeps the number it was given at its first event.
    const failed = ids('attempt-failure');
    expect(failed).toHaveLength(1);
    expect(ids('retry-scheduled')).toEqual(failed);
    expect(ids('attempt-start').slice(1)).toEqual(failed);
    expect(ids('attempt-success')).toContain(failed[0]);
    await pool.close();
  });
});
