/**
 * Attempt signals are reused only when nothing registered by an earlier operation can
 * hear them fire (src/base/signals.ts), and reuse leaks nothing.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError } from '../src/index.js';
import { freeSignals, reusesSignals } from '../src/base/signals.js';
import { FakeClock } from '../src/testing/index.js';

function pool(clock = new FakeClock(), attemptTimeoutMs = 1_000) {
  return new Pool<number>({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient', clock, attemptTimeoutMs, maxAttempts: 1 });
}

/** Node's major version, or undefined on Bun and Deno (which run this file too). */
const nodeMajor = (globalThis as { Bun?: unknown; Deno?: unknown }).Bun === undefined && (globalThis as { Deno?: unknown }).Deno === undefined ? Number(process.versions.node.split('.')[0]) : undefined;
/** Reuse needs Node's internals to show what it must check (src/base/signals.ts `probe`): the tests of reuse itself run where they do. */
const reusing = describe.skipIf(!reusesSignals());

describe('where signals are reused', () => {
  test('on Node 20, 22 and 26 (checked); on Node 24, Bun and Deno (no visible record of what depends on a signal) every attempt gets its own', async () => {
    if (nodeMajor === 20 || nodeMajor === 22 || nodeMajor === 26) expect(reusesSignals()).toBe(true);
    if (nodeMajor === 24 || nodeMajor === undefined) expect(reusesSignals()).toBe(false);
    const p = pool();
    const seen: AbortSignal[] = [];
    for (let i = 0; i < 3; i++) await p.execute(async (_c, ctx) => void seen.push(ctx.signal));
    expect(new Set(seen).size).toBe(reusesSignals() ? 1 : 3);
  });
});

reusing('attempt signal reuse', () => {
  test('a signal nobody listens to is handed to the next attempt', async () => {
    const p = pool();
    const seen: AbortSignal[] = [];
    await p.execute(async (_c, ctx) => void seen.push(ctx.signal));
    await p.execute(async (_c, ctx) => void seen.push(ctx.signal));
    expect(seen[1]).toBe(seen[0]);
    expect(seen[1]!.aborted).toBe(false);
  });

  test('a listener added and removed (viem, AbortSignal.any helpers) leaves it reusable; the listener never fires later', async () => {
    const p = pool();
    let fired = 0;
    const onAbort = () => fired++;
    const first = await p.execute(async (_c, ctx) => {
      ctx.signal.addEventListener('abort', onAbort);
      ctx.signal.addEventListener('abort', onAbort); // a duplicate is one registration, as for EventTarget
      ctx.signal.removeEventListener('abort', onAbort);
      return ctx.signal;
    });
    const second = await p.execute(async (_c, ctx) => ctx.signal);
    expect(second).toBe(first);
    expect(fired).toBe(0);
  });

  test.each([
    ['a listener left registered', (s: AbortSignal) => s.addEventListener('abort', () => undefined)],
    ['a once listener left registered', (s: AbortSignal) => s.addEventListener('abort', () => undefined, { once: true })],
    ['onabort', (s: AbortSignal) => (s.onabort = () => undefined)],
    ['a listener added through EventTarget.prototype', (s: AbortSignal) => EventTarget.prototype.addEventListener.call(s, 'abort', () => undefined)],
    ['another target following it ({ signal })', (s: AbortSignal) => new EventTarget().addEventListener('x', () => undefined, { signal: s })],
    ['AbortSignal.any', (s: AbortSignal) => void AbortSignal.any([s])],
  ])('%s: the signal is never handed out again', async (_name, use) => {
    const p = pool();
    const first = await p.execute(async (_c, ctx) => (use(ctx.signal), ctx.signal));
    for (let i = 0; i < 3; i++) expect(await p.execute(async (_c, ctx) => ctx.signal)).not.toBe(first);
  });

  test('a listener added after the attempt ended (the signal kept past its operation) taints it', async () => {
    const p = pool();
    let kept: AbortSignal | undefined;
    await p.execute(async (_c, ctx) => void (kept = ctx.signal));
    kept!.addEventListener('abort', () => undefined);
    expect(await p.execute(async (_c, ctx) => ctx.signal)).not.toBe(kept);
  });

  test('a timed-out attempt aborts its signal, fires its listeners in order, and the signal is not reused', async () => {
    const clock = new FakeClock();
    const p = pool(clock, 100);
    const order: string[] = [];
    let signal: AbortSignal | undefined;
    const call = p.execute((_c, ctx) => {
      signal = ctx.signal;
      ctx.signal.addEventListener('abort', () => order.push('first'));
      ctx.signal.addEventListener('abort', { handleEvent: (e: Event) => order.push(`second:${e.type}`) });
      const removed = () => order.push('removed');
      ctx.signal.addEventListener('abort', removed);
      ctx.signal.removeEventListener('abort', removed);
      ctx.signal.addEventListener('abort', () => order.push('once'), { once: true });
      return new Promise(() => undefined);
    });
    const settled = call.catch((e: unknown) => e);
    await clock.advance(100);
    expect(isPoolError(await settled)).toBe(true);
    expect(signal!.aborted).toBe(true);
    expect(isPoolError(signal!.reason) && signal!.reason.code).toBe('ATTEMPT_TIMEOUT');
    expect(order).toEqual(['first', 'second:abort', 'once']);
    expect(await p.execute(async (_c, ctx) => ctx.signal)).not.toBe(signal);
  });

  test('a signal read after its attempt ended is never shared with a running attempt', async () => {
    const clock = new FakeClock();
    const p = pool(clock, 100);
    let ctxRef: { signal: AbortSignal } | undefined;
    await p.execute(async (_c, ctx) => void ((ctxRef = ctx), ctx.signal));
    const late = ctxRef!.signal;
    let running: AbortSignal | undefined;
    const call = p.execute((_c, ctx) => ((running = ctx.signal), new Promise(() => undefined))).catch(() => undefined);
    expect(running).not.toBe(late);
    await clock.advance(100);
    await call;
    expect(running!.aborted).toBe(true);
    expect(late.aborted).toBe(false);
  });

  test('1 M calls that add and remove a listener: listener count 0 on the reused signals, free list bounded, heap flat', async () => {
    const p = pool();
    const f = () => undefined;
    const signals = new Set<AbortSignal>();
    const op = async (_c: number, ctx: { signal: AbortSignal }) => {
      ctx.signal.addEventListener('abort', f);
      ctx.signal.removeEventListener('abort', f);
      signals.add(ctx.signal);
    };
    const run = async (n: number) => {
      for (let i = 0; i < n; i += 100) await Promise.all(Array.from({ length: 100 }, () => p.execute(op)));
    };
    await run(20_000);
    (globalThis as { gc?: () => void }).gc?.();
    const before = process.memoryUsage().heapUsed;
    await run(1_000_000);
    (globalThis as { gc?: () => void }).gc?.();
    const after = process.memoryUsage().heapUsed;
    // 100 callers at once: about 100 controllers in all, each reused ~10,000 times.
    expect(signals.size).toBeLessThanOrEqual(200);
    for (const s of signals) expect(getEventListeners(s, 'abort')).toHaveLength(0);
    expect(freeSignals()).toBeLessThanOrEqual(256);
    // Without --expose-gc the figure includes garbage; it still shows no per-call growth.
    expect(after - before).toBeLessThan(32 * 1024 * 1024);
  }, 120_000);
});
