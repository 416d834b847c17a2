import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type PoolOptions } from '../src/index.js';

const base = (): PoolOptions<string> => ({ endpoints: [{ name: 'a', conn: 'x' }], classify: () => 'transient' });

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(isPoolError(e) && e.code).toBe('INVALID_OPTIONS');
    return (e as Error).message;
  }
  throw new Error('expected the constructor to throw');
}

describe('constructor validation', () => {
  test.each<[string, (o: Record<string, unknown>) => void, string]>([
    ['no endpoints', (o) => (o.endpoints = []), 'endpoints: expected a non-empty array, got an array of 0'],
    ['endpoints not an array', (o) => (o.endpoints = 'a'), 'endpoints: expected a non-empty array, got "a"'],
    ['empty name', (o) => (o.endpoints = [{ name: '', conn: 1 }]), 'endpoints[0].name: expected a non-empty string, got ""'],
    ['missing name', (o) => (o.endpoints = [{ conn: 1 }]), 'endpoints[0].name: expected a non-empty string, got undefined'],
    ['duplicate name', (o) => (o.endpoints = [{ name: 'a', conn: 1 }, { name: 'a', conn: 2 }]), 'endpoints[1].name: expected a name not used by another endpoint, got "a"'],
    ['missing conn', (o) => (o.endpoints = [{ name: 'a' }]), 'endpoints[0].conn: expected a connection value, got undefined'],
    ['zero weight', (o) => (o.endpoints = [{ name: 'a', conn: 1, weight: 0 }]), 'endpoints[0].weight: expected a positive integer, got 0'],
    ['fractional weight', (o) => (o.endpoints = [{ name: 'a', conn: 1, weight: 1.5 }]), 'endpoints[0].weight: expected a positive integer, got 1.5'],
    ['unknown priority', (o) => (o.endpoints = [{ name: 'a', conn: 1, priority: 'medium' }]), "endpoints[0].priority: expected one of 'high', 'low', got \"medium\""],
    ['rate 0', (o) => (o.endpoints = [{ name: 'a', conn: 1, rateLimit: { perSecond: 0 } }]), 'endpoints[0].rateLimit.perSecond: expected a finite number > 0, got 0'],
    ['rate NaN', (o) => (o.endpoints = [{ name: 'a', conn: 1, rateLimit: { perSecond: Number.NaN } }]), 'endpoints[0].rateLimit.perSecond: expected a finite number > 0, got NaN'],
    ['rate missing', (o) => (o.endpoints = [{ name: 'a', conn: 1, rateLimit: {} }]), 'endpoints[0].rateLimit.perSecond: expected a finite number > 0 (or a perDay), got undefined'],
    ['burst below 1', (o) => (o.endpoints = [{ name: 'a', conn: 1, rateLimit: { perSecond: 1, burst: 0.5 } }]), 'endpoints[0].rateLimit.burst: expected a finite number >= 1, got 0.5'],
    ['maxInFlight 0', (o) => (o.endpoints = [{ name: 'a', conn: 1, maxInFlight: 0 }]), 'endpoints[0].maxInFlight: expected a positive integer, got 0'],
    ['classify missing', (o) => delete o.classify, 'classify: expected a function, got undefined'],
    ['classify not a function', (o) => (o.classify = 'transient'), 'classify: expected a function, got "transient"'],
    ['unknown strategy', (o) => (o.strategy = 'fastest'), "strategy: expected one of 'ordered', 'round-robin', 'random', 'health', 'latency', got \"fastest\""],
    ['maxAttempts 0', (o) => (o.maxAttempts = 0), 'maxAttempts: expected a positive integer, got 0'],
    ['negative timeout', (o) => (o.attemptTimeoutMs = -1), 'attemptTimeoutMs: expected a number of milliseconds > 0, or Infinity, got -1'],
    ['NaN deadline', (o) => (o.deadlineMs = Number.NaN), 'deadlineMs: expected a number of milliseconds > 0, or Infinity, got NaN'],
    ['backoff max below initial', (o) => (o.backoff = { initialMs: 500, maxMs: 100 }), 'backoff.maxMs: expected a number >= initialMs (500), got 100'],
    ['backoff Infinity', (o) => (o.backoff = { initialMs: Number.POSITIVE_INFINITY }), 'backoff.initialMs: expected a finite number >= 0, got Infinity'],
    ['unknown jitter', (o) => (o.backoff = { jitter: 'some' }), "backoff.jitter: expected one of 'none', 'full', 'equal', 'decorrelated', got \"some\""],
    ['breaker threshold 0', (o) => (o.breaker = { threshold: 0 }), 'breaker.threshold: expected a positive integer, got 0'],
    ['breaker cooldown 0', (o) => (o.breaker = { cooldownMs: 0 }), 'breaker.cooldownMs: expected a finite number > 0, got 0'],
    ['breaker max below cooldown', (o) => (o.breaker = { cooldownMs: 5000, maxCooldownMs: 10 }), 'breaker.maxCooldownMs: expected a number >= cooldownMs (5000), got 10'],
    ['maxConcurrentCalls -1', (o) => (o.maxConcurrentCalls = -1), 'maxConcurrentCalls: expected a positive integer, got -1'],
    ['unknown breakerMode', (o) => (o.breakerMode = 'hope'), "breakerMode: expected one of 'fail-fast', 'wait', got \"hope\""],
    ['clock without now', (o) => (o.clock = {}), 'clock: expected a Clock ({ now, setTimeout, clearTimeout }), got an object'],
    ['metrics without increment', (o) => (o.metrics = {}), 'metrics: expected a MetricsSink ({ increment, observe? }), got an object'],
    ['onEvent not a function', (o) => (o.onEvent = 1), 'onEvent: expected a function, got 1'],
  ])('%s', (_, mutate, message) => {
    const o = base() as unknown as Record<string, unknown>;
    mutate(o);
    expect(messageOf(() => new Pool(o as never))).toBe(message);
  });

  test('no options at all', () => {
    expect(messageOf(() => new Pool(undefined as never))).toBe('options: expected an object, got undefined');
  });

  test('__proto__ and other odd names are plain names', async () => {
    const pool = new Pool<string>({
      endpoints: [
        { name: '__proto__', conn: 'p' },
        { name: 'constructor', conn: 'c' },
      ],
      classify: () => 'transient',
    });
    expect(pool.endpointNames).toEqual(['__proto__', 'constructor']);
    expect(await pool.execute(async (c) => c, { pin: 'constructor' })).toBe('c');
    expect(pool.breakerState('__proto__')).toBe('closed');
  });

  test('Infinity is accepted for the deadline, the attempt timeout and the permit count', () => {
    expect(
      () =>
        new Pool({ ...base(), deadlineMs: Number.POSITIVE_INFINITY, attemptTimeoutMs: Number.POSITIVE_INFINITY, maxConcurrentCalls: Number.POSITIVE_INFINITY }),
    ).not.toThrow();
  });
});

