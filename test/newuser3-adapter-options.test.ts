/**
 * The adapters' own options, generated (the lesson: options a user picks, not ours): random
 * combinations of valid and wrong values for `createPooledFetch`, `poolTransport` and
 * `PooledJsonRpcProvider`, with the pool's options beside them. A combination with a wrong
 * value throws `INVALID_OPTIONS` naming that field (never a TypeError or another class of error),
 * without echoing the URL's secret; a valid one builds and closes. `FC_SEED` / `FC_RUNS`.
 */
import fc from 'fast-check';
import { custom, http } from 'viem';
import { describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { classifyFetchError, classifyResponse, createPooledFetch } from '../src/fetch/index.js';
import { classifyViemError, poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider, classifyEthersError } from '../src/ethers/index.js';
import { classifyApiKeyMessage } from '../src/keys/index.js';
import { Pool, Refresher } from '../src/index.js';
import { FakeClock } from '../src/testing/index.js';
import { createRedisHealth, createRedisStore } from '../src/redis/index.js';
import { prometheusSink } from '../src/prometheus/index.js';
import { otelSink } from '../src/otel/index.js';

const RUNS = Number(process.env['FC_RUNS'] ?? 300);
const SEED = process.env['FC_SEED'] === undefined ? undefined : Number(process.env['FC_SEED']);
const params = { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) };
const URL_WITH_KEY = 'https://rpc.example/v2/SECRET';

type Value = fc.Arbitrary<unknown>;
interface Field {
  readonly path: readonly (string | number)[];
  readonly valid: Value;
  readonly invalid: Value;
}
const field = (path: Field['path'], valid: Value, invalid: Value): Field => ({ path, valid, invalid });
const wrongType = fc.constantFrom<unknown>('5', null, true, {}, [], 7);
const fn = fc.constant(() => undefined);
const bool = fc.boolean();
const boolBad = fc.constantFrom<unknown>('true', 1, 0, null, {});
const nonNegative = fc.oneof(fc.constant(0), fc.double({ min: 1e-3, max: 1e7, noNaN: true }));
const nonNegativeBad = fc.constantFrom<unknown>(-1, Number.NaN, Number.NEGATIVE_INFINITY, '5', null, true, {});
const fnBad = fc.constantFrom<unknown>('f', 5, true, {}, []);
const urlBad = fc.constantFrom<unknown>('', 'not a url SECRET', 'ftp://x/SECRET', 5, null, {});
const nameBad = fc.constantFrom<unknown>('', 5, null, {});

