/**
 * Random pool, per-call and setEndpoints options, valid and subtly invalid (NaN, ±Infinity,
 * negatives, 0, huge numbers, wrong types, unknown nested keys, conflicting pairs): an
 * invalid one is `INVALID_OPTIONS` naming its field when the pool is built (or the call
 * made, or the endpoints set), never a TypeError, a hang or a silent acceptance; a valid
 * one builds and serves a call on the fake clock. NOTES-newuser2.md has what it found.
 *
 * `FC_SEED` replays a failing run; `FC_RUNS` (default 300 per property) sets the runs.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type PoolOptions } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';

const RUNS = Number(process.env['FC_RUNS'] ?? 300);
const SEED = process.env['FC_SEED'] === undefined ? undefined : Number(process.env['FC_SEED']);
const params = { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) };

type Value = fc.Arbitrary<unknown>;
/** Where an option lives (`['backoff', 'maxMs']`), its valid values and its invalid ones. */
interface Field {
  readonly path: readonly (string | number)[];
  readonly valid: Value;
  readonly invalid: Value;
}

const wrongType = fc.constantFrom<unknown>('5', null, true, {}, [], () => 1);
const huge = fc.constantFrom(1e9, 2 ** 31, 2 ** 53, 1e300);
const small = fc.double({ min: 1e-6, max: 1e6, noNaN: true });
const notNumbers = fc.constantFrom<unknown>(Number.NaN, Number.NEGATIVE_INFINITY, -1, -1e-9, -1e300);

/** A finite number >= 0. */
const nonNegative: Field['valid'] = fc.oneof(fc.constant(0), small, huge);
const nonNegativeBad = fc.oneof(notNumbers, fc.constant(Number.POSITIVE_INFINITY), wrongType);
/** A finite number > 0. */
const positive = fc.oneof(small, huge);
const positiveBad = fc.oneof(nonNegativeBad, fc.constant(0));
/** Milliseconds > 0, or Infinity. */
const duration = fc.oneof(small, huge, fc.constant(Number.POSITIVE_INFINITY));
const durationBad = fc.oneof(notNumbers, fc.constant(0), wrongType);
/** An integer >= 1. */
const count = fc.oneof(fc.integer({ min: 1, max: 50 }), fc.constantFrom(1e9, 2 ** 53));
const countBad = fc.oneof(fc.constantFrom<unknown>(0, 1.5, 0.999, Number.POSITIVE_INFINITY), notNumbers, wrongType);
/** (0, 1]. */
const fraction = fc.oneof(fc.double({ min: 1e-9, max: 1, noNaN: true }), fc.constant(1));
const fractionBad = fc.oneof(fc.constantFrom<unknown>(0, 1.0001, 2, Number.POSITIVE_INFINITY), notNumbers, wrongType);
const oneOf = (...values: string[]): Field['valid'] => fc.constantFrom(...values);
const oneOfBad = fc.constantFrom<unknown>('', 'bogus', 'ORDERED', 5, null, true, {});
const bool = fc.boolean();
const boolBad = fc.constantFrom<unknown>('true', 1, 0, null, {});

const field = (path: Field['path'], valid: Value, invalid: Value): Field => ({ path, valid, invalid });

