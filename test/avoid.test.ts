/**
 * `execute(op, { avoid })`: endpoints a call uses only when no other can serve it now
 * (call/routing.ts `selectAvoiding`).
 */
import { describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { PoolCore } from '../src/pool-core.js';
import { patient } from '../src/call/routing.js';
import { fail, hang, harness, ok, start } from './support.js';

const avoidB = (name: string): boolean => name === 'b';

describe('avoid', () => {
  test('an avoided endpoint is passed over while another can serve, whatever the order', async () => {
    const h = harness(['b', 'a', 'c']);
    for (let i = 0; i < 3; i++) await h.pool.execute(h.op, { avoid: avoidB });
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([3, 0, 0]);
    await h.pool.execute(h.op);
    expect(h.eps.b!.calls).toBe(1); // the next call without avoid takes the first in order
  });

  test.each(['ordered', 'round-robin', 'random', 'health', 'latency'] as const)('with the %s strategy, 40 calls avoiding b never reach it while a and c serve', async (strategy) => {
    let r = 0;
    const h = harness(['b', 'a', 'c'], { strategy, random: () => (r = (r * 7 + 3) % 10) / 10 });
    for (let i = 0; i < 40; i++) await h.pool.execute(h.op, { avoid: avoidB });
    expect(h.eps.b!.calls).toBe(0);
    expect(h.eps.a!.calls + h.eps.c!.calls).toBe(40);
  });

  test('it is asked at every selection: a retry sees its answer now', async () => {
    const h = harness(['a', 'b', 'c']);
    h.eps.a!.then(fail('transient', 10));
    let out = 'b';
    const asked: string[] = [];
    const call = start(
      h.pool.execute(h.op, {
        avoid: (n) => {
          asked.push(n);
          return n === out;
        },
      }),
    );
    await h.clock.advance(0);
    out = 'c'; // before the retry: now c is avoided and b is not
    await h.clock.advance(10);
    await call.promise;
    expect(call.value).toBe('b');
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([1, 1, 0]);
    expect(asked).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
  });

  test('the call moves on to an avoided endpoint when the others failed, before retrying them and without backoff', async () => {
    const h = harness(['a', 'b', 'c'], { maxAttempts: 3 });
    h.eps.a!.then(fail('transient'));
    h.eps.c!.then(fail('transient'));
    const call = start(h.pool.execute(h.op, { avoid: avoidB }));
    await h.clock.advance(0);
    await call.promise;
    expect(call.value).toBe('b');
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([1, 1, 1]);
    expect(h.eps.b!.startedAt[0]).toBe(h.eps.a!.startedAt[0]); // no backoff before it
  });

  test('an avoided endpoint serves when the others are excluded or their breakers open', async () => {
    const h = harness(['a', 'b', 'c'], { breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.a!.then(fail('transient'));
    await h.pool.execute(h.op); // a opens, b serves
    const v = await h.pool.execute(h.op, { avoid: avoidB, exclude: ['c'] });
    expect(v).toBe('b');
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([1, 2, 0]);
  });

  test('an avoided endpoint serves now rather than a wait for a rate-limited one', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1 } }, 'b']);
    await h.pool.execute(h.op, { avoid: avoidB });
    const second = start(h.pool.execute(h.op, { avoid: avoidB }));
    await h.clock.advance(0);
    expect(second.value).toBe('b');
    expect([h.eps.a!.calls, h.eps.b!.calls]).toEqual([1, 1]);
  });

  test('a patient avoid (head routing\'s) waits for the turn of one it does not avoid when it comes before the deadline, and not past it', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1 } }, 'b']);
    await h.pool.execute(h.op, { avoid: avoidB });
    const second = start(h.pool.execute(h.op, { avoid: patient((n: string) => n === 'b') }));
    await h.clock.advance(0);
    expect(second.value).toBeUndefined(); // waiting for a's next token, b free
    await h.clock.advance(1000);
    expect(second.value).toBe('a');
    const third = start(h.pool.execute(h.op, { avoid: patient((n: string) => n === 'b'), deadlineMs: 500 }));
    await h.clock.advance(0);
    expect(third.value).toBe('b'); // a's turn comes after the deadline
    expect([h.eps.a!.calls, h.eps.b!.calls]).toEqual([2, 1]);
  });

  test('while the others wait for a turn, a retry on an avoided endpoint it tried comes after its backoff, as it would with nothing avoided', async () => {
    const h = harness([{ name: 'a', rateLimit: { perSecond: 1 } }, 'b']);
    await h.pool.execute(h.op); // a's token is spent for a second
    h.eps.b!.then(fail('transient'));
    const call = start(h.pool.execute(h.op, { avoid: avoidB }));
    await h.clock.advance(100); // b failed at 0; the backoff is 100 ms, a's next token 1,000 ms away
    await call.promise;
    expect(call.value).toBe('b');
    expect(h.eps.b!.startedAt.map((t) => t - h.eps.b!.startedAt[0]!)).toEqual([0, 100]);
    expect(h.eps.a!.calls).toBe(1);
  });

  test('long lists: with ten excluded and fifteen avoided (five of them excluded too) of thirty, the call goes to the first neither names', async () => {
    const names = Array.from({ length: 30 }, (_, i) => `e${i}`);
    const h = harness(names);
    const exclude = names.slice(0, 10);
    expect(await h.pool.execute(h.op, { exclude, avoid: (n) => names.indexOf(n) >= 5 && names.indexOf(n) < 20 })).toBe('e20');
    // Every avoided one excluded already: as if nothing were avoided.
    expect(await h.pool.execute(h.op, { exclude, avoid: (n) => names.indexOf(n) < 10 })).toBe('e10');
  });

  test('when every endpoint is avoided the call is served as if none were', async () => {
    const h = harness(['a', 'b']);
    expect(await h.pool.execute(h.op, { avoid: () => true })).toBe('a');
  });

  test('NO_ENDPOINT when neither the others nor the avoided ones can serve', async () => {
    const h = harness(['a', 'b'], { breaker: { threshold: 1, cooldownMs: 60_000 } });
    h.eps.a!.then(fail('transient'));
    h.eps.b!.then(fail('transient'));
    await h.pool.execute(h.op).catch(() => undefined);
    const err = await h.pool.execute(h.op, { avoid: avoidB }).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('NO_ENDPOINT');
  });

  test('a pinned call goes to its endpoint even when avoid names it', async () => {
    const h = harness(['a', 'b']);
    expect(await h.pool.execute(h.op, { pin: 'b', avoid: avoidB })).toBe('b');
  });

  test('a hedge never goes to an avoided endpoint', async () => {
    const h = harness(['a', 'b', 'c'], { hedge: { afterMs: 100, maxHedges: 2 } });
    h.eps.a!.then(ok('a', 1000));
    const call = start(h.pool.execute(h.op, { idempotent: true, avoid: avoidB }));
    await h.clock.advance(0);
    await h.clock.advance(100);
    expect([h.eps.a!.calls, h.eps.b!.calls, h.eps.c!.calls]).toEqual([1, 0, 1]);
    await h.clock.advance(100);
    expect(h.eps.b!.calls).toBe(0); // a second hedge finds only b: none
    await call.promise;
    expect(call.value).toBe('c');
  });

  test('what avoid throws fails the call with INVALID_OPTIONS, the throw as cause; a hedge it throws for is not sent', async () => {
    const h = harness(['a', 'b']);
    const boom = new Error('boom');
    const err = await h.pool.execute(h.op, {
      avoid: () => {
        throw boom;
      },
    }).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('INVALID_OPTIONS');
    expect((err as Error).message).toBe("the call's avoid threw (see cause)");
    expect((err as Error).cause).toBe(boom);
    expect(h.eps.a!.calls + h.eps.b!.calls).toBe(0);

    const g = harness(['a', 'b'], { hedge: { afterMs: 100 } });
    g.eps.a!.then(ok('a', 500));
    const t0 = g.clock.now();
    const call = start(
      g.pool.execute(g.op, {
        idempotent: true,
        avoid: () => {
          if (g.clock.now() > t0) throw boom; // at the hedge's selection, not the first
          return false;
        },
      }),
    );
    await g.clock.advance(600);
    await call.promise;
    expect(call.value).toBe('a');
    expect(g.eps.b!.calls).toBe(0);
  });

  test('avoid must be a function; a pool built without call routing refuses it', async () => {
    const h = harness(['a']);
    const err = await h.pool.execute(h.op, { avoid: ['a'] as never }).catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('INVALID_OPTIONS');
    expect((err as Error).message).toMatch(/^avoid: expected a function/);
    const core = new PoolCore({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'permanent' }, []);
    const refused = await core.execute(async () => 1, { avoid: () => false }).catch((e: unknown) => e);
    expect(isPoolError(refused) && refused.code).toBe('INVALID_OPTIONS');
    expect((refused as Error).message).toMatch(/^avoid needs the routing feature/);
    await core.close();
  });

  test('once every endpoint is tried, a retry prefers the others again', async () => {
    const h = harness(['b', 'a'], { attemptTimeoutMs: 100, maxAttempts: 3 });
    h.eps.a!.then(fail('transient'));
    h.eps.b!.fallback = hang(true);
    const call = start(h.pool.execute(h.op, { avoid: avoidB }));
    await h.clock.advance(1000);
    await call.promise;
    expect(call.value).toBe('a');
    expect([h.eps.a!.calls, h.eps.b!.calls]).toEqual([2, 1]);
  });
});
