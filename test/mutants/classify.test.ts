/**
 * Twenty-seventh session, mutation run of `src/base/classify.ts`: what the pool keeps of a
 * classifier's answer (bench/notes/mutation-s27.md). Generated answers, hints of every kind.
 */
import { describe, expect, test } from 'vitest';
import { isErrorClass, runClassifier, TAKES_ATTEMPT, type Classifier, type Verdict } from '../../src/base/classify.js';
import { seeded } from '../helpers/prng.js';

/**
 * A verdict object that carries every hint from an earlier answer, made by the pool's own code
 * (a verdict's internal fields are shortened in the mangled run, scripts/mangle.mjs: a test does
 * not spell them; it reads validity from `problem`, set only for an answer that is not valid).
 */
const fresh = (): Verdict =>
  runClassifier(() => ({ class: 'rate-limited', retryAfterMs: 1, ceilingPerSecond: 1, ceilingScope: 'key', dailyQuotaExhausted: true, disableEndpoint: true }), new Error('x'), {} as Verdict);
const CLASSES = ['transient', 'permanent', 'rate-limited', 'retry-narrower', 'unsupported', 'unauthorized'];
const NUMBERS: unknown[] = [0, -0, 1, 0.5, 2500, -1, -0.001, Number.NaN, Infinity, -Infinity, 1e300, '5', null, undefined, {}, 5n];

describe('a classifier’s hints', () => {
  test('generated answers: a number hint is kept only when finite and not negative (a ceiling only when above zero), a scope only when key or group, flags only when true', () => {
    const rand = seeded(2026120710);
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    for (let i = 0; i < 3_000; i++) {
      const answer = {
        class: pick(CLASSES),
        retryAfterMs: pick(NUMBERS),
        ceilingPerSecond: pick(NUMBERS),
        ceilingScope: pick(['key', 'group', 'account', '', undefined, null, 1]),
        dailyQuotaExhausted: pick([true, false, 'true', 1, undefined]),
        disableEndpoint: pick([true, false, 'yes', 1, undefined]),
      };
      const v = runClassifier(() => answer as never, new Error('x'), fresh());
      const ok = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;
      const ctx = JSON.stringify(answer, (_, x: unknown) => (typeof x === 'bigint' ? `${x}n` : typeof x === 'number' && !Number.isFinite(x) ? String(x) : x));
      expect(v.problem, ctx).toBeUndefined();
      expect(v.class, ctx).toBe(answer.class);
      expect(v.retryAfterMs, ctx).toBe(ok(answer.retryAfterMs) ? answer.retryAfterMs : undefined);
      expect(v.ceilingPerSecond, ctx).toBe(ok(answer.ceilingPerSecond) && (answer.ceilingPerSecond as number) > 0 ? answer.ceilingPerSecond : undefined);
      expect(v.ceilingScope, ctx).toBe(answer.ceilingScope === 'key' || answer.ceilingScope === 'group' ? answer.ceilingScope : undefined);
      expect(v.dailyQuotaExhausted, ctx).toBe(answer.dailyQuotaExhausted === true);
      expect(v.disableEndpoint, ctx).toBe(answer.disableEndpoint === true);
    }
  });

  test('a bare class clears every hint a verdict object carried from before', () => {
    const v = runClassifier(() => 'transient', new Error('x'), fresh());
    expect(v).toMatchObject({ class: 'transient', retryAfterMs: undefined, ceilingPerSecond: undefined, ceilingScope: undefined, dailyQuotaExhausted: false, disableEndpoint: false });
    expect(v.problem).toBeUndefined();
  });

  test('only strings are classes', () => {
    for (const c of CLASSES) expect(isErrorClass(c)).toBe(true);
    for (const x of [undefined, null, 1, {}, ['transient'], { toString: () => 'transient' }, 'Transient', 'has']) expect(isErrorClass(x)).toBe(false);
  });

  test('a user’s classifier gets the error alone; only one marked as an adapter’s gets the attempt too', () => {
    const seen: unknown[][] = [];
    const user: Classifier = (...args: unknown[]) => (seen.push(args), 'transient');
    runClassifier(user, 'e1', fresh(), { endpoint: 'a' });
    const adapter = Object.assign((...args: unknown[]) => (seen.push(args), 'transient' as const), { [TAKES_ATTEMPT]: true as const });
    runClassifier(adapter as Classifier, 'e2', fresh(), { endpoint: 'b' });
    runClassifier(adapter as Classifier, 'e3', fresh());
    expect(seen).toEqual([['e1'], ['e2', { endpoint: 'b' }], ['e3']]);
  });
});
