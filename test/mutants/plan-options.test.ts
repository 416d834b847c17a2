/**
 * Issue 15, mutation rerun: `execute()`'s options as a call's plan (src/call/plan.ts), through
 * the public API: what is refused, with which message, and which calls hedge.
 */
import { describe, expect, test } from 'vitest';
import { isPoolError } from '../../src/index.js';
import { harness, ok, start } from '../support.js';

async function refusal(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isPoolError(e)).toBe(true);
  return `${(e as { code: string }).code}: ${(e as Error).message}`;
}

describe('signal', () => {
  const listeners = { addEventListener: () => undefined, removeEventListener: () => undefined, aborted: false };

  test('a function that looks like a signal is refused: it must be an object', async () => {
    const h = harness(['a']);
    const fake = Object.assign(() => undefined, listeners);
    expect(await refusal(h.pool.execute(h.op, { signal: fake as unknown as AbortSignal }))).toMatch(/^INVALID_OPTIONS: signal: expected an AbortSignal/);
    expect(h.eps.a!.calls).toBe(0);
  });

  test('an object without removeEventListener is refused (its listener could never be removed)', async () => {
    const h = harness(['a']);
    const fake = { addEventListener: () => undefined, aborted: false };
    expect(await refusal(h.pool.execute(h.op, { signal: fake as unknown as AbortSignal }))).toMatch(/^INVALID_OPTIONS: signal: expected an AbortSignal/);
    const noAdd = { removeEventListener: () => undefined, aborted: false };
    expect(await refusal(h.pool.execute(h.op, { signal: noAdd as unknown as AbortSignal }))).toMatch(/^INVALID_OPTIONS: signal: expected an AbortSignal/);
    const noAborted = { addEventListener: () => undefined, removeEventListener: () => undefined };
    expect(await refusal(h.pool.execute(h.op, { signal: noAborted as unknown as AbortSignal }))).toMatch(/^INVALID_OPTIONS: signal: expected an AbortSignal/);
    expect(h.eps.a!.calls).toBe(0);
  });

  test('an object with all three is taken as a signal', async () => {
    const h = harness(['a']);
    expect(await h.pool.execute(h.op, { signal: listeners as unknown as AbortSignal })).toBe('a');
  });
});

describe('retry', () => {
  test('null is refused with the list of accepted forms, not a TypeError', async () => {
    const h = harness(['a']);
    expect(await refusal(h.pool.execute(h.op, { retry: null as never }))).toBe(
      "INVALID_OPTIONS: retry: expected 'none', 'until-deadline' or { maxAttempts }, got null",
    );
  });
});

describe('pin', () => {
  test('a name not in the pool fails PIN_UNAVAILABLE, naming it', async () => {
    const h = harness(['a']);
    expect(await refusal(h.pool.execute(h.op, { pin: 'zz' }))).toBe('PIN_UNAVAILABLE: pinned endpoint "zz" is not in the pool');
  });
});

describe('hedge', () => {
  test('hedge: false needs no idempotent flag and never hedges, even with the pool hedging idempotent calls', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(ok('slow', 1000));
    const call = start(h.pool.execute(h.op, { hedge: false }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('slow');
    expect(h.eps.b!.calls).toBe(0);
    h.eps.a!.then(ok('slow', 1000));
    const idem = start(h.pool.execute(h.op, { hedge: false, idempotent: true }));
    await h.clock.advance(1000);
    await idem.promise;
    expect(idem.value).toBe('slow');
    expect(h.eps.b!.calls).toBe(0);
  });

  test('hedge options without idempotent: true are refused, naming what is missing', async () => {
    const h = harness(['a', 'b']);
    expect(await refusal(h.pool.execute(h.op, { hedge: { afterMs: 10 } }))).toBe(
      'INVALID_OPTIONS: hedge: expected a call marked idempotent: true, got an object',
    );
    expect(await refusal(h.pool.execute(h.op, { hedge: true, idempotent: false }))).toBe('INVALID_OPTIONS: hedge: expected a call marked idempotent: true, got true');
    expect(h.eps.a!.calls).toBe(0);
  });

  test.each([
    ["takes the pool's hedge options (afterMs 50 here)", { hedge: { afterMs: 50 } }, 50],
    ['on a pool with no hedge options hedges with the defaults (afterMs 100)', {}, 100],
  ] as const)('hedge: true %s', async (_, options, afterMs) => {
    const h = harness(['a', 'b'], options);
    h.eps.a!.then(ok('slow', 1000));
    h.eps.b!.then(ok('fast', 10));
    const call = start(h.pool.execute(h.op, { hedge: true, idempotent: true }));
    await h.clock.advance(afterMs - 1);
    expect(h.eps.b!.calls).toBe(0);
    await h.clock.advance(1);
    expect(h.eps.b!.calls).toBe(1);
    await h.clock.advance(10);
    await call.promise;
    expect(call.value).toBe('fast');
  });

  test('a call of its own hedge options hedges by them', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 500 } });
    h.eps.a!.then(ok('slow', 1000));
    h.eps.b!.then(ok('fast', 10));
    const call = start(h.pool.execute(h.op, { hedge: { afterMs: 20 }, idempotent: true }));
    await h.clock.advance(20);
    expect(h.eps.b!.calls).toBe(1);
    await h.clock.advance(10);
    await call.promise;
    expect(call.value).toBe('fast');
  });

  test('with pool hedge options, an idempotent call hedges by default; a call not marked idempotent does not', async () => {
    const h = harness(['a', 'b'], { hedge: { afterMs: 50 } });
    h.eps.a!.then(ok('slow', 1000));
    h.eps.b!.then(ok('fast', 10));
    const idem = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(60);
    await idem.promise;
    expect(idem.value).toBe('fast');
    await h.clock.advance(1000);
    const calls = h.eps.b!.calls;
    h.eps.a!.then(ok('slow', 1000));
    const plain = start(h.pool.execute(h.op, { deadlineMs: 5000 }));
    await h.clock.advance(1000);
    await plain.promise;
    expect(plain.value).toBe('slow');
    expect(h.eps.b!.calls).toBe(calls);
    h.eps.a!.then(ok('slow', 1000));
    const notIdem = start(h.pool.execute(h.op, { idempotent: false }));
    await h.clock.advance(1000);
    await notIdem.promise;
    expect(notIdem.value).toBe('slow');
    expect(h.eps.b!.calls).toBe(calls);
  });

  test('a pool without hedge options does not hedge an idempotent call', async () => {
    const h = harness(['a', 'b']);
    h.eps.a!.then(ok('slow', 1000));
    const call = start(h.pool.execute(h.op, { idempotent: true }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('slow');
    expect(h.eps.b!.calls).toBe(0);
  });
});

describe('exclude', () => {
  test('excluded endpoints are never tried, also when the rest fail', async () => {
    const h = harness(['a', 'b', 'c'], { maxAttempts: 5 });
    h.eps.c!.fallback = { fail: 'transient' };
    const call = start(h.pool.execute(h.op, { exclude: ['a', 'b'] }));
    await h.clock.advance(60_000);
    await call.promise;
    expect(isPoolError(call.error)).toBe(true);
    expect([h.eps.a!.calls, h.eps.b!.calls]).toEqual([0, 0]);
    expect(h.eps.c!.calls).toBeGreaterThan(0);
  });
});
