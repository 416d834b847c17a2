/**
 * `executeAs` (internal, for the adapters): `execute` on the default plan whose promise
 * rejects with a mapping of the `PoolError`, while events and metrics still see the
 * `PoolError` (issue 16: one promise fewer per request in flight than `.then(undefined, map)`).
 */
import { describe, expect, test } from 'vitest';
import { isPoolError, Pool, type PoolEvent } from '../src/index.js';
import { executeAs } from '../src/pool.js';
import { TAKES_ATTEMPT, type Classifier } from '../src/base/classify.js';

const boom = (): Promise<never> => Promise.reject(new Error('node said no'));

function pool(events: PoolEvent[]): Pool<number> {
  return new Pool<number>({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'permanent', onEvent: (e) => events.push(e) });
}

describe('executeAs', () => {
  test('resolves like execute', async () => {
    await expect(executeAs(pool([]), async () => 42, () => 'mapped')).resolves.toBe(42);
  });

  test('rejects with the mapping of the PoolError; call-failed still carries the PoolError', async () => {
    const events: PoolEvent[] = [];
    const seen: unknown[] = [];
    const rejected = await executeAs(pool(events), boom, (e) => (seen.push(e), (e as Error).cause)).catch((e: unknown) => e);
    expect(rejected).toEqual(new Error('node said no'));
    expect(isPoolError(seen[0]) && seen[0].code).toBe('PERMANENT');
    const failed = events.find((e) => e.type === 'call-failed');
    expect(failed !== undefined && failed.type === 'call-failed' && isPoolError(failed.error)).toBe(true);
  });

  test('a mapping that throws rejects with what it threw', async () => {
    const thrown = new Error('from the mapping');
    await expect(
      executeAs(pool([]), boom, () => {
        throw thrown;
      }),
    ).rejects.toBe(thrown);
  });

  test('a bad operation is mapped too', async () => {
    await expect(executeAs(pool([]), 'nope' as never, (e) => ({ mapped: isPoolError(e) && e.code }))).rejects.toEqual({ mapped: 'INVALID_OPTIONS' });
  });

  test('a tag rides on the call: its attempts read it, a TAKES_ATTEMPT classifier gets it, a plain classifier gets the error alone', async () => {
    const tag = { method: 'm' };
    const seenByOp: unknown[] = [];
    const aware: unknown[][] = [];
    const plain: unknown[][] = [];
    const awareClassify = ((...args: unknown[]) => (aware.push(args), 'transient')) as Classifier & { [TAKES_ATTEMPT]?: true };
    awareClassify[TAKES_ATTEMPT] = true;
    const op = (_c: number, ctx: unknown) => (seenByOp.push((ctx as { tag: unknown }).tag), boom());
    const a = new Pool<number>({ endpoints: [{ name: 'a', conn: 1 }, { name: 'b', conn: 2 }], classify: awareClassify, maxAttempts: 2, backoff: { initialMs: 0, maxMs: 0 } });
    await executeAs(a, op, (e) => e, tag).catch(() => undefined);
    expect(seenByOp).toEqual([tag, tag]);
    expect(aware.map((args) => [args.length, (args[1] as { tag: unknown; endpoint: string }).tag, (args[1] as { endpoint: string }).endpoint])).toEqual([[2, tag, 'a'], [2, tag, 'b']]);
    const b = new Pool<number>({ endpoints: [{ name: 'a', conn: 1 }], classify: (...args: unknown[]) => (plain.push(args), 'permanent') });
    await executeAs(b, op, (e) => e, tag).catch(() => undefined);
    expect(plain.map((args) => args.length)).toEqual([1]);
    await Promise.all([a.close(), b.close()]);
  });

  test('execute itself is unchanged beside it', async () => {
    const p = pool([]);
    await executeAs(p, boom, () => 'mapped').catch(() => undefined);
    await expect(p.execute(boom)).rejects.toSatisfy(isPoolError);
  });
});