/** Fields every adapter shares: the endpoint's URL and name, and a few pool options. */
const COMMON: readonly Field[] = [
  field(['endpoints', 0, 'url'], fc.constantFrom(URL_WITH_KEY, 'http://127.0.0.1:8545'), urlBad),
  field(['endpoints', 0, 'name'], fc.constantFrom('a', 'node-1'), nameBad),
  field(['maxAttempts'], fc.integer({ min: 1, max: 9 }), fc.constantFrom<unknown>(0, 1.5, -1, '3', null)),
  field(['attemptTimeoutMs'], fc.integer({ min: 1, max: 60_000 }), fc.constantFrom<unknown>(0, -5, Number.NaN, '1000')),
  field(['strategy'], fc.constantFrom('ordered', 'round-robin', 'health', 'latency'), fc.constantFrom<unknown>('', 'fastest', 5)),
];
const FETCH: readonly Field[] = [
  ...COMMON,
  field(['maxRetryAfterMs'], nonNegative, nonNegativeBad),
  field(['throwOnHttpError'], bool, boolBad),
  field(['getToken'], fn, fnBad),
  field(['replay'], fc.constantFrom('idempotent', 'always'), fc.constantFrom<unknown>('never', '', 1, true)),
  field(['idempotencyKey'], fc.oneof(bool, fc.constant('Idempotency-Key'), fn), fc.constantFrom<unknown>(5, {}, [], '')),
  field(['classify'], fn, fnBad),
  field(['fetch'], fc.constant(async () => new Response('ok')), fnBad),
];
const VIEM: readonly Field[] = [
  ...COMMON,
  field(['passSignal'], bool, boolBad),
  field(['rememberUnsupportedMs'], nonNegative, nonNegativeBad),
  field(['classify'], fn, fnBad),
  field(['heads', 'pollMs'], fc.integer({ min: 0, max: 60_000 }), fc.constantFrom<unknown>(-1, Number.NaN, '100', null)),
  field(['heads', 'maxLagBlocks'], fc.integer({ min: 0, max: 100 }), fc.constantFrom<unknown>(-1, 1.5, Number.NaN, '2')),
  field(['keccak256'], fn, fnBad),
  field(['custom'], fc.constantFrom<unknown>(false), fc.constantFrom<unknown>(5, 'x', true, {})),
  field(['coalesce'], fc.constantFrom(['eth_blockNumber'], ['eth_call', 'eth_getBalance'], []), fc.constantFrom<unknown>('eth_call', 5, {}, [5], ['eth_sendRawTransaction'])),
  field(['quorum', 'stallMs'], fc.oneof(nonNegative, fc.constant(Number.POSITIVE_INFINITY)), fc.constantFrom<unknown>(-1, Number.NaN, '5', null)),
  field(['quorum', 'equals'], fn, fnBad),
];
const ETHERS: readonly Field[] = [
  ...COMMON,
  field(['maxRetryAfterMs'], nonNegative, nonNegativeBad),
  field(['classify'], fn, fnBad),
  field(['fetch'], fc.constant(async () => new Response('{}')), fnBad),
  field(['heads', 'pollMs'], fc.integer({ min: 0, max: 60_000 }), fc.constantFrom<unknown>(-1, Number.NaN, '100', null)),
  field(['coalesce'], fc.constantFrom(['eth_blockNumber'], ['eth_call', 'eth_getBalance'], []), fc.constantFrom<unknown>('eth_call', 5, {}, [5], ['eth_sendRawTransaction'])),
  field(['quorum', 'stallMs'], fc.oneof(nonNegative, fc.constant(Number.POSITIVE_INFINITY)), fc.constantFrom<unknown>(-1, Number.NaN, '5', null)),
  field(['quorum', 'equals'], fn, fnBad),
];

const clockBad = fc.constantFrom<unknown>(5, 'clock', {}, { now: () => 0 }, null);
const integerBad = fc.constantFrom<unknown>(0, -1, 1.5, Number.NaN, '10', null);
const REDIS_COMMON: readonly Field[] = [
  field(['prefix'], fc.constantFrom('app:', 'p'), fc.constantFrom<unknown>('', '{x}', 'a}b', 5, null)),
  field(['maxPending'], fc.integer({ min: 1, max: 10_000 }), integerBad),
  field(['onError'], fn, fnBad),
  field(['clock'], fc.constant(new FakeClock()), clockBad),
];
const STORE: readonly Field[] = [
  ...REDIS_COMMON,
  field(['maxReserveMs'], nonNegative, nonNegativeBad),
  field(['slotGraceMs'], nonNegative, nonNegativeBad),
  field(['learnedTtlMs'], nonNegative, nonNegativeBad),
  field(['disabledTtlMs'], nonNegative, nonNegativeBad),
  field(['degradedHoldMs'], nonNegative, nonNegativeBad),
];
const positiveMs = fc.double({ min: 1e-3, max: 1e7, noNaN: true });
const positiveBad = fc.constantFrom<unknown>(0, -1, Number.NaN, '5', null);
const HEALTH: readonly Field[] = [...REDIS_COMMON, field(['disabledTtlMs'], positiveMs, positiveBad), field(['maxAgeMs'], positiveMs, positiveBad)];
const REFRESHER: readonly Field[] = [
  field(['intervalMs'], fc.oneof(fc.integer({ min: 1, max: 1e7 }), fc.constant(Number.POSITIVE_INFINITY)), fc.constantFrom<unknown>(0, -1, Number.NaN, '5', null)),
  field(['timeoutMs'], fc.oneof(fc.integer({ min: 1, max: 1e7 }), fc.constant(Number.POSITIVE_INFINITY)), fc.constantFrom<unknown>(0, -1, Number.NaN, '5', null)),
  field(['concurrency'], fc.integer({ min: 1, max: 64 }), integerBad),
  field(['minHealthy'], fc.integer({ min: 1, max: 64 }), integerBad),
  field(['order'], fc.constantFrom('given', 'latency'), fc.constantFrom<unknown>('fastest', '', 5)),
  field(['onRefresh'], fn, fnBad),
  field(['fallback'], fc.constant([{ name: 'f', conn: 'f' }]), fc.constantFrom<unknown>('f', 5, [{ conn: 'f' }], [null])),
  field(['shared'], fc.constant({ refreshSurvivors: async () => undefined }), fc.constantFrom<unknown>('redis', 5, {}, null)),
];

