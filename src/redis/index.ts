/**
 * endpoint-pool/redis: quotas and health shared by every process on the same Redis.
 *
 * No Redis client is bundled or imported: pass your own through `fromIoredis` or
 * `fromNodeRedis` (or any `{ send(args) }`).
 *
 * - `createRedisStore(client)`: a `LimiterStore` for the pool's `sharedQuota` option;
 * - `createRedisHealth(client)`: breaker openings, disabled and parked endpoints published
 *   for the fleet, and one refresher's survivor list shared by all.
 */
export { createRedisStore, type RedisStore, type RedisStoreOptions, type RedisLimitKeys } from './store.js';
export { fromIoredis, fromNodeRedis, type RedisCommander, type IoredisLike, type NodeRedisLike } from './client.js';
export {
  createRedisHealth,
  type RedisHealth,
  type RedisHealthOptions,
  type SharedMark,
  type SharedStatus,
  type SurvivorsOptions,
} from './health.js';
export { RedisStoreError, type RedisStoreErrorCode } from './errors.js';