/** Pool options and one endpoint's (at `endpoints[0]`), each on its own. */
const FIELDS: readonly Field[] = [
  field(['strategy'], oneOf('ordered', 'round-robin', 'random', 'health', 'latency'), oneOfBad),
  field(['maxAttempts'], count, countBad),
  field(['attemptTimeoutMs'], duration, durationBad),
  field(['deadlineMs'], duration, durationBad),
  field(['backoff', 'initialMs'], fc.oneof(fc.constant(0), small), nonNegativeBad),
  field(['backoff', 'jitter'], oneOf('none', 'full', 'equal', 'decorrelated'), oneOfBad),
  field(['breaker', 'threshold'], count, countBad),
  field(['breaker', 'cooldownMs'], positive, positiveBad),
  field(['breaker', 'mode'], oneOf('consecutive', 'failure-rate'), oneOfBad),
  field(['breaker', 'failureRate'], fraction, fractionBad),
  field(['breaker', 'windowMs'], positive, positiveBad),
  field(['breaker', 'minThroughput'], count, countBad),
  field(['breaker', 'slowCallMs'], duration, durationBad),
  field(['breaker', 'ejectionGrowth'], bool, boolBad),
  field(['breaker', 'jitter'], fc.double({ min: 0, max: 0.999, noNaN: true }), fc.oneof(fc.constantFrom<unknown>(1, 1.5), nonNegativeBad)),
  field(['rateLimitCooldownMs'], nonNegative, nonNegativeBad),
  field(['maxQueueWaitMs'], duration, durationBad),
  field(['ceilingRecovery', 'quietMs'], nonNegative, nonNegativeBad),
  field(['ceilingRecovery', 'stepMs'], positive, positiveBad),
  field(['ceilingRecovery', 'stepFraction'], fraction, fractionBad),
  field(['maxConcurrentCalls'], fc.oneof(count, fc.constant(Number.POSITIVE_INFINITY)), fc.oneof(fc.constantFrom<unknown>(0, 1.5), notNumbers, wrongType)),
  field(['permitScope'], oneOf('call', 'attempt'), oneOfBad),
  field(['breakerMode'], oneOf('fail-fast', 'wait'), oneOfBad),
  field(['dailyResetUtcHour'], fc.integer({ min: 0, max: 23 }), fc.constantFrom<unknown>(24, -1, 1.5, Number.NaN, '3', null)),
  field(['refreshTimeoutMs'], duration, durationBad),
  field(['retryBudget', 'ratio'], nonNegative, nonNegativeBad),
  field(['retryBudget', 'minPerSecond'], nonNegative, nonNegativeBad),
  field(['retryBudget', 'windowMs'], fc.oneof(fc.double({ min: 1000, max: 1e7, noNaN: true }), huge), fc.oneof(fc.constantFrom<unknown>(999, 0), nonNegativeBad)),
  field(['maxEjectedPercent'], fc.double({ min: 0, max: 100, noNaN: true }), fc.oneof(fc.constantFrom<unknown>(100.5, 1e9), nonNegativeBad)),
  field(['latency', 'decayMs'], positive, positiveBad),
  field(['latency', 'failurePenaltyMs'], nonNegative, nonNegativeBad),
  field(['latency', 'coldStartMs'], nonNegative, nonNegativeBad),
  field(['hedge', 'afterMs'], nonNegative, nonNegativeBad),
  field(['hedge', 'percentile'], fc.double({ min: 1e-9, max: 0.999, noNaN: true }), fc.oneof(fc.constantFrom<unknown>(0, 1, 95), nonNegativeBad)),
  field(['hedge', 'maxHedges'], count, countBad),
  // Health windows: per-minute counters over 15 minutes, so at most 900,000 ms (forty-third session).
  field(['health', 'windowMs'], fc.double({ min: 1e-6, max: 900_000, noNaN: true }), fc.oneof(positiveBad, fc.constantFrom<unknown>(900_001, 1e9, 1e300))),
  field(['health', 'longWindowMs'], fc.double({ min: 1e-6, max: 900_000, noNaN: true }), fc.oneof(positiveBad, fc.constantFrom<unknown>(900_001, 1e9, 1e300))),
  field(['health', 'maxWaitForHealthyMs'], nonNegative, nonNegativeBad),
  field(['endpoints', 0, 'priority'], oneOf('high', 'low'), oneOfBad),
  field(['endpoints', 0, 'weight'], fc.integer({ min: 1, max: 1000 }), fc.oneof(fc.constantFrom<unknown>(1001, 1e9), countBad)),
  field(['endpoints', 0, 'maxInFlight'], fc.oneof(count, fc.constant(Number.POSITIVE_INFINITY)), fc.oneof(fc.constantFrom<unknown>(0, 1.5), notNumbers, wrongType)),
  field(['endpoints', 0, 'rateLimit', 'perSecond'], fc.oneof(small, fc.constant(1e6)), fc.oneof(fc.constantFrom<unknown>(1e6 + 1, 1e300), positiveBad)),
  field(['endpoints', 0, 'rateLimit', 'marginMs'], nonNegative, nonNegativeBad),
  field(['endpoints', 0, 'rateLimit', 'perDay'], count, countBad),
  field(['endpoints', 0, 'rateLimit', 'dailyStopFraction'], fraction, fractionBad),
];

