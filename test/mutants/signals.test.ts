/**
 * Twenty-seventh session, mutation run of `src/base/signals.ts`: a reusable attempt signal
 * keeps its listeners in a list of its own until it aborts (then registers them natively);
 * to whoever holds it, it must behave as a plain `AbortSignal` does. A differential check:
 * generated sequences of `addEventListener` / `removeEventListener` (options as a boolean,
 * an object with `capture` or `once`, nothing; functions and `handleEvent` objects; other
 * event types), then an abort, then more of the same, on an attempt signal and on a native
 * one: the same listeners fire, in the same order, the same number of times.
 */
import { describe, expect, test } from 'vitest';
import { AttemptSignal } from '../../src/base/signals.js';
import { seeded } from '../helpers/prng.js';

type Op = { kind: 'add' | 'remove'; type: string; listener: number; options: unknown };

function generate(rand: () => number, n: number): Op[] {
  const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  // No `once` and no `null` here: Node's EventTarget (20 and 26) counts a listener added with
  // `null` options, or with `once` and again without, as a second registration, where the
  // standard (and Bun, Deno, the attempt signal) keeps one; `once` has a test of its own below.
  const optionsPool = [undefined, true, false, { capture: true }, { capture: false }, {}];
  // Nor a boolean to `removeEventListener`: Node 20 ignores it there (`remove(f, true)` removes
  // `f`'s non-capture registration); Node 26 follows the standard. Removes spell `capture` as an object.
  const removePool = [undefined, { capture: true }, { capture: false }, {}];
  return Array.from({ length: n }, () => {
    const kind = rand() < 0.65 ? 'add' : 'remove';
    return { kind, type: pick(['abort', 'abort', 'abort', 'x']), listener: Math.floor(rand() * 4), options: pick(kind === 'add' ? optionsPool : removePool) };
  });
}

/** Runs `before`, aborts, runs `after`; returns which listeners fired, in order. */
function play(signal: AbortSignal, abort: () => void, before: Op[], after: Op[]): string[] {
  const fired: string[] = [];
  const listeners: EventListenerOrEventListenerObject[] = [
    () => fired.push('f0'),
    () => fired.push('f1'),
    { handleEvent: () => fired.push('h2') },
    { handleEvent: () => fired.push('h3') },
  ];
  const apply = (ops: Op[]): void => {
    for (const op of ops) {
      const l = listeners[op.listener]!;
      if (op.kind === 'add') signal.addEventListener(op.type, l, op.options as AddEventListenerOptions);
      else signal.removeEventListener(op.type, l, op.options as EventListenerOptions);
    }
  };
  apply(before);
  abort();
  fired.push('|');
  apply(after);
  signal.dispatchEvent(new Event('x'));
  return fired;
}

describe('an attempt signal behaves as an AbortSignal to whoever holds it', () => {
  test('generated listener sequences: the same listeners fire, in the same order, as on a native signal', () => {
    for (let run = 0; run < 2_000; run++) {
      const rand = seeded(2026120700 + run);
      const before = generate(rand, 1 + Math.floor(rand() * 12));
      const after = generate(rand, Math.floor(rand() * 4));
      const native = new AbortController();
      const expected = play(native.signal, () => native.abort(new Error('x')), before, after);
      const ours = new AttemptSignal();
      const got = play(ours.signal, () => ours.abort(new Error('x')), before, after);
      expect(got, `run ${run}: ${JSON.stringify(before)} | ${JSON.stringify(after)}`).toEqual(expected);
    }
  });

  test('its methods borrowed onto another target act on that target, natively', () => {
    const ours = new AttemptSignal();
    const target = new EventTarget();
    let fired = 0;
    const listener = () => fired++;
    ours.signal.addEventListener.call(target, 'x', listener);
    target.dispatchEvent(new Event('x'));
    ours.signal.removeEventListener.call(target, 'x', listener);
    target.dispatchEvent(new Event('x'));
    expect(fired).toBe(1);
  });

  test('a null listener is ignored, before and after the abort, as natively', () => {
    // The DOM's signature allows null; Node's types do not.
    const nothing = null as unknown as EventListener;
    const ours = new AttemptSignal();
    expect(() => ours.signal.addEventListener('abort', nothing)).not.toThrow();
    expect(() => ours.signal.removeEventListener('abort', nothing)).not.toThrow();
    ours.abort(new Error('x'));
    expect(() => ours.signal.addEventListener('abort', nothing)).not.toThrow();
    expect(ours.signal.aborted).toBe(true);
  });

  test('a once listener fires once at the abort; one removed before it never fires', () => {
    for (const make of [() => new AttemptSignal(), () => new AbortController()]) {
      const c = make();
      const fired: string[] = [];
      const a = () => fired.push('a');
      const b = () => fired.push('b');
      c.signal.addEventListener('abort', a, { once: true });
      c.signal.addEventListener('abort', b, { once: true });
      c.signal.removeEventListener('abort', b);
      c.abort(new Error('x'));
      c.signal.dispatchEvent(new Event('abort'));
      expect(fired).toEqual(['a']);
    }
  });
});
