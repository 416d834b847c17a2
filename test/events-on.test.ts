import { describe, expect, expectTypeOf, test } from 'vitest';
import { Pool, type PoolEvent } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

function pool(onEvent?: (e: PoolEvent) => void): Pool<string> {
  return new Pool<string>({
    endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }],
    classify: () => 'transient',
    clock: new FakeClock(),
    ...(onEvent === undefined ? {} : { onEvent }),
  });
}

const failOnA = (conn: string) => (conn === 'a' ? Promise.reject(new Error('down')) : Promise.resolve(conn));

describe('pool.on()', () => {
  test('typed per event type, several per type, all with * or no type; onEvent still first', async () => {
    const seen: string[] = [];
    const p = pool((e) => seen.push(`onEvent:${e.type}`));
    p.on('attempt-failure', (e) => {
      expectTypeOf(e.errorClass).toEqualTypeOf<'transient' | 'permanent' | 'rate-limited' | 'retry-narrower' | 'unsupported' | 'unauthorized' | 'timeout'>();
      seen.push(`failure1:${e.endpoint}:${e.errorClass}`);
    });
    p.on('attempt-failure', (e) => seen.push(`failure2:${e.endpoint}`));
    p.on('*', (e) => seen.push(`star:${e.type}`));
    p.on((e) => seen.push(`all:${e.type}`));
    await p.execute(failOnA);
    expect(seen).toEqual([
      'onEvent:attempt-start',
      'star:attempt-start',
      'all:attempt-start',
      'onEvent:attempt-failure',
      'star:attempt-failure',
      'all:attempt-failure',
      'failure1:a:transient',
      'failure2:a',
      'onEvent:attempt-start',
      'star:attempt-start',
      'all:attempt-start',
      'onEvent:attempt-success',
      'star:attempt-success',
      'all:attempt-success',
    ]);
  });

  test('unsubscribe stops delivery, is idempotent, and is a Disposable', async () => {
    const p = pool();
    const got: string[] = [];
    const off = p.on('attempt-start', (e) => got.push(e.endpoint));
    const other = p.on('attempt-start', (e) => got.push(`other:${e.endpoint}`));
    await p.execute((c) => Promise.resolve(c));
    off();
    off();
    await p.execute((c) => Promise.resolve(c));
    expect(got).toEqual(['a', 'other:a', 'other:a']);
    expect(typeof other[Symbol.dispose]).toBe('function');
    {
      using _sub = p.on('attempt-start', (e) => got.push(`scoped:${e.endpoint}`));
      await p.execute((c) => Promise.resolve(c));
    }
    other[Symbol.dispose]();
    await p.execute((c) => Promise.resolve(c));
    expect(got).toEqual(['a', 'other:a', 'other:a', 'other:a', 'scoped:a']);
  });

  test('a listener that subscribes or unsubscribes during a delivery changes the next event’s listeners, not this one’s (fortieth session: a typed listener added or removed by a * listener used to get, or miss, the event at hand)', async () => {
    for (const setup of ['onEvent', 'star'] as const) {
      const got: string[] = [];
      let added = false;
      let off: (() => void) | undefined;
      const act = (e: PoolEvent) => {
        if (e.type !== 'attempt-start' || added) return;
        added = true;
        p.on('attempt-start', (x) => got.push(`new:${x.endpoint}`));
        off?.();
      };
      const p = pool(setup === 'onEvent' ? act : undefined);
      if (setup === 'star') p.on('*', act);
      off = p.on('attempt-start', (x) => got.push(`old:${x.endpoint}`));
      await p.execute(failOnA);
      // a's attempt-start: the old listener still hears it, the new one does not; b's: the other way round.
      expect([setup, ...got]).toEqual([setup, 'old:a', 'new:b']);
    }
  });

  test('a listener that throws is isolated; one added late gets success durations', async () => {
    const p = pool();
    p.on('attempt-start', () => {
      throw new Error('broken listener');
    });
    const durations: number[] = [];
    p.on('attempt-success', (e) => durations.push(e.durationMs));
    const clock = p.clock as FakeClock;
    const call = p.execute((c) => new Promise<string>((resolve) => clock.setTimeout(() => resolve(c), 40)));
    await clock.advance(40);
    await expect(call).resolves.toBe('a');
    expect(durations).toEqual([40]);
  });

  test('bad arguments are INVALID_OPTIONS', () => {
    const p = pool();
    expect(() => p.on('attempt-strat' as never, () => undefined)).toThrow(/type: expected an event type/);
    expect(() => p.on('attempt-start', 3 as never)).toThrow(/listener: expected a function/);
  });
});
