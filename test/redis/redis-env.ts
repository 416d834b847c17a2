/**
 * Shared setup of the Redis tests: a throwaway redis-server per test file (127.0.0.1, a
 * free port, no persistence, stopped by PID in `afterAll`).
 *
 * Without `redis-server` on the PATH the Redis tests are skipped with a message, except in
 * CI (`CI=true`), where a missing server is a failure: CI must run them.
 */
import Redis from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, test } from 'vitest';
import { redisServerAvailable, startRedis, type RedisServerHandle } from '../../scripts/redis-server.mjs';

export type RedisServer = RedisServerHandle;

const available: boolean = redisServerAvailable();
const inCi = process.env['CI'] === 'true';

/**
 * `describe` with a redis-server started for the block. `server()` returns it once started.
 */
export function describeRedis(name: string, body: (server: () => RedisServer) => void): void {
  if (!available) {
    if (inCi) {
      describe(name, () => {
        test('redis-server is installed', () => {
          throw new Error('redis-server is not on the PATH; CI must install it (apt-get install -y redis-server)');
        });
      });
    } else {
      console.warn(`[endpoint-pool] redis-server is not installed: skipping "${name}" (apt-get install -y redis-server to run it)`);
      describe.skip(name, () => body(() => undefined as never));
    }
    return;
  }
  describe(name, () => {
    let server: RedisServer | undefined;
    beforeAll(async () => {
      server = await startRedis();
    });
    afterAll(async () => {
      await server?.stop();
    });
    body(() => server!);
  });
}

/** An ioredis client that fails commands at once while disconnected and reconnects fast. */
export function client(port: number): Redis {
  return new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 100, lazyConnect: false });
}

export async function ready(redis: Redis): Promise<Redis> {
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  return redis;
}

/**
 * Registers the usual hooks for a test file: one connected client for the file, a clean
 * Redis before each test. Returns a getter for the client.
 */
export function useRedis(server: () => RedisServer): () => Redis {
  let redis: Redis | undefined;
  beforeAll(async () => {
    redis = await ready(client(server().port));
  });
  afterAll(() => {
    redis?.disconnect();
  });
  beforeEach(async () => {
    await redis!.flushall();
  });
  return () => redis!;
}
