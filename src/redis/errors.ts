/**
 * Errors of the Redis store. They never reach a caller of `pool.execute`: the pool treats
 * a failed `acquire` as "store unavailable" and degrades. They show up as the `error` of a
 * `store-degraded` event, and from the health API's `onError`.
 */

export type RedisStoreErrorCode =
  /** The client threw, or returned something other than a promise. */
  | 'STORE_CLIENT'
  /** The client is not connected (and fails commands instead of queueing them). */
  | 'STORE_OFFLINE'
  /** Redis answered with an error, or with a reply the store did not expect. */
  | 'STORE_REPLY'
  /** Too many commands are waiting on the client (`maxPending`): it looks stuck. */
  | 'STORE_BUSY'
  /** A command went unanswered for `commandTimeoutMs`. */
  | 'STORE_TIMEOUT';

export class RedisStoreError extends Error {
  override readonly name = 'RedisStoreError' as const;
  readonly code: RedisStoreErrorCode;

  constructor(code: RedisStoreErrorCode, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
  }
}