const labelsBad = fc.constantFrom<unknown>(5, 'env', [], { env: 5 }, null);
class Metric {
  constructor(readonly config: unknown) {}
  inc(): void {}
  observe(): void {}
}
const promClient = { Counter: Metric, Histogram: Metric };
const promRegistry = () => ({ getSingleMetric: () => undefined });
const PROMETHEUS: readonly Field[] = [
  field(['client'], fc.constant(promClient), fc.constantFrom<unknown>(5, {}, { Counter: Metric }, null)),
  field(['registry'], fc.constant(promRegistry()), fc.constantFrom<unknown>(5, {}, null, 'register')),
  field(['labels'], fc.constantFrom({}, { pool: 'a' }), labelsBad),
  field(['buckets'], fc.constantFrom([0.1], [0.005, 0.5, 5]), fc.constantFrom<unknown>([], [1, 0.5], [Number.NaN], 5, ['1'])),
];
const meter = { createCounter: () => ({ add() {} }), createHistogram: () => ({ record() {} }) };
const OTEL: readonly Field[] = [
  field(['meter'], fc.constant(meter), fc.constantFrom<unknown>(5, {}, null, { createCounter: () => ({}) })),
  field(['options'], fc.constant({}), fc.constantFrom<unknown>(5, 'x', null)),
  field(['attributes'], fc.constantFrom({}, { service: 'api' }), labelsBad),
];

const fieldName = (path: readonly (string | number)[]): string => path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');

function put(target: Record<string, unknown>, path: readonly (string | number)[], value: unknown): void {
  let o = target as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) {
    o[key] ??= typeof key === 'number' ? {} : key === 'endpoints' ? [] : {};
    o = o[key] as Record<string | number, unknown>;
  }
  // A copy: fast-check hands the same generated object to other runs, and later fields write into it.
  o[path[path.length - 1]!] = value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype ? { ...value } : value;
}

/** Valid values for some fields, and at most one wrong one (its index in `fields`, or -1). */
const scenario = (fields: readonly Field[]) =>
  fc
    .tuple(fc.subarray(fields.map((_, i) => i)), fc.integer({ min: -1, max: fields.length - 1 }))
    .chain(([picked, bad]) =>
      fc.tuple(fc.tuple(...picked.filter((i) => i !== bad).map((i) => fields[i]!.valid.map((v) => [i, v] as const))), bad === -1 ? fc.constant(undefined) : fields[bad]!.invalid.map((v) => [bad, v] as const)),
    );

