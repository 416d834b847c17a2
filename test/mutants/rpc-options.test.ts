/**
 * The RPC read layer's options and its coalescer's edges (src/rpc/reads.ts, coalesce.ts),
 * where the twenty-eighth session's first mutation run of src/rpc found no test holding:
 * every shape of `quorum` and `coalesce` it refuses, the field each error names, what the
 * request key tells apart, a caller already aborted, a start that throws.
 */
import { describe, expect, test } from 'vitest';
import { Pool } from '../../src/index.js';
import { RpcReads } from '../../src/rpc/reads.js';
import fc from 'fast-check';
import { Coalescer, requestKey } from '../../src/rpc/coalesce.js';
import { stableJson } from '../../src/rpc/redact.js';
import { nearHeights, sameAnswer } from '../../src/rpc/agree.js';
import { redactUrls } from '../../src/rpc/redact.js';
import { rpcAnswerKey } from '../../src/rpc/answer-key.js';
import { PoolError } from '../../src/index.js';
import { thrown } from './thrown.js';

const pool = new Pool<number>({ endpoints: [{ name: 'a', conn: 1 }], classify: () => 'transient' });


describe('RpcReads options', () => {
  test.each([
    ['quorum null', { quorum: null }, 'quorum', /an object \(\{ methods, weights, equals \}\)/],
    ['quorum a number', { quorum: 3 }, 'quorum', /an object/],
    ['a quorum on a send', { quorum: { methods: { eth_sendRawTransaction: 2 } } }, 'quorum.methods.eth_sendRawTransaction', /a read method \(quorum is never used for sends\)/],
    ['a quorum weight of 0', { quorum: { methods: { eth_blockNumber: 0 } } }, 'quorum.methods.eth_blockNumber', /a quorum weight > 0/],
    ['a quorum weight that is text', { quorum: { methods: { eth_blockNumber: '2' } } }, 'quorum.methods.eth_blockNumber', /a quorum weight > 0/],
    ['a negative endpoint weight', { quorum: { weights: { a: -1 } } }, 'quorum.weights.a', /a finite number >= 0/],
    ['an infinite endpoint weight', { quorum: { weights: { a: Number.POSITIVE_INFINITY } } }, 'quorum.weights.a', /a finite number >= 0/],
    ['an endpoint weight that is text', { quorum: { weights: { a: '1' } } }, 'quorum.weights.a', /a finite number >= 0/],
    ['equals not a function', { quorum: { equals: true } }, 'quorum.equals', /a function \(a, b, method\) => boolean/],
    ['stallMs negative', { quorum: { stallMs: -1 } }, 'quorum.stallMs', /a number of milliseconds >= 0, or Infinity/],
    ['stallMs NaN', { quorum: { stallMs: Number.NaN } }, 'quorum.stallMs', /milliseconds/],
    ['stallMs text', { quorum: { stallMs: '5' } }, 'quorum.stallMs', /milliseconds/],
    ['coalesce not a list', { coalesce: 'eth_call' }, 'coalesce', /an array of method names/],
    ['a send in coalesce', { coalesce: ['eth_call', 'eth_sendRawTransaction'] }, 'coalesce[1]', /a read method name \(sends are never coalesced\)/],
  ] as [string, object, string, RegExp][])('%s: INVALID_OPTIONS naming %s', (_name, options, field, message) => {
    const e = thrown(() => new RpcReads(options as never, pool));
    expect(e?.code).toBe('INVALID_OPTIONS');
    expect(e?.field).toBe(field);
    expect(e?.message).toMatch(message);
  });

  test('what it accepts: a weight of 0, stallMs 0 and Infinity, an empty quorum', () => {
    for (const options of [{ quorum: { weights: { a: 0 } } }, { quorum: { stallMs: 0 } }, { quorum: { stallMs: Number.POSITIVE_INFINITY } }, { quorum: {} }, { coalesce: [] }]) {
      expect(thrown(() => new RpcReads(options as never, pool))).toBeUndefined();
    }
  });
});