/** Nested option objects: a wrong type there, or an unknown key, names the object (or the key). */
const OBJECTS: readonly (readonly (string | number)[])[] = [
  ['backoff'],
  ['breaker'],
  ['ceilingRecovery'],
  ['retryBudget'],
  ['latency'],
  ['hedge'],
  ['health'],
  ['endpoints', 0],
  ['endpoints', 0, 'rateLimit'],
];

const fieldName = (path: readonly (string | number)[]): string => path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');

/** A deep copy of plain objects and arrays: fast-check hands the same generated value to more than one run. */
const clone = <T>(v: T): T =>
  (Array.isArray(v) ? v.map(clone) : v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clone(x)])) : v) as T;

/** Sets `value` at `path`; a rateLimit given a field gets a rate, so that the field is what is checked. */
function put(target: Record<string, unknown>, path: readonly (string | number)[], value: unknown): void {
  let o = target as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) {
    o[key] ??= {};
    o = o[key] as Record<string | number, unknown>;
  }
  o[path[path.length - 1]!] = value;
  if (path[2] === 'rateLimit' && path.length === 4 && o['perSecond'] === undefined && o['perDay'] === undefined) o['perSecond'] = 5;
}

/** A valid configuration: some fields set, kept consistent (a rateLimit has a rate; bucket-only burst). */
const validOptions = fc
  .tuple(
    fc.subarray(FIELDS.map((f, i) => i)).chain((picked) => fc.tuple(...picked.map((i) => FIELDS[i]!.valid)).map((values) => picked.map((i, k) => [FIELDS[i]!.path, values[k]] as const))),
    fc.option(fc.double({ min: 1, max: 100, noNaN: true }), { nil: undefined }),
    fc.option(fc.tuple(fc.double({ min: 0, max: 1000, noNaN: true }), fc.double({ min: 0, max: 1e6, noNaN: true })), { nil: undefined }),
    fc.option(fc.tuple(positive, fc.double({ min: 1, max: 10, noNaN: true })), { nil: undefined }),
  )
  .map(([values, burst, backoff, breaker]) => {
    const o: Record<string, unknown> = {
      endpoints: [
        { name: 'a', conn: 'a' },
        { name: 'b', conn: 'b' },
      ],
    };
    for (const [path, value] of values) put(o, path, value);
    const rl = (o['endpoints'] as Record<string, unknown>[])[0]!['rateLimit'] as Record<string, unknown> | undefined;
    if (rl !== undefined) {
      if (rl['perSecond'] === undefined && rl['perDay'] === undefined) rl['perSecond'] = 5;
      // Two paced or bucket forms: `burst` only in bucket mode.
      if (burst !== undefined && rl['marginMs'] === undefined) rl['burst'] = burst;
      else if (rl['marginMs'] !== undefined && rl['perSecond'] !== undefined) rl['mode'] = 'paced';
    }
    // Pairs that must agree: maxMs >= initialMs, maxCooldownMs >= cooldownMs.
    if (backoff !== undefined) put(o, ['backoff', 'maxMs'], Math.max(backoff[1], (o['backoff'] as { initialMs?: number } | undefined)?.initialMs ?? 100, backoff[0]));
    if (breaker !== undefined) put(o, ['breaker', 'maxCooldownMs'], Math.max((o['breaker'] as { cooldownMs?: number } | undefined)?.cooldownMs ?? 5000, 60_000) * breaker[1]);
    return o;
  });

