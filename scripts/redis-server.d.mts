/** Declarations for scripts/redis-server.mjs (used by the Redis tests). */
export interface RedisServerHandle {
  readonly port: number;
  readonly pid: number;
  kill(signal?: NodeJS.Signals): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}
export function redisServerAvailable(): boolean;
export function freePort(): Promise<number>;
export function startRedis(options?: { port?: number }): Promise<RedisServerHandle>;