describe('the coalescer', () => {
  test('the request key tells apart what routes a read differently, and nothing else', () => {
    const k = (...r: (string | number | undefined)[]) => requestKey('eth_call', [{ to: '0x1', data: '0x' }, 'latest'], ...r);
    expect(k('a', 2)).not.toBe(k('a', 3));
    expect(k(undefined, 2)).not.toBe(k('undefined', 2));
    expect(k('ab')).not.toBe(k('a', 'b'));
    expect(k(undefined)).toBe(k(undefined));
  });

  test('the request key: object keys in any order are one read; a bigint and its text are two', () => {
    const k = (params: unknown) => requestKey('eth_call', params, 'a');
    expect(k([{ to: '0x1', data: '0x' }, 'latest'])).toBe(k([{ data: '0x', to: '0x1' }, 'latest']));
    expect(k([{ to: '0x1', n: { b: 1, a: 2 } }])).toBe(k([{ n: { a: 2, b: 1 }, to: '0x1' }]));
    expect(k([1n])).not.toBe(k(['1n']));
    expect(k([1n])).not.toBe(k(['1']));
    expect(k([1n])).not.toBe(k([1]));
    expect(k([1n])).not.toBe(k([2n]));
    expect(k([1, 2])).not.toBe(k([12]));
    expect(k(['0x1', '0x2'])).not.toBe(k(['0x2', '0x1']));
    // As JSON: undefined is left out of an object and is null in an array; toJSON is used.
    expect(k([{ to: '0x1', gas: undefined }])).toBe(k([{ to: '0x1' }]));
    expect(k([undefined])).toBe(k([null]));
    expect(k([{ toJSON: () => '0x5' }])).toBe(k(['0x5']));
    const cyclic: Record<string, unknown> = { to: '0x1' };
    cyclic['self'] = cyclic;
    expect(() => k([cyclic])).toThrow(TypeError);
    // The same object twice is not a cycle.
    const shared = { a: 1 };
    expect(k([shared, shared])).toBe(k([{ a: 1 }, { a: 1 }]));
  });

  test('the canonical text, over generated JSON values: the same value with its keys in any order gives one text; different values give different texts', () => {
    // The oracle: JSON text of the value with every object's keys sorted.
    const sorted = (v: unknown): unknown =>
      Array.isArray(v) ? v.map(sorted) : typeof v === 'object' && v !== null ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Record<string, unknown>)[k])])) : v;
    const oracle = (v: unknown): string => JSON.stringify(sorted(JSON.parse(JSON.stringify(v))));
    // The same value, each object's keys in an order drawn from `seed`.
    const shuffled = (v: unknown, seed: number): unknown => {
      if (Array.isArray(v)) return v.map((x, i) => shuffled(x, seed + i));
      if (typeof v !== 'object' || v === null) return v;
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i > 0; i--) {
        const j = (seed * 31 + i * 17) % (i + 1);
        [keys[i], keys[j]] = [keys[j]!, keys[i]!];
      }
      return Object.fromEntries(keys.map((k, i) => [k, shuffled((v as Record<string, unknown>)[k], seed + i + 1)]));
    };
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.nat(1000), (a, b, seed) => {
        expect(stableJson(shuffled(a, seed))).toBe(stableJson(a));
        expect(stableJson(a) === stableJson(b)).toBe(oracle(a) === oracle(b));
      }),
      { seed: 20261207, numRuns: 2000 },
    );
  });

  test('sameAnswer over generated JSON values: key order and fields only one side has never matter; anything else does', () => {
    // The oracle: both values cut to the fields both have (at every depth), then compared as sorted JSON text.
    const shared = (a: unknown, b: unknown): [unknown, unknown] => {
      if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
        const pairs = a.map((x, i) => shared(x, b[i]));
        return [pairs.map((p) => p[0]), pairs.map((p) => p[1])];
      }
      if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && !Array.isArray(a) && !Array.isArray(b)) {
        const keys = Object.keys(a).filter((k) => Object.hasOwn(b, k)).sort();
        const pairs = keys.map((k) => shared((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
        return [Object.fromEntries(keys.map((k, i) => [k, pairs[i]![0]])), Object.fromEntries(keys.map((k, i) => [k, pairs[i]![1]]))];
      }
      return [a, b];
    };
    const oracle = (a: unknown, b: unknown): boolean => {
      const [x, y] = shared(a, b);
      return stableJson(x) === stableJson(y);
    };
    const extended = (v: unknown, extra: unknown): unknown =>
      Array.isArray(v) ? v.map((x) => extended(x, extra)) : typeof v === 'object' && v !== null ? { ...Object.fromEntries(Object.entries(v).map(([k, x]) => [k, extended(x, extra)])), zzExtra: extra } : v;
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.jsonValue(), (a, b, extra) => {
        expect(sameAnswer(a, b)).toBe(oracle(a, b));
        expect(sameAnswer(a, b)).toBe(sameAnswer(b, a));
        expect(sameAnswer(a, JSON.parse(JSON.stringify(a)))).toBe(true);
        // An optional field the other answer lacks, at every depth.
        expect(sameAnswer(a, extended(a, extra))).toBe(true);
      }),
      { seed: 20261208, numRuns: 2000 },
    );
    // As in JSON, a field set to undefined is a field not sent, on either side.
    expect(sameAnswer({ a: 1, b: undefined }, { a: 1, b: 2 })).toBe(true);
    expect(sameAnswer({ a: 1, b: 2 }, { a: 1, b: undefined })).toBe(true);
  });

  test('a request whose callers all left and that settles later does not drop the request started after it', async () => {
    const c = new Coalescer();
    let settleFirst!: (v: unknown) => void;
    const left = new AbortController();
    const first = c.run('k', left.signal, () => new Promise((r) => (settleFirst = r)));
    left.abort('gone');
    await expect(first).rejects.toMatchObject({ code: 'ABORTED' });
    let settleSecond!: (v: unknown) => void;
    const second = c.run('k', undefined, () => new Promise((r) => (settleSecond = r)));
    expect(c.stats()).toEqual({ started: 2, joined: 0, inFlight: 1 });
    // The left request ends now (it was aborted, its node answered anyway).
    settleFirst('old');
    await Promise.resolve();
    await Promise.resolve();
    expect(c.stats().inFlight).toBe(1);
    // A caller arriving now joins the second request, not a third one.
    const third = c.run('k', undefined, async () => 'third');
    expect(c.stats()).toEqual({ started: 2, joined: 1, inFlight: 1 });
    settleSecond('new');
    await expect(Promise.all([second, third])).resolves.toEqual(['new', 'new']);
    expect(c.stats().inFlight).toBe(0);
  });

  test('the shared request carries a signal only when its first caller has one (one without never leaves, so neither can the last)', async () => {
    const c = new Coalescer();
    const seen: (AbortSignal | undefined)[] = [];
    let settle!: (v: unknown) => void;
    const first = c.run('k', undefined, (s) => (seen.push(s), new Promise((r) => (settle = r))));
    const joiner = new AbortController();
    const second = c.run('k', joiner.signal, async () => 'unused');
    joiner.abort('gone');
    await expect(second).rejects.toMatchObject({ code: 'ABORTED' });
    settle('v');
    await expect(first).resolves.toBe('v');
    expect(seen).toEqual([undefined]);
    // A first caller with a signal: the request gets one of its own, aborted when every caller has left.
    const caller = new AbortController();
    const third = c.run('j', caller.signal, (s) => (seen.push(s), new Promise(() => {})));
    expect(seen[1]).toBeInstanceOf(AbortSignal);
    expect(seen[1]).not.toBe(caller.signal);
    caller.abort('bye');
    await expect(third).rejects.toMatchObject({ code: 'ABORTED' });
    expect(seen[1]!.aborted).toBe(true);
    expect(seen[1]!.reason).toBe('bye');
  });

  test('a caller already aborted fails at once with ABORTED and its reason, starting nothing', async () => {
    const c = new Coalescer();
    const reason = new Error('gone');
    let started = 0;
    const e = await c.run('k', AbortSignal.abort(reason), async () => void started++).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'ABORTED', message: 'the call was aborted', cause: reason });
    expect(started).toBe(0);
    expect(c.stats().inFlight).toBe(0);
  });

  test('a start that throws rejects its callers, and a later read starts afresh', async () => {
    const c = new Coalescer();
    const boom = new Error('boom');
    await expect(c.run('k', undefined, () => { throw boom; })).rejects.toBe(boom);
    expect(c.stats().inFlight).toBe(0);
    await expect(c.run('k', undefined, async () => 7)).resolves.toBe(7);
  });
});

