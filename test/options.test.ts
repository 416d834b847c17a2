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
    // Hostile values: wrong types, NaN, Infinity, negatives, odd names.
    ['endpoint null', (o) => (o.endpoints = [null]), 'endpoints[0]: expected an object, got null'],
    ['endpoint a string', (o) => (o.endpoints = ['a']), 'endpoints[0]: expected an object, got "a"'],
    ['name a number', (o) => (o.endpoints = [{ name: 1, conn: 1 }]), 'endpoints[0].name: expected a non-empty string, got 1'],
    ['duplicate __proto__', (o) => (o.endpoints = [{ name: '__proto__', conn: 1 }, { name: '__proto__', conn: 2 }]), 'endpoints[1].name: expected a name not used by another endpoint, got "__proto__"'],
    ['weight NaN', (o) => (o.endpoints = [{ name: 'a', conn: 1, weight: Number.NaN }]), 'endpoints[0].weight: expected a positive integer, got NaN'],
    ['weight Infinity', (o) => (o.endpoints = [{ name: 'a', conn: 1, weight: Number.POSITIVE_INFINITY }]), 'endpoints[0].weight: expected a positive integer, got Infinity'],
    ['weight a string', (o) => (o.endpoints = [{ name: 'a', conn: 1, weight: '2' }]), 'endpoints[0].weight: expected a positive integer, got "2"'],
    ['rateLimit an array', (o) => (o.endpoints = [{ name: 'a', conn: 1, rateLimit: [5] }]), 'endpoints[0].rateLimit: expected an object, got an array of 1'],
    ['rate Infinity', (o) => (o.endpoints = [{ name: 'a', conn: 1, rateLimit: { perSecond: Number.POSITIVE_INFINITY } }]), 'endpoints[0].rateLimit.perSecond: expected a finite number > 0, got Infinity'],
    ['rate negative', (o) => (o.endpoints = [{ name: 'a', conn: 1, rateLimit: { perSecond: -5 } }]), 'endpoints[0].rateLimit.perSecond: expected a finite number > 0, got -5'],
    ['burst Infinity', (o) => (o.endpoints = [{ name: 'a', conn: 1, rateLimit: { perSecond: 1, burst: Number.POSITIVE_INFINITY } }]), 'endpoints[0].rateLimit.burst: expected a finite number >= 1, got Infinity'],
    ['maxInFlight -1', (o) => (o.endpoints = [{ name: 'a', conn: 1, maxInFlight: -1 }]), 'endpoints[0].maxInFlight: expected a positive integer, got -1'],
    ['maxInFlight NaN', (o) => (o.endpoints = [{ name: 'a', conn: 1, maxInFlight: Number.NaN }]), 'endpoints[0].maxInFlight: expected a positive integer, got NaN'],
    ['maxAttempts Infinity', (o) => (o.maxAttempts = Number.POSITIVE_INFINITY), 'maxAttempts: expected a positive integer, got Infinity'],
    ['maxAttempts a string', (o) => (o.maxAttempts = '3'), 'maxAttempts: expected a positive integer, got "3"'],
    ['attemptTimeoutMs a string', (o) => (o.attemptTimeoutMs = '100'), 'attemptTimeoutMs: expected a number of milliseconds > 0, or Infinity, got "100"'],
    ['deadline -Infinity', (o) => (o.deadlineMs = Number.NEGATIVE_INFINITY), 'deadlineMs: expected a number of milliseconds > 0, or Infinity, got -Infinity'],
    ['rateLimitCooldownMs -1', (o) => (o.rateLimitCooldownMs = -1), 'rateLimitCooldownMs: expected a finite number >= 0, got -1'],
    ['rateLimitCooldownMs NaN', (o) => (o.rateLimitCooldownMs = Number.NaN), 'rateLimitCooldownMs: expected a finite number >= 0, got NaN'],
    ['backoff an array', (o) => (o.backoff = [100]), 'backoff: expected an object, got an array of 1'],
    ['backoff initial negative', (o) => (o.backoff = { initialMs: -1 }), 'backoff.initialMs: expected a finite number >= 0, got -1'],
    ['breaker null', (o) => (o.breaker = null), 'breaker: expected an object, got null'],
    ['breaker threshold 2.5', (o) => (o.breaker = { threshold: 2.5 }), 'breaker.threshold: expected a positive integer, got 2.5'],
    ['maxConcurrentCalls 1.5', (o) => (o.maxConcurrentCalls = 1.5), 'maxConcurrentCalls: expected a positive integer, got 1.5'],
    ['random not a function', (o) => (o.random = 0.5), 'random: expected a function, got 0.5'],
    ['clock a number', (o) => (o.clock = 5), 'clock: expected a Clock ({ now, setTimeout, clearTimeout }), got 5'],
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
    ['deadline NaN', { deadlineMs: Number.NaN }, 'deadlineMs: expected a number of milliseconds > 0, or Infinity, got NaN'],
    ['attempt timeout negative', { attemptTimeoutMs: -5 }, 'attemptTimeoutMs: expected a number of milliseconds > 0, or Infinity, got -5'],
    ['retry maxAttempts NaN', { retry: { maxAttempts: Number.NaN } }, 'retry.maxAttempts: expected a positive integer, got NaN'],
    ['unknown exclude', { exclude: ['__proto__'] }, 'exclude[0]: expected the name of an endpoint of this pool, got "__proto__"'],
    ['exclude with a non-string', { exclude: [null] }, 'exclude[0]: expected the name of an endpoint of this pool, got null'],
    ['backoff jitter unknown', { backoff: { jitter: 'lots' } }, "backoff.jitter: expected one of 'none', 'full', 'equal', 'decorrelated', got \"lots\""],
    ['options null', null, 'options: expected an object, got null'],
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

describe('health windows', () => {
  // The endpoints count failures and use per minute over 15 minutes: a longer window used to be
  // cut to 15 minutes without a word (forty-third session).
  test('a window longer than 15 minutes is refused, naming the field; 15 minutes is taken', () => {
    expect(messageOf(() => new Pool({ ...base(), strategy: 'health', health: { windowMs: 3_600_000 } }))).toMatch(/^health\.windowMs: expected at most 900000/);
    expect(messageOf(() => new Pool({ ...base(), strategy: 'health', health: { longWindowMs: 900_001 } }))).toMatch(/^health\.longWindowMs: /);
    expect(() => new Pool({ ...base(), strategy: 'health', health: { windowMs: 900_000, longWindowMs: 900_000 } })).not.toThrow();
  });
});
