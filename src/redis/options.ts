/** Validation shared by the Redis store and the health API: checked once, at creation. */
import type { RedisCommander } from './client.js';
import { PoolError, describe } from '../base/errors.js';
import { systemClock, type Clock } from '../base/clock.js';
import { checkFunction, withMethods } from '../options/validate.js';

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

/** How long a command may go unanswered before it counts as failed, by default. */
export const COMMAND_TIMEOUT_MS = 10_000;

/** `commandTimeoutMs`: a number > 0 (`Infinity`: wait as long as the client does). */
export function resolveCommandTimeout(fn: string, value: unknown): number {
  if (value === undefined) return COMMAND_TIMEOUT_MS;
  if (typeof value !== 'number' || !(value > 0)) throw new PoolError('INVALID_OPTIONS', `${fn}: commandTimeoutMs: expected a number > 0 (Infinity: no bound), got ${describe(value)}`, { field: 'commandTimeoutMs' });
  return value;
}

/** `clock`: a Clock (`now`, `setTimeout`, `clearTimeout`), as the pool's. */
export function resolveClock(value: unknown): Clock {
  return value === undefined ? systemClock : (withMethods('clock', value, ['now', 'setTimeout', 'clearTimeout'], 'a Clock ({ now, setTimeout, clearTimeout })') as Clock);
}

/** `onError`: a function, if given (a string would be ignored in silence where errors are reported). */
export function checkOnError(value: unknown): ((error: unknown) => void) | undefined {
  return checkFunction('onError', value, true) as ((error: unknown) => void) | undefined;
}