function build(fields: readonly Field[], values: readonly (readonly [number, unknown])[], bad: readonly [number, unknown] | undefined, base: () => Record<string, unknown>): Record<string, unknown> {
  const o = base();
  for (const [i, v] of values) put(o, fields[i]!.path, v);
  if (bad !== undefined) put(o, fields[bad[0]]!.path, bad[1]);
  return o;
}

async function attempt(make: (o: Record<string, unknown>) => { close(): Promise<void> | void }, o: Record<string, unknown>): Promise<unknown> {
  try {
    const made = make(o);
    await made.close();
    return undefined;
  } catch (error) {
    return error;
  }
}

const withEndpoint = (): Record<string, unknown> => ({ endpoints: [{ url: URL_WITH_KEY, name: 'a' }] });

function property(name: string, fields: readonly Field[], make: (o: Record<string, unknown>) => { close(): Promise<void> | void }, base = withEndpoint): void {
  test(`${name}: a wrong value is INVALID_OPTIONS naming its field, a valid set builds (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(scenario(fields), async ([values, bad]) => {
        const error = await attempt(make, build(fields, values, bad, base));
        if (bad === undefined) {
          expect(error).toBeUndefined();
          return;
        }
        expect(isPoolError(error) ? error.code : String(error)).toBe('INVALID_OPTIONS');
        // The field, or a part of it (`coalesce[0]` for a wrong entry of `coalesce`).
        const name = fieldName(fields[bad[0]]!.path);
        const got = isPoolError(error) ? (error.field ?? '') : '';
        expect(got === name || got.startsWith(`${name}[`) || got.startsWith(`${name}.`) ? name : got).toBe(name);
        expect(String((error as Error).message)).not.toContain('SECRET');
      }),
      params,
    );
  }, 120_000);
}

describe('adapter options, generated', () => {
  property('createPooledFetch', FETCH, (o) => {
    const f = createPooledFetch(o as never);
    return { close: () => f.pool.close() };
  });
  property('poolTransport', VIEM, (o) => {
    const t = poolTransport({ http, ...o } as never);
    return { close: () => t.pool.close() };
  });
  property('PooledJsonRpcProvider', ETHERS, (o) => {
    const p = new PooledJsonRpcProvider({ network: 1, ...o } as never);
    return { close: () => (p.destroy(), p.pool.close()) };
  });
  // A client that never answers: only the options are under test.
  const client = { send: () => new Promise<never>(() => undefined) };
  property('createRedisStore', STORE, (o) => (createRedisStore(client, o as never), { close: () => undefined }), () => ({}));
  property('createRedisHealth', HEALTH, (o) => (createRedisHealth(client, o as never), { close: () => undefined }), () => ({}));
  property('prometheusSink', PROMETHEUS, (o) => (prometheusSink(o as never), { close: () => undefined }), () => ({ client: promClient, registry: promRegistry() }));
  // otelSink(meter, options): the generated object holds both; `attributes` goes into the options.
  property(
    'otelSink',
    OTEL,
    (o) => {
      const { meter: m, options, attributes } = o as { meter: unknown; options?: unknown; attributes?: unknown };
      const opts = options === undefined ? (attributes === undefined ? undefined : { attributes }) : typeof options === 'object' && options !== null && attributes !== undefined ? { ...options, attributes } : options;
      otelSink(m as never, opts as never);
      return { close: () => undefined };
    },
    () => ({ meter }),
  );
  property(
    'Refresher',
    REFRESHER,
    (o) => {
      const pool = new Pool<string>({ endpoints: [{ name: 's', conn: 's' }], classify: () => 'transient' });
      try {
        const r = new Refresher(pool, o as never);
        return { close: () => (r.stop(), pool.close()) };
      } catch (error) {
        void pool.close();
        throw error;
      }
    },
    () => ({ candidates: [{ name: 'a', conn: 'a' }], check: async () => true }),
  );
});

/** Per-call options: a request's own (fetch `init`, ethers `sendWith`), at most one wrong; `field`: the name the error gives. */
interface CallField extends Field {
  readonly field: string;
}
const callField = (path: Field['path'], valid: Value, invalid: Value, name = fieldName(path)): CallField => ({ path, valid, invalid, field: name });
const objectBad = fc.constantFrom<unknown>(5, 'x', null, true);
const POOL_CALL: readonly CallField[] = [
  callField(['deadlineMs'], fc.integer({ min: 1, max: 60_000 }), fc.constantFrom<unknown>(0, -1, Number.NaN, '5')),
  callField(['retry'], fc.constantFrom<unknown>('none', 'until-deadline', { maxAttempts: 2 }), fc.constantFrom<unknown>('x', 5, { maxAttempts: 0 })),
  // (A name no endpoint has, '' included, is PIN_UNAVAILABLE: the endpoint may have been removed.)
  callField(['pin'], fc.constant('a'), fc.constantFrom<unknown>(5, null, {})),
  callField(['exclude'], fc.constant([]), fc.constantFrom<unknown>('a', 5, [5])),
];
const FETCH_CALL: readonly CallField[] = [
  callField(['pool'], fc.constant({}), objectBad),
  ...POOL_CALL.map((f) => ({ ...f, path: ['pool', ...f.path] })),
  callField(['parse'], fc.constantFrom<unknown>('json', 'text', async (r: Response) => r.text()), fc.constantFrom<unknown>('xml', 5, null)),
  callField(['idempotent'], bool, boolBad),
];
// No pin beside a quorum: the two conflict (INVALID_OPTIONS naming quorum), so pin is left to fetch's.
const ETHERS_CALL: readonly CallField[] = [...POOL_CALL.filter((f) => f.path[0] !== 'pin'), callField(['quorum'], fc.constant(1), fc.constantFrom<unknown>('x', -1, Number.NaN))];

function callProperty(name: string, fields: readonly CallField[], run: (o: Record<string, unknown> | unknown) => Promise<unknown>, close: () => Promise<void>, whole?: Value): void {
  test(`${name}: a wrong per-call option rejects with INVALID_OPTIONS naming it, a valid one is served (${RUNS} runs)`, async () => {
    const arb = fc.oneof(
      scenario(fields).map(([values, bad]) => ({ values, bad, whole: undefined as unknown, wholeBad: false })),
      ...(whole === undefined ? [] : [whole.map((w) => ({ values: [] as (readonly [number, unknown])[], bad: undefined, whole: w, wholeBad: true }))]),
    );
    await fc.assert(
      fc.asyncProperty(arb, async ({ values, bad, whole: w, wholeBad }) => {
        const o = wholeBad ? w : build(fields, values, bad, () => ({}));
        const outcome = await run(o).then(
          () => undefined,
          (error: unknown) => error,
        );
        if (!wholeBad && bad === undefined) {
          expect(outcome).toBeUndefined();
          return;
        }
        expect(isPoolError(outcome) ? outcome.code : String(outcome)).toBe('INVALID_OPTIONS');
        const name = wholeBad ? 'options' : fields[bad![0]]!.field;
        const got = isPoolError(outcome) ? (outcome.field ?? '') : '';
        expect(got === name || got.startsWith(`${name}.`) || got.startsWith(`${name}[`) ? name : got).toBe(name);
      }),
      params,
    );
    await close();
  }, 120_000);
}

describe('per-call options of the adapters, generated', () => {
  const answer = async () => new Response('{"jsonrpc":"2.0","id":1,"result":"0x1"}');
  const f = createPooledFetch({ endpoints: [{ url: URL_WITH_KEY, name: 'a' }], fetch: answer } as never);
  callProperty('fetch init', FETCH_CALL.map((x) => (x.path[0] === 'pool' && x.path.length === 2 ? { ...x, field: String(x.path[1]) } : x)), (o) => f('/x', o as never), () => f.pool.close());
  // The answer carries the request's id: the provider refuses one of another request.
  const echo = async (_url: string, init: { body: string }) => new Response(JSON.stringify({ jsonrpc: '2.0', id: (JSON.parse(init.body) as { id: number }).id, result: '0x1' }));
  const p = new PooledJsonRpcProvider({ endpoints: [{ url: URL_WITH_KEY, name: 'a' }], network: 1, fetch: echo } as never);
  callProperty('ethers sendWith', ETHERS_CALL, (o) => p.sendWith('eth_blockNumber', [], o as never), async () => (p.destroy(), p.pool.close()), objectBad);
  const eth = { request: async () => '0x1' };
  const t = poolTransport({ endpoints: [{ name: 'a', transport: custom(eth) }, { name: 'b', transport: custom(eth) }] });
  callProperty('viem withEndpoint', POOL_CALL, (o) => t.withEndpoint((tr) => tr({}).request({ method: 'eth_blockNumber' }), o as never), () => t.pool.close(), objectBad);
  test("fetch: an init that is not an object, ethers: a method or params of the wrong type are INVALID_OPTIONS naming them", async () => {
    const f = createPooledFetch({ endpoints: [{ url: URL_WITH_KEY, name: 'a' }], fetch: answer } as never);
    // The answer carries the request's id: the provider refuses one of another request.
  const echo = async (_url: string, init: { body: string }) => new Response(JSON.stringify({ jsonrpc: '2.0', id: (JSON.parse(init.body) as { id: number }).id, result: '0x1' }));
  const p = new PooledJsonRpcProvider({ endpoints: [{ url: URL_WITH_KEY, name: 'a' }], network: 1, fetch: echo } as never);
    for (const init of [5, 'x', true]) await expect(f('/x', init as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'init' });
    await expect(f('/x', null as never)).resolves.toBeInstanceOf(Response); // as fetch reads it: no init
    for (const m of [5, null, '']) await expect(p.sendWith(m as never, [])).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'method' });
    for (const prm of [5, null, 'x']) await expect(p.sendWith('eth_blockNumber', prm as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'params' });
    p.destroy();
    await Promise.all([f.pool.close(), p.pool.close()]);
  });

  test('classifyResponse: something that is not a Response is INVALID_OPTIONS naming res, not a TypeError on its headers', () => {
    for (const res of [{}, { status: 503 }, null, 5, { status: '503', headers: new Headers() }]) {
      expect(() => classifyResponse(res as never)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'res' }));
    }
    expect(classifyResponse(new Response('x', { status: 429, headers: { 'retry-after': '2' } }))).toMatchObject({ class: 'rate-limited', retryAfterMs: 2000 });
  });

  test('viem withEndpoint: a function that is not one is INVALID_OPTIONS naming fn', async () => {
    const t2 = poolTransport({ endpoints: [{ name: 'a', transport: custom(eth) }] });
    for (const fn of [5, null, 'f']) await expect(t2.withEndpoint(fn as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'fn' });
    await t2.pool.close();
  });
});

describe('the shipped classifiers, fed garbage', () => {
  const anything = fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withNullPrototype: true, withBoxedValues: true, withSparseArray: true });
  const errorLike = fc.record({ message: anything, code: anything, status: anything, cause: anything, details: anything, shortMessage: anything, name: anything, data: anything, error: anything, info: anything }, { requiredKeys: [] });
  test.each([
    ['classifyFetchError', classifyFetchError],
    ['classifyViemError', (e: unknown) => classifyViemError(e)],
    ['classifyEthersError', (e: unknown) => classifyEthersError(e)],
    ['classifyApiKeyMessage', classifyApiKeyMessage],
  ] as const)('%s never throws, whatever it is given', (_name, classify) => {
    fc.assert(
      fc.property(fc.oneof(anything, errorLike, errorLike.map((r) => Object.assign(new Error('x'), r))), (x) => {
        classify(x);
      }),
      params,
    );
  });
});