describe('execute() option validation rejects (never throws synchronously)', () => {
  const pool = new Pool<string>(base());
  test.each<[string, unknown, string]>([
    ['deadline 0', { deadlineMs: 0 }, 'deadlineMs: expected a number of milliseconds > 0, or Infinity, got 0'],
    ['bad retry', { retry: 'forever' }, "retry: expected 'none', 'until-deadline' or { maxAttempts }, got \"forever\""],
    ['retry maxAttempts 0', { retry: { maxAttempts: 0 } }, 'retry.maxAttempts: expected a positive integer, got 0'],
    ['bad signal', { signal: {} }, 'signal: expected an AbortSignal, got an object'],
    ['exclude not array', { exclude: 'a' }, 'exclude: expected an array of endpoint names, got "a"'],
    ['pin not string', { pin: 3 }, 'pin: expected an endpoint name, got 3'],
    ['bad breakerMode', { breakerMode: 'x' }, "breakerMode: expected one of 'fail-fast', 'wait', got \"x\""],
    ['options not object', 5, 'options: expected an object, got 5'],
  ])('%s', async (_, options, message) => {
    let threw = false;
    let p: Promise<unknown> | undefined;
    try {
      p = pool.execute(async () => 1, options as never);
    } catch {
      threw = true;
    }
    expect(threw).toBe(false);
    const err = await p!.catch((e: unknown) => e);
    expect(isPoolError(err) && err.code).toBe('INVALID_OPTIONS');
    expect((err as Error).message).toBe(message);
  });

  test('an operation that is not a function', async () => {
    const err = await pool.execute('nope' as never).catch((e: unknown) => e);
    expect((err as Error).message).toBe('operation: expected a function (conn, ctx) => Promise, got "nope"');
  });
});
