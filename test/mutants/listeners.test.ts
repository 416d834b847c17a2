/**
 * Twenty-seventh session, mutation run of `src/base/events.ts`: the pool's subscribers
 * (`onEvent`, `pool.on`). A model check: generated subscriptions for one type or all,
 * unsubscriptions (some twice), listeners that throw or reject, and events, against a plain
 * list: every subscription is called once per matching event, those for all types first, each
 * group in subscription order; nobody listening means no listener function at all.
 */
import { describe, expect, test } from 'vitest';
import { Listeners, deliver, type PoolEvent, type PoolEventType } from '../../src/base/events.js';
import { seeded } from '../helpers/prng.js';

const TYPES: PoolEventType[] = ['attempt-start', 'hedge', 'panic'];
const event = (type: PoolEventType) => ({ type }) as unknown as PoolEvent;

describe('the pool’s subscribers', () => {
  test('generated subscriptions, unsubscriptions and events agree with a plain list', async () => {
    for (let run = 0; run < 500; run++) {
      const rand = seeded(2026120720 + run);
      const calls: string[] = [];
      let changes = 0;
      let current: ((e: PoolEvent) => void) | undefined;
      const withInitial = rand() < 0.3;
      const model: { id: string; type: string; live: boolean }[] = withInitial ? [{ id: 'init', type: '*', live: true }] : [];
      const listeners = new Listeners(withInitial ? (e) => void calls.push(`init:${e.type}`) : undefined, (c) => (changes++, (current = c)));
      current = listeners.current;
      const offs: (() => void)[] = [];
      for (let step = 0; step < 30; step++) {
        const r = rand();
        if (r < 0.35) {
          const id = `s${step}`;
          const type = rand() < 0.4 ? '*' : TYPES[Math.floor(rand() * TYPES.length)]!;
          const behaviour = Math.floor(rand() * 3);
          const fn = (e: PoolEvent): unknown => {
            calls.push(`${id}:${e.type}`);
            if (behaviour === 1) throw new Error('listener');
            if (behaviour === 2) return Promise.reject(new Error('async listener'));
            return undefined;
          };
          model.push({ id, type, live: true });
          const off = listeners.add(type as PoolEventType | '*', fn as (e: PoolEvent) => void);
          const entry = model.at(-1)!;
          offs.push(() => {
            off();
            entry.live = false;
          });
        } else if (r < 0.55 && offs.length > 0) {
          offs[Math.floor(rand() * offs.length)]!();
        } else {
          const type = TYPES[Math.floor(rand() * TYPES.length)]!;
          const before = calls.length;
          const cur = listeners.current;
          expect(cur).toBe(current);
          const live = model.filter((m) => m.live);
          if (live.length === 0) expect(cur, `run ${run}`).toBeUndefined();
          if (cur !== undefined) deliver(cur, event(type)); // as the pool does (state.ts emit)
          const expected = [...live.filter((m) => m.type === '*'), ...live.filter((m) => m.type === type)].map((m) => `${m.id}:${type}`);
          expect(calls.slice(before), `run ${run} step ${step}`).toEqual(expected);
        }
      }
      expect(changes).toBeGreaterThanOrEqual(0);
    }
    // Rejections from async listeners were handled (an unhandled one would fail the run).
    await new Promise((r) => setTimeout(r, 0));
  });

  test('one subscriber for all types is called directly; a typed one only for its type', () => {
    const seen: string[] = [];
    const l = new Listeners(undefined, () => undefined);
    const off = l.add('*', (e) => void seen.push(`all:${e.type}`));
    l.current!(event('hedge'));
    l.add('panic', (e) => void seen.push(`panic:${e.type}`));
    l.current!(event('hedge'));
    l.current!(event('panic'));
    off();
    off();
    l.current!(event('panic'));
    expect(seen).toEqual(['all:hedge', 'all:hedge', 'all:panic', 'panic:panic', 'panic:panic']);
  });

  test('an unsubscribe is disposable where the runtime has Symbol.dispose', () => {
    const l = new Listeners(undefined, () => undefined);
    const off = l.add('*', () => undefined);
    const dispose = (Symbol as { dispose?: symbol }).dispose;
    if (typeof dispose === 'symbol') {
      (off as unknown as Record<symbol, () => void>)[dispose]!();
      expect(l.current).toBeUndefined();
    }
  });

  test('deliver swallows a throw and a rejection', async () => {
    const rejections: unknown[] = [];
    const onUnhandled = (r: unknown) => rejections.push(r);
    process.on('unhandledRejection', onUnhandled);
    try {
      expect(() => deliver(() => { throw new Error('x'); }, event('hedge'))).not.toThrow();
      deliver((() => Promise.reject(new Error('y'))) as never, event('hedge'));
      deliver((() => ({ then: (_: unknown, onRejected: (e: unknown) => void) => onRejected(new Error('z')) })) as never, event('hedge'));
      await new Promise((r) => setTimeout(r, 10));
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
