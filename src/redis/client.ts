/**
 * The only thing the Redis store needs from a client: send one command, get its reply.
 *
 * `endpoint-pool/redis` bundles and imports no Redis client. You hand it your own, through
 * this structural interface, so the package stays dependency-free and works with whatever
 * client (and version) your application already runs. Two adapters cover the common
 * clients; anything else is a three-line object.
 *
 * For the pool to degrade quickly when Redis is down, the client should fail commands at
 * once while disconnected instead of queueing them: ioredis `enableOfflineQueue: false`,
 * node-redis `disableOfflineQueue: true`. A queued command is replayed on reconnection
 * and counts an admission nobody uses (harmless, but it eats the fleet's quota).
 */

/** Sends one Redis command given as its words, e.g. `['EVALSHA', sha, '2', 'k1', 'k2', 'bucket']`. */
export interface RedisCommander {
  /**
   * Resolves with the reply as the client decodes it (integers as numbers, bulk strings as
   * strings, arrays as arrays, nil as `null`); rejects with the client's error for an
   * error reply (its message starting with the Redis error code, e.g. `NOSCRIPT …`).
   */
  send(args: readonly string[]): Promise<unknown>;
}

/** The part of an ioredis (v4, v5) `Redis` or `Cluster` instance the adapter uses. */
export interface IoredisLike {
  call(command: string, ...args: string[]): Promise<unknown>;
}

/** The part of a node-redis v4 client the adapter uses. */
export interface NodeRedisLike {
  sendCommand(args: string[]): Promise<unknown>;
}

/**
 * Adapts an ioredis client.
 * @example createRedisStore(fromIoredis(new Redis({ enableOfflineQueue: false })))
 */
export function fromIoredis(client: IoredisLike): RedisCommander {
  if (typeof client?.call !== 'function') throw new TypeError('fromIoredis: expected an ioredis client (with a call() method)');
  return { send: (args) => client.call(args[0]!, ...args.slice(1)) };
}

/**
 * Adapts a node-redis v4 client (already connected).
 * @example createRedisStore(fromNodeRedis(createClient({ disableOfflineQueue: true })))
 */
export function fromNodeRedis(client: NodeRedisLike): RedisCommander {
  if (typeof client?.sendCommand !== 'function') throw new TypeError('fromNodeRedis: expected a node-redis v4 client (with a sendCommand() method)');
  return { send: (args) => client.sendCommand([...args]) };
}