describe("a node's error answer as a quorum vote (rpcAnswerKey)", () => {
  const failed = (code: 'PERMANENT' | 'RETRY_NARROWER' | 'RETRIES_EXHAUSTED', cause: unknown) => new PoolError(code, 'x', { cause });
  test('a revert is its data, whatever the code and the case of its hex; other errors are code and data', () => {
    const key = (code: number, data?: string) => rpcAnswerKey(failed('PERMANENT', { message: 'outer', cause: { code, message: 'execution reverted', ...(data === undefined ? {} : { data }) } }));
    expect(key(3, '0xABCD')).toBe(key(-32000, '0xabcd'));
    expect(key(3, '0xabcd')).not.toBe(key(3, '0xabce'));
    expect(key(3, '0x')).toBe('revert:0x');
    // Nethermind's older words for the same data (-32015, "VM execution error."), and for none.
    expect(key(-32015, 'Reverted 0xABcd')).toBe('revert:0xabcd');
    expect(key(-32015, 'err: 0xdf2d9b42 (supplied gas 36000000)')).toBe(key(3, '0xdf2d9b42'));
    expect(key(-32015, 'err: revert (supplied gas 36000000)')).toBe('revert:0x');
    expect(key(-32015, 'revert')).toBe('revert:0x');
    // Erigon's revert without data, in its message only (viem's `details`, or the RPC error's `message`).
    expect(key(-32000)).toBe('revert:0x');
    expect(rpcAnswerKey(failed('PERMANENT', { message: 'outer', details: 'Execution reverted', cause: { code: -32000 } }))).toBe('revert:0x');
    expect(rpcAnswerKey(failed('PERMANENT', { code: -32000, message: 'execution reverted: nope' }))).toBe('-32000:');
    expect(rpcAnswerKey(failed('PERMANENT', { code: -32000, message: 'execution reverted', data: 'nothex' }))).toBe('-32000:nothex');
    // Not revert data: the code counts.
    expect(key(-32015, 'err: out of gas (supplied gas 36000000)')).toBe('-32015:err: out of gas (supplied gas 36000000)');
    expect(key(-32015, 'err: 0xdf2d9b42 (supplied gas)')).toBe('-32015:err: 0xdf2d9b42 (supplied gas)');
    expect(key(-32015, 'Reverted 0xabzz')).toBe('-32015:Reverted 0xabzz');
    expect(key(-32015, 'reverted')).toBe('-32015:reverted');
    expect(key(-32015, 'xrevert')).toBe('-32015:xrevert');
    expect(key(-32015, 'Reverted 0xab and more')).toBe('-32015:Reverted 0xab and more');
    expect(rpcAnswerKey(failed('PERMANENT', { code: -32000, message: 'header not found' }))).not.toBe(rpcAnswerKey(failed('PERMANENT', { code: -32602, message: 'header not found' })));
    expect(rpcAnswerKey(failed('RETRY_NARROWER', { code: -32005, message: 'range too wide' }))).toBe('-32005:');
    // Not a node's answer, or no code: no vote.
    expect(rpcAnswerKey(failed('RETRIES_EXHAUSTED', { code: 3, data: '0x' }))).toBeUndefined();
    expect(rpcAnswerKey(failed('PERMANENT', { message: 'no code', data: '0x' }))).toBeUndefined();
    expect(rpcAnswerKey(new Error('plain'))).toBeUndefined();
  });
});

