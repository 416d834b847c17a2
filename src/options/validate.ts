/**
 * The checks every concern's option resolver is built from. Each throws a `PoolError` with
 * code `INVALID_OPTIONS` whose message names the field, what was expected and what was
 * given (values described, never echoed when they could be secrets).
 */
import { invalidOption } from '../base/errors.js';

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
  if (value === Number.POSITIVE_INFINITY) return value;
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
  if (value === undefined || value === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY;
  return positiveInteger(field, value, 0);
}

export function plainObject(field: string, value: unknown): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidOption(field, 'an object', value);
  return value as Record<string, unknown>;
}

export function checkFunction(field: string, value: unknown, optional: boolean): void {
  if (value === undefined && optional) return;
  if (typeof value !== 'function') throw invalidOption(field, 'a function', value);
}

/** A percentage from 0 to 100. */
export function percent(field: string, value: unknown): number {
  const v = finite(field, value, 0);
  if (v > 100) throw invalidOption(field, 'a percentage from 0 to 100', v);
  return v;
}