function built(o: Record<string, unknown>, clock: FakeClock): Pool<string> | { code: string; field: string | undefined; error: unknown } {
  try {
    return new Pool<string>({ ...o, classify: () => 'transient', clock } as unknown as PoolOptions<string>);
  } catch (error) {
    return isPoolError(error) ? { code: error.code, field: error.field, error } : { code: `not a PoolError: ${String(error)}`, field: undefined, error };
  }
}

async function serves(pool: Pool<string>, clock: FakeClock): Promise<void> {
  const result = await clock.runUntilSettled(
    pool.execute(async (conn) => conn),
    { maxMs: 3_600_000 },
  );
  expect(['a', 'b']).toContain(result);
  await pool.close();
}

describe('random pool options', () => {
  test('a valid configuration builds and serves a call on the fake clock', async () => {
    await fc.assert(
      fc.asyncProperty(validOptions, async (generated) => {
        const o = clone(generated);
        const clock = new FakeClock();
        const pool = built(o, clock);
        if (!(pool instanceof Pool)) throw new Error(`rejected a valid configuration: ${pool.code} ${pool.field} (${JSON.stringify(o)})`);
        await serves(pool, clock);
      }),
      params,
    );
  }, 120_000);

  test('one invalid field among valid ones: INVALID_OPTIONS naming it, at construction', () => {
    fc.assert(
      fc.property(validOptions, fc.integer({ min: 0, max: FIELDS.length - 1 }).chain((i) => fc.tuple(fc.constant(FIELDS[i]!), FIELDS[i]!.invalid)), (generated, [f, bad]) => {
        const o = clone(generated);
        put(o, f.path, bad);
        const r = built(o, new FakeClock());
        expect(r instanceof Pool ? `accepted ${fieldName(f.path)} = ${String(bad)}` : [r.code, r.field]).toEqual(['INVALID_OPTIONS', fieldName(f.path)]);
      }),
      params,
    );
  });

  test('a nested option of the wrong type, or with an unknown key: INVALID_OPTIONS naming it', () => {
    fc.assert(
      fc.property(
        validOptions,
        fc.constantFrom(...OBJECTS),
        fc.oneof(fc.constantFrom<unknown>('x', 5, true, null, []), fc.constantFrom('bogusKey', 'timeout', 'max', 'retries', 'enabled')),
        (generated, path, what) => {
          const o = clone(generated);
          let expected: string;
          if (typeof what === 'string' && what !== 'x') {
            const target = path.reduce<Record<string | number, unknown>>((acc, k) => (acc[k] ??= {}) as Record<string | number, unknown>, o as Record<string | number, unknown>);
            target[what] = 1;
            expected = `${fieldName(path)}.${what}`;
            if (path.join('.') === 'endpoints.0.rateLimit' && target['perSecond'] === undefined && target['perDay'] === undefined) target['perSecond'] = 5;
          } else {
            put(o, path, what);
            expected = fieldName(path);
          }
          const r = built(o, new FakeClock());
          expect(r instanceof Pool ? `accepted ${expected}` : [r.code, r.field]).toEqual(['INVALID_OPTIONS', expected]);
        },
      ),
      params,
    );
  });
});

