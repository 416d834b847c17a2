/** Validation shared by the Redis store and the health API: checked once, at creation. */
import type { RedisCommander } from './client.js';
import { PoolError, describe } from '../base/errors.js';
import { systemClock, type Clock } from '../base/clock.js';

export function checkCommander(fn: string, client: unknown): asserts client is RedisCommander {
  if (typeof (client as RedisCommander | null)?.send !== 'function') {
    throw new TypeError(`${fn}: expected a RedisCommander ({ send(args) }); wrap your client with fromIoredis() or fromNodeRedis()`);
  }
}

/**
 * The prefix becomes the keys' Redis Cluster hash tag (`{prefix}`), so it must be non-empty
 * (an empty tag hashes the whole key) and hold no braces (the tag ends at the first `}`).
 */
export function resolvePrefix(fn: string, prefix: unknown): string {
  if (prefix === undefined) return 'endpoint-pool:';
  if (typeof prefix !== 'string') throw new PoolError('INVALID_OPTIONS', `${fn}: prefix: expected a string, got ${describe(prefix)}`, { field: 'prefix' });
  if (prefix === '' || /[{}]/.test(prefix)) throw new PoolError('INVALID_OPTIONS', `${fn}: prefix: expected a non-empty string without braces (it becomes the keys' hash tag), got ${describe(prefix)}`, { field: 'prefix' });
  return prefix;
}

/** The layout version of every key: bumped when a key's type or meaning changes. */
export const KEY_VERSION = 'v2';

/** `{prefix}v2:<kind>:<name>`: every key of a pool in one Cluster slot, its kind in its name. */
export function keyOf(prefix: string, kind: string, name: string): string {
  return `{${prefix}}${KEY_VERSION}:${kind}:${name}`;
}

/** `maxPending`: an integer >= 1 (commands waiting for an answer before new ones fail at once). */
export function resolveMaxPending(fn: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new PoolError('INVALID_OPTIONS', `${fn}: maxPending: expected an integer >= 1, got ${describe(value)}`, { field: 'maxPending' });
  return value;
}

/** `clock`: a Clock (`now`, `setTimeout`, `clearTimeout`), as the pool's. */
export function resolveClock(fn: string, value: unknown): Clock {
  if (value === undefined) return systemClock;
  const c = value as Record<string, unknown> | null;
  if (typeof c !== 'object' || c === null || typeof c['now'] !== 'function' || typeof c['setTimeout'] !== 'function' || typeof c['clearTimeout'] !== 'function') {
    throw new PoolError('INVALID_OPTIONS', `${fn}: clock: expected a Clock ({ now, setTimeout, clearTimeout }), got ${describe(value)}`, { field: 'clock' });
  }
  return value as Clock;
}

/** `onError`: a function, if given (a string would be ignored in silence where errors are reported). */
export function checkOnError(fn: string, value: unknown): ((error: unknown) => void) | undefined {
  if (value !== undefined && typeof value !== 'function') throw new PoolError('INVALID_OPTIONS', `${fn}: onError: expected a function, got ${describe(value)}`, { field: 'onError' });
  return value as ((error: unknown) => void) | undefined;
}
