/**
 * Attempt signals that never come back free (src/base/signals.ts): `fetch` keeps its abort
 * listener on the signal until its request is garbage-collected, so tracking listeners for
 * reuse is wasted work there. After 16 controllers in a row came back unusable, the next
 * 256 are plain ones (no tracking), then tracking is tried again; one reuse resets the count.
 * Own file: the counters are module state.
 */
import { describe, expect, test } from 'vitest';
import { Pool } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { reusesSignals } from '../src/base/signals.js';

const tracked = (s: AbortSignal): boolean => Object.hasOwn(s, 'addEventListener');
const keepsListener = async (_c: number, ctx: { signal: AbortSignal }) => (ctx.signal.addEventListener('abort', () => undefined, { once: true }), ctx.signal);
const leavesNothing = async (_c: number, ctx: { signal: AbortSignal }) => ctx.signal;

describe('attempt signals that are never free again', () => {
  // Tracking is reuse's: where the runtime hides what reuse must check, every controller is plain (test/signals.test.ts).
  test.skipIf(!reusesSignals())('16 unusable in a row: 256 plain controllers, then tracking again; a reuse in between resets the count', async () => {
    const p = new Pool<number>({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', clock: new FakeClock(), maxAttempts: 1 });
    const seen: boolean[] = [];
    // 15 unusable, then one that is reused: the count starts again.
    for (let i = 0; i < 15; i++) seen.push(tracked(await p.execute(keepsListener)));
    const free = await p.execute(leavesNothing);
    expect(await p.execute(leavesNothing)).toBe(free);
    for (let i = 0; i < 15; i++) seen.push(tracked(await p.execute(keepsListener)));
    expect(seen.every(Boolean)).toBe(true);
    // Now 17 in a row (the 16th miss is found when the 17th call asks for a controller).
    for (let i = 0; i < 2; i++) expect(tracked(await p.execute(keepsListener))).toBe(true);
    const plain: boolean[] = [];
    for (let i = 0; i < 256; i++) plain.push(tracked(await p.execute(keepsListener)));
    expect(plain.filter(Boolean)).toHaveLength(0);
    expect(tracked(await p.execute(keepsListener))).toBe(true);
    await p.close();
  });

  test('a plain controller still aborts its attempt and fires its listeners', async () => {
    const clock = new FakeClock();
    const p = new Pool<number>({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', clock, maxAttempts: 1, attemptTimeoutMs: 100 });
    for (let i = 0; i < 17; i++) await p.execute(keepsListener);
    let fired = 0;
    let signal: AbortSignal | undefined;
    const call = p.execute(
      (_c, ctx) =>
        new Promise<never>(() => {
          signal = ctx.signal;
          ctx.signal.addEventListener('abort', () => fired++);
        }),
    );
    const settled = call.catch((e: unknown) => e);
    await clock.advance(100);
    await settled;
    expect(tracked(signal!)).toBe(false);
    expect(signal!.aborted).toBe(true);
    expect(fired).toBe(1);
    await p.close();
  });
});
