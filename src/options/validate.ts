/**
 * The checks every concern's option resolver is built from. Each throws a `PoolError` with
 * code `INVALID_OPTIONS` whose message names the field, what was expected and what was
 * given (values described, never echoed when they could be secrets).
 */
import { PoolError, invalidOption } from '../base/errors.js';

export function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw invalidOption(field, `one of ${allowed.map((a) => `'${a}'`).join(', ')}`, value);
}

/** A finite number >= min (or > min when `exclusive`). */
export function finite(field: string, value: unknown, fallback: number, min = 0, exclusive = false): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || (exclusive ? value <= min : value < min)) {
    throw invalidOption(field, `a finite number ${exclusive ? '>' : '>='} ${min}`, value);
  }
  return value;
}

/** Like `finite`, but `Infinity` is allowed (meaning "no limit"). */
export function durationOrInfinity(field: string, value: unknown, fallback: number): number {
  if (value === Infinity) return value;
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
    throw invalidOption(field, 'a number of milliseconds > 0, or Infinity', value);
  }
  return value;
}

export function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw invalidOption(field, 'a positive integer', value);
  }
  return value;
}

/** A positive integer or `Infinity` (meaning "unbounded"). */
export function limitOrInfinity(field: string, value: unknown): number {
  if (value === undefined || value === Infinity) return Infinity;
  return positiveInteger(field, value, 0);
}

export function plainObject(field: string, value: unknown): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidOption(field, 'an object', value);
  return value as Record<string, unknown>;
}

/** `value`, which must be a function (or `undefined` when `optional`). */
/** An object with these methods (a Clock, a MetricsSink, ...). */
export function withMethods(field: string, value: unknown, methods: readonly string[], expected: string): unknown {
  const o = value as Record<string, unknown> | null;
  if (typeof o !== 'object' || o === null || methods.some((m) => typeof o[m] !== 'function')) throw invalidOption(field, expected, value);
  return value;
}

/** Labels or attributes: an object of names to string values, if given. */
export function stringRecord(field: string, value: unknown, expected: string): void {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value) || Object.values(value).some((v) => typeof v !== 'string'))) throw invalidOption(field, expected, value);
}

export function checkFunction(field: string, value: unknown, optional: boolean): unknown {
  if (!(value === undefined && optional) && typeof value !== 'function') throw invalidOption(field, 'a function', value);
  return value;
}

/** A percentage from 0 to 100. */
export function percent(field: string, value: unknown): number {
  const v = finite(field, value, 0);
  if (v > 100) throw invalidOption(field, 'a percentage from 0 to 100', v);
  return v;
}

/**
 * The keys an options object may have, as a record so that TypeScript checks it against
 * the option interface (`Record<keyof X, true>`): a field added to the interface and not
 * here fails to compile instead of being rejected at run time.
 */
export type KnownKeys = Readonly<Record<string, true>>;

const has = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

/**
 * Rejects a key that is not an option (a typo like `threshhold`, or `retries`): a
 * misspelt option silently left at its default is worse than an error. The message names
 * the nearest valid option, or the one `aliases` maps a common guess to.
 */
export function checkKeys(field: string, o: Record<string, unknown>, known: KnownKeys, aliases?: Readonly<Record<string, string>>): void {
  for (const key in o) {
    if (!has(known, key)) throw unknownOption(field, key, Object.keys(known), aliases);
  }
}

/** The `INVALID_OPTIONS` error for an unknown key, naming the nearest valid option. */
export function unknownOption(field: string, key: string, valid: readonly string[], aliases?: Readonly<Record<string, string>>): PoolError {
  const path = field === 'options' ? key : `${field}.${key}`;
  const hint = (aliases !== undefined && has(aliases, key) ? aliases[key] : undefined) ?? nearest(key, valid);
  // An alias is an option's name, or (with a space in it) a sentence saying what to do instead.
  const tail = hint === undefined ? `valid options are ${valid.map((k) => `'${k}'`).join(', ')}` : hint.includes(' ') ? hint : `did you mean '${hint}'?`;
  return new PoolError('INVALID_OPTIONS', `${path}: unknown option; ${tail}`, { field: path });
}

/** `plainObject` plus `checkKeys`. */
export function optionsObject(field: string, value: unknown, known: KnownKeys, aliases?: Readonly<Record<string, string>>): Record<string, unknown> | undefined {
  const o = plainObject(field, value);
  if (o !== undefined) checkKeys(field, o, known, aliases);
  return o;
}

/** The candidate closest to `key` (case-insensitive), if close enough to be a typo. */
export function nearest(key: string, candidates: readonly string[]): string | undefined {
  const k = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const lc = c.toLowerCase();
    // One containing the other ("timeout" in "timeoutMs") reads as the same word.
    const d = lc.includes(k) || k.includes(lc) ? 1 : editDistance(k, lc);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

/** Levenshtein distance with adjacent swaps counted once (optimal string alignment), two rows back. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      let v = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      // At i or j = 1 one side reads index -1 (undefined), so no swap is seen there.
      if (a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, before[j - 2]! + 1);
      row.push(v);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length]!;
}
