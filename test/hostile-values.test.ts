/**
 * Values of the user's that throw when the pool merely looks at them: a `then` getter, a revoked
 * Proxy (its every trap throws), a classifier's answer whose getter throws, a signal-like object
 * whose listener methods throw, and a thenable that calls back inside `then`. Before the fiftieth
 * session each let a call reject with a raw error, leak its in-flight slot (so `close()` never
 * resolved), hang past its deadline or crash the process with an unhandled rejection (found by
 * trying the library as a new user would).
 */
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type ClassifyResult } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

const code = (e: unknown): string | undefined => (isPoolError(e) ? e.code : undefined);

function revoked(): object {
  const r = Proxy.revocable({}, {});
  r.revoke();
  return r.proxy;
}

const thenThrows = (): object =>
  Object.defineProperty({}, 'then', {
    get() {
      throw new Error('then getter');
    },
  });

function pool(names: string[], options: Record<string, unknown> = {}) {
  const clock = new FakeClock();
  const p = new Pool<string>({ endpoints: names.map((name) => ({ name, conn: name })), classify: () => 'transient', clock, ...options });
  return { clock, pool: p };
}

/** Settles `promise` on the fake clock; fails the test on an unhandled rejection meanwhile. */
async function settled<T>(clock: FakeClock, promise: Promise<T>, ms = 60_000): Promise<{ value?: T; error?: unknown }> {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown): void => void unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  const out: { value?: T; error?: unknown; done?: true } = {};
  promise.then(
    (value) => Object.assign(out, { value, done: true }),
    (error: unknown) => Object.assign(out, { error, done: true }),
  );
  try {
    for (let i = 0; i < 100 && out.done !== true; i++) await clock.advance(ms / 100);
    await new Promise((r) => setTimeout(r, 0)); // a real turn: unhandled rejections are reported
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  expect(unhandled).toEqual([]);
  expect(out.done).toBe(true);
  return out;
}

describe('an operation answering with something that throws when looked at', () => {
  test.each<[string, () => unknown]>([
    ['an object whose then getter throws', thenThrows],
    ['a revoked Proxy', revoked],
  ])('%s: the attempt fails PERMANENT (the throw as cause), its slot is freed, close() resolves', async (_, value) => {
    const { clock, pool: p } = pool(['a'], { endpoints: [{ name: 'a', conn: 'a', maxInFlight: 1 }] });
    const r = await settled(clock, p.execute(() => value() as Promise<string>));
    expect(code(r.error)).toBe('PERMANENT');
    expect(p.stats()[0]!.inFlight).toBe(0);
    expect(p.activeCalls).toBe(0);
    expect((await settled(clock, p.execute(async () => 'ok'))).value).toBe('ok'); // the slot is free
    await settled(clock, p.close());
  });

  test('the same on a retry after a backoff and on a failover: no crash, no unhandled rejection', async () => {
    const { clock, pool: p } = pool(['a', 'b']);
    let n = 0;
    const r = await settled(
      clock,
      p.execute(() => {
        if (n++ === 0) return Promise.reject(new Error('busy'));
        return thenThrows() as Promise<string>;
      }),
    );
    expect(code(r.error)).toBe('PERMANENT');
    expect(n).toBe(2);
    expect(p.activeCalls).toBe(0);
  });

  test('an operation that throws a revoked Proxy synchronously: PERMANENT, the call ends', async () => {
    const { clock, pool: p } = pool(['a']);
    const r = await settled(
      clock,
      p.execute(() => {
        throw revoked();
      }),
    );
    expect(code(r.error)).toBe('PERMANENT');
    expect((r.error as Error).message).toMatch(/threw synchronously/);
    expect(p.activeCalls).toBe(0);
  });

  test('a thenable that rejects inside then(), over 1,500 endpoints: every endpoint is tried, no stack overflow', async () => {
    const names = Array.from({ length: 1_500 }, (_, i) => `e${i}`);
    const { clock, pool: p } = pool(names, { maxAttempts: names.length, deadlineMs: 600_000 });
    let ops = 0;
    const r = await settled(
      clock,
      p.execute(() => {
        ops++;
        return { then: (_ok: unknown, fail: (e: unknown) => void) => fail(new Error('no')) } as unknown as Promise<string>;
      }),
    );
    expect(code(r.error)).toBe('RETRIES_EXHAUSTED');
    expect(ops).toBe(names.length);
    expect(p.activeCalls).toBe(0);
  });
});

describe('a classifier whose answer or throw cannot be read', () => {
  const getterThrows = (): ClassifyResult =>
    ({
      class: 'rate-limited',
      get retryAfterMs(): number {
        throw new TypeError("Cannot read properties of undefined (reading 'get')");
      },
    }) as ClassifyResult;
  const classThrows = (): ClassifyResult =>
    Object.defineProperty({}, 'class', {
      get() {
        throw new Error('class getter');
      },
    }) as ClassifyResult;
  const throwsRevoked = (): ClassifyResult => {
    throw revoked();
  };
  const throwsBadName = (): ClassifyResult => {
    throw Object.defineProperty(new Error('x'), 'name', {
      get() {
        throw new Error('name getter');
      },
    });
  };
  test.each<[string, () => ClassifyResult, RegExp]>([
    ['a retry hint whose getter throws', getterThrows, /classify answered an object that threw when read/],
    ['a class whose getter throws', classThrows, /classify answered an object that threw when read/],
    ['a revoked Proxy as answer', revoked as () => ClassifyResult, /classify answered an object that threw when read/],
    ['a thrown revoked Proxy', throwsRevoked, /classify threw a value that threw when read/],
    ['a thrown Error whose name getter throws', throwsBadName, /classify threw a value that threw when read/],
  ])('%s: PERMANENT by its deadline, with a message that says so; no hint carried over; close() resolves', async (_, classify, message) => {
    const { clock, pool: p } = pool(['a', 'b'], { classify, deadlineMs: 300 });
    const r = await settled(clock, p.execute(() => Promise.reject(new Error('upstream'))));
    expect(code(r.error)).toBe('PERMANENT');
    expect((r.error as Error).message).toMatch(message);
    expect(p.stats().map((s) => s.cooldownRemainingMs)).toEqual([0, 0]);
    expect(p.activeCalls).toBe(0);
    await settled(clock, p.close());
  });
});

describe('a signal-like object whose listener methods throw', () => {
  const like = (add: () => void, remove: () => void): AbortSignal => ({ aborted: false, reason: undefined, addEventListener: add, removeEventListener: remove }) as unknown as AbortSignal;
  test('addEventListener throws: INVALID_OPTIONS with the throw as cause, nothing attempted, nothing left active', async () => {
    const { clock, pool: p } = pool(['a']);
    const boom = new Error('add');
    let ops = 0;
    const signal = like(() => {
      throw boom;
    }, () => undefined);
    const r = await settled(clock, p.execute(async () => (ops++, 'v'), { signal }));
    expect(code(r.error)).toBe('INVALID_OPTIONS');
    expect((r.error as Error).cause).toBe(boom);
    expect(ops).toBe(0);
    expect(p.activeCalls).toBe(0);
    await settled(clock, p.close());
  });

  test('removeEventListener throws: the call still resolves with its answer', async () => {
    const { clock, pool: p } = pool(['a']);
    const signal = like(() => undefined, () => {
      throw new Error('remove');
    });
    const r = await settled(clock, p.execute(async () => 'v', { signal }));
    expect(r.value).toBe('v');
    expect(p.activeCalls).toBe(0);
  });
});