describe('a revert as each client sends it (property)', () => {
  // geth, Erigon, reth: code 3 and the data; Nethermind: -32000 and the data, before that
  // -32015 and the data in words; Erigon before 2025: -32000, no data for a revert without
  // any. Any case of hex. Two answers are one vote exactly when their data is the same.
  const shapes: ((hex: string, gas: number) => Record<string, unknown> | undefined)[] = [
    (hex) => ({ code: 3, message: 'execution reverted', data: hex }),
    (hex) => ({ code: -32000, message: 'execution reverted', data: hex.toUpperCase().replace('0X', '0x') }),
    (hex) => ({ code: -32015, message: 'VM execution error.', data: `Reverted ${hex}` }),
    (hex, gas) => ({ code: -32015, message: 'VM execution error.', data: hex === '0x' ? `err: revert (supplied gas ${gas})` : `err: ${hex} (supplied gas ${gas})` }),
    (hex) => (hex === '0x' ? { code: -32000, message: 'execution reverted' } : undefined),
    (hex) => (hex === '0x' ? { code: -32015, message: 'VM execution error.', data: 'revert' } : undefined),
  ];
  const revert = fc.oneof(fc.constant('0x'), fc.uint8Array({ minLength: 1, maxLength: 40 }).map((b) => `0x${Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')}`));
  test('any two shapes of the same data agree; different data never does (2,000 pairs)', () => {
    fc.assert(
      fc.property(revert, revert, fc.nat(shapes.length - 1), fc.nat(shapes.length - 1), fc.nat(), fc.boolean(), (d1, d2, s1, s2, gas, same) => {
        const b = same ? d1 : d2;
        const x = shapes[s1]!(d1, gas);
        const y = shapes[s2]!(b, gas + 1);
        fc.pre(x !== undefined && y !== undefined);
        const key = (cause: unknown) => rpcAnswerKey(new PoolError('PERMANENT', 'x', { cause: { message: 'outer', cause } }));
        expect(key(x) === key(y)).toBe(d1 === b);
        expect(key(x)).toBe(`revert:${d1}`);
      }),
      { numRuns: 2000, seed: 2026120635 },
    );
  });
});

