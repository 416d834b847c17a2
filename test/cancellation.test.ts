import { describe, expect, test } from 'vitest';
import { isPoolError, type PoolError } from '../src/index.js';
import { fail, harness, hang, ok, start, type Harness } from './support.js';

const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);

/** After a call ended: nothing pending on the clock, no slot or permit held. */
function expectNothingHeld(h: Harness): void {
  expect(h.clock.pendingForegroundTimers).toBe(0);
  expect(h.pool.activeCalls).toBe(0);
  expect(h.pool.pendingCalls).toBe(0);
  for (const s of h.pool.stats()) expect(s.inFlight).toBe(0);
}

describe('cancellation by the caller', () => {
  test('already aborted: rejects with ABORTED without an attempt', async () => {
    const h = harness(['a']);
    const ac = new AbortController();
    ac.abort(new Error('no'));
    const err = await h.pool.execute(h.op, { signal: ac.signal }).catch((e: unknown) => e);
    expect(code(err)).toBe('ABORTED');
    expect(((err as PoolError).cause as Error).message).toBe('no');
    expect(h.eps.a!.calls).toBe(0);
    expectNothingHeld(h);
  });

  test('while waiting for the permit', async () => {
    const h = harness(['a'], { maxConcurrentCalls: 1 });
    h.eps.a!.then(ok('long', 1000));
    const holder = start(h.pool.execute(h.op));
    const ac = new AbortController();
    const waiter = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(10);
    ac.abort();
    await h.clock.advance(0);
    expect(code(waiter.error)).toBe('ABORTED');
    expect(h.pool.pendingCalls).toBe(0);
    await h.clock.advance(990);
    await holder.promise;
    // The permit went back to the pool, not to the aborted caller.
    expect(await h.pool.execute(h.op)).toBe('a');
    expectNothingHeld(h);
  });

  test('while waiting for a token', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1 } }]);
    await h.pool.execute(h.op);
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(500);
    ac.abort();
    await h.clock.advance(0);
    expect(code(call.error)).toBe('ABORTED');
    expect(h.eps.a!.calls).toBe(1);
    expectNothingHeld(h);
  });

  test('mid-attempt: the attempt signal aborts, the in-flight slot is released and attempt-cancelled is emitted', async () => {
    const h = harness([{ name: 'a', maxInFlight: 1 }]);
    h.eps.a!.then(hang(true));
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(20);
    expect(h.pool.stats()[0]!.inFlight).toBe(1);
    const reason = new Error('user gave up');
    ac.abort(reason);
    await h.clock.advance(0);
    expect(code(call.error)).toBe('ABORTED');
    expect(h.eps.a!.contexts[0]!.signal.aborted).toBe(true);
    expect(h.eps.a!.contexts[0]!.signal.reason).toBe(reason);
    expect(h.events.at(-2)).toMatchObject({ type: 'attempt-cancelled', endpoint: 'a', reason: 'aborted', durationMs: 20 });
    expectNothingHeld(h);
  });

  test('during a backoff sleep', async () => {
    const h = harness(['a']);
    h.eps.a!.then(fail('transient'));
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(50);
    expect(h.trace((e) => e.type === 'retry-scheduled')).toEqual(['retry-scheduled']);
    ac.abort();
    await h.clock.advance(0);
    expect(code(call.error)).toBe('ABORTED');
    expect(h.eps.a!.calls).toBe(1);
    expectNothingHeld(h);
  });

  test('while parked on a full endpoint', async () => {
    const h = harness([{ name: 'a', maxInFlight: 1 }]);
    h.eps.a!.then(ok('first', 1000));
    const first = start(h.pool.execute(h.op));
    const ac = new AbortController();
    const parked = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(10);
    ac.abort();
    await h.clock.advance(990);
    await first.promise;
    await parked.promise;
    expect(code(parked.error)).toBe('ABORTED');
    expect(h.eps.a!.calls).toBe(1);
    expectNothingHeld(h);
  });

  test('a result that arrives after the attempt was aborted is ignored', async () => {
    const h = harness(['a']);
    h.eps.a!.then(ok('late', 100));
    const ac = new AbortController();
    const call = start(h.pool.execute(h.op, { signal: ac.signal }));
    await h.clock.advance(50);
    ac.abort();
    await h.clock.advance(100);
    expect(code(call.error)).toBe('ABORTED');
    expect(h.pool.stats()[0]!.successes).toBe(0);
    expect(h.trace((e) => e.type.startsWith('attempt'))).toEqual(['attempt-start:a', 'attempt-cancelled:a']);
  });

  test('the abort listener is removed when the call ends normally', async () => {
    const h = harness(['a']);
    const ac = new AbortController();
    let added = 0;
    let removed = 0;
    const signal = ac.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => {
      added++;
      return add(...args);
    }) as typeof add;
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      removed++;
      return remove(...args);
    }) as typeof remove;
    await h.pool.execute(h.op, { signal });
    expect([added, removed]).toEqual([1, 1]);
  });

  test('the attempt signal is not created unless read, and never aborted on a normal return', async () => {
    const h = harness(['a']);
    let seen: AbortSignal | undefined;
    await h.pool.execute(async (_conn, ctx) => {
      seen = ctx.signal;
      return 1;
    });
    expect(seen?.aborted).toBe(false);
  });
});

describe('close()', () => {
  test('new calls fail with CLOSED; waiting calls fail at once; running attempts finish and are not retried', async () => {
    const h = harness(['a', 'b'], { maxConcurrentCalls: 2 });
    h.eps.a!.then(ok('finishing', 100), fail('transient', 100));
    const running = start(h.pool.execute(h.op));
    const failing = start(h.pool.execute(h.op));
    const queued = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    const closed = start(h.pool.close());
    await h.clock.advance(0);
    expect(code(queued.error)).toBe('CLOSED');
    expect(closed.settled).toBe(false);
    await h.clock.advance(90);
    await closed.promise;
    expect(running.value).toBe('finishing');
    expect(code(failing.error)).toBe('CLOSED');
    expect(h.eps.b!.calls).toBe(0);
    const after = await h.pool.execute(h.op).catch((e: unknown) => e);
    expect(code(after)).toBe('CLOSED');
    expectNothingHeld(h);
    expect(h.pool.close()).toBe(h.pool.close());
    // Once closed and idle, not even the shared timeout timer is left.
    expect(h.clock.pendingTimers).toBe(0);
  });

  test('close() ends a backoff sleep at once and leaves no timer', async () => {
    const h = harness(['a']);
    h.eps.a!.then(fail('transient'));
    const call = start(h.pool.execute(h.op));
    await h.clock.advance(10);
    await h.pool.close();
    await call.promise;
    expect(code(call.error)).toBe('CLOSED');
    expectNothingHeld(h);
  });
});
