/** Validation shared by the Redis store and the health API: checked once, at creation. */
import type { RedisCommander } from './client.js';

export function checkCommander(fn: string, client: unknown): asserts client is RedisCommander {
  if (typeof (client as RedisCommander | null)?.send !== 'function') {
    throw new TypeError(`${fn}: expected a RedisCommander ({ send(args) }); wrap your client with fromIoredis() or fromNodeRedis()`);
  }
}

export function resolvePrefix(fn: string, prefix: unknown): string {
  if (prefix === undefined) return 'endpoint-pool:';
  if (typeof prefix !== 'string') throw new TypeError(`${fn}: prefix: expected a string, got ${typeof prefix}`);
  return prefix;
}