/** Per-call options: each field, its valid and invalid values. */
const CALL_FIELDS: readonly Field[] = [
  field(['deadlineMs'], duration, durationBad),
  field(['attemptTimeoutMs'], duration, durationBad),
  field(['retry'], fc.oneof(oneOf('none', 'until-deadline'), count.map((maxAttempts) => ({ maxAttempts }))), fc.constantFrom<unknown>('never', 3, null, true, [])),
  field(['retry', 'maxAttempts'], count, countBad),
  field(['breakerMode'], oneOf('fail-fast', 'wait'), oneOfBad),
  field(['backoff', 'initialMs'], fc.oneof(fc.constant(0), fc.double({ min: 0, max: 100, noNaN: true })), nonNegativeBad),
  field(['backoff', 'jitter'], oneOf('none', 'full', 'equal', 'decorrelated'), oneOfBad),
  field(['idempotent'], bool, boolBad),
  field(['exclude'], fc.constantFrom(['a'], ['b'], []), fc.constantFrom<unknown>('a', 5, null, {})),
  field(['pin'], oneOf('a', 'b'), fc.constantFrom<unknown>(5, null, true, {}, ['a'])),
];

describe('random per-call options', () => {
  const callOptions = fc
    .subarray(CALL_FIELDS.map((f, i) => i))
    .chain((picked) => fc.tuple(...picked.map((i) => CALL_FIELDS[i]!.valid)).map((values) => picked.map((i, k) => [CALL_FIELDS[i]!.path, values[k]] as const)))
    .map((values) => {
      const o: Record<string, unknown> = {};
      for (const [path, value] of values) if (!(path[0] === 'retry' && o['retry'] !== undefined)) put(o, path, value);
      if (typeof o['pin'] === 'string' && (o['exclude'] as string[] | undefined)?.includes(o['pin']) === true) delete o['exclude'];
      return o;
    });

  test('valid ones serve; one invalid field is INVALID_OPTIONS naming it, before any attempt', async () => {
    await fc.assert(
      fc.asyncProperty(callOptions, fc.option(fc.integer({ min: 0, max: CALL_FIELDS.length - 1 }).chain((i) => fc.tuple(fc.constant(CALL_FIELDS[i]!), CALL_FIELDS[i]!.invalid)), { nil: undefined }), async (generated, broken) => {
        const o = clone(generated);
        const clock = new FakeClock();
        const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], classify: () => 'transient', clock });
        let attempts = 0;
        const op = async (conn: string): Promise<string> => {
          attempts++;
          return conn;
        };
        if (broken === undefined) {
          const result = await clock.runUntilSettled(pool.execute(op, o), { maxMs: 3_600_000 });
          expect(['a', 'b']).toContain(result);
        } else {
          const [f, bad] = broken;
          if (f.path[0] === 'retry' && f.path.length === 2) o['retry'] = {};
          put(o, f.path, bad);
          const e = await clock.runUntilSettled(pool.execute(op, o), { maxMs: 3_600_000 }).catch((error: unknown) => error);
          expect(isPoolError(e) ? [e.code, e.field] : e).toEqual(['INVALID_OPTIONS', fieldName(f.path)]);
          expect(attempts).toBe(0);
        }
        await pool.close();
      }),
      params,
    );
  }, 120_000);
});

describe('random setEndpoints', () => {
  test('one invalid endpoint field: INVALID_OPTIONS naming it, and the old set still serves', async () => {
    const endpointFields = FIELDS.filter((f) => f.path[0] === 'endpoints');
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: endpointFields.length - 1 }).chain((i) => fc.tuple(fc.constant(endpointFields[i]!), endpointFields[i]!.invalid)), async ([f, bad]) => {
        const clock = new FakeClock();
        const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock });
        const next: Record<string, unknown> = { endpoints: [{ name: 'x', conn: 'x' }, { name: 'y', conn: 'y' }] };
        put(next, f.path, bad);
        let thrown: unknown;
        try {
          pool.setEndpoints(next['endpoints'] as never);
        } catch (error) {
          thrown = error;
        }
        expect(isPoolError(thrown) ? [thrown.code, thrown.field] : thrown).toEqual(['INVALID_OPTIONS', fieldName(f.path)]);
        expect(await clock.runUntilSettled(pool.execute(async (conn) => conn))).toBe('a');
        await pool.close();
      }),
      params,
    );
  });
});