// Thirty-fourth session's mutation run of agree.ts, answer-key.ts and redact.ts.
describe('agreement and vote keys: the edges', () => {
  test('sameAnswer ends on values that refer to themselves (no parsed answer does): unequal, no stack overflow', () => {
    const a: Record<string, unknown> = { n: 1 };
    a['self'] = a;
    const b: Record<string, unknown> = { n: 1 };
    b['self'] = b;
    expect(sameAnswer(a, b)).toBe(false);
    const deep = (n: number): unknown => (n === 0 ? 'x' : [deep(n - 1)]);
    expect(sameAnswer(deep(40), deep(40))).toBe(true);
  });

  test('nearHeights: two quantities one apart agree; anything else must be the same answer', () => {
    expect(nearHeights('0x10', '0x11')).toBe(true);
    expect(nearHeights('0x10', '0x12')).toBe(false);
    expect(nearHeights(17, 17)).toBe(true);
    expect(nearHeights('pending', 'pending')).toBe(true);
    // Not quantities (a space Number() would forgive, too many digits): compared as they are.
    expect(nearHeights('0x10', ' 0x11')).toBe(false);
    expect(nearHeights('0x10', '0x11 ')).toBe(false);
    expect(nearHeights('0x10000000000000', '0x10000000000001')).toBe(false);
  });

  test('rpcAnswerKey reads the first number code and the first string data down the cause chain, and stops', () => {
    const failed = (cause: unknown) => new PoolError('PERMANENT', 'x', { cause });
    expect(rpcAnswerKey(failed({ code: -32602, cause: { code: 3 } }))).toBe('-32602:');
    expect(rpcAnswerKey(failed({ code: 'CALL_EXCEPTION', cause: { code: 3, data: 'nothex' } }))).toBe('3:nothex');
    expect(rpcAnswerKey(failed({ data: { x: 1 }, cause: { code: 3, data: '0xAB', cause: { data: '0xcd' } } }))).toBe('revert:0xab');
    expect(rpcAnswerKey(failed({ code: 3, data: '0xabzz' }))).toBe('3:0xabzz');
    expect(rpcAnswerKey(failed({ code: 3, cause: null }))).toBe('3:');
    const loop: Record<string, unknown> = { message: 'loop' };
    loop['cause'] = loop;
    expect(rpcAnswerKey(failed(loop))).toBeUndefined();
  });

  test("redactUrls: what a QuorumError's answers carry stays small", () => {
    const long = 'a'.repeat(600);
    expect(redactUrls(long)).toBe(`${'a'.repeat(512)}…(600 chars)`);
    expect(redactUrls('a'.repeat(512))).toBe('a'.repeat(512));
    expect(redactUrls(12n)).toBe('12n');
    expect(redactUrls([[[[[[[1]]]]]]])).toEqual([[[[[['[array of 1]']]]]]]);
    expect(redactUrls({ a: { b: { c: { d: { e: { f: { g: 1 } } } } } } })).toEqual({ a: { b: { c: { d: { e: { f: '[object]' } } } } } });
    const many = redactUrls(Array.from({ length: 40 }, (_, i) => i)) as unknown[];
    expect(many).toHaveLength(33);
    expect(many.at(-1)).toBe('…(8 more)');
    expect(redactUrls(Array.from({ length: 32 }, (_, i) => i))).toHaveLength(32);
    expect(Object.keys(redactUrls(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i]))) as object)).toHaveLength(32);
    expect(redactUrls({ u: 'see https://rpc.example/v2/KEY now', n: null, k: 7 })).toEqual({ u: 'see <url> now', n: null, k: 7 });
  });
});
