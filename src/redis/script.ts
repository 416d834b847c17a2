/**
 * How the Redis parts talk to the client.
 *
 * `Connection` sends one command and turns every way a client can misbehave into a
 * rejection with a `RedisStoreError`: it never throws; it rejects when the client throws or
 * returns a non-promise, when Redis answers with an error, and at once when `maxPending`
 * commands are already waiting (a stuck client must not pile up promises).
 *
 * A client that refuses to send while disconnected is reported as `STORE_OFFLINE`. A command
 * still unanswered after `timeoutMs` fails as `STORE_TIMEOUT` and no longer counts as waiting;
 * its reply, if one ever comes, is dropped. The parts keep one command at a time for some things
 * (an admission per key, the script's loading, a health view's fetch): without this bound, a
 * client that lost one reply (its connection died silently, a hand-written client dropped it)
 * held that thing for good, and Redis was never asked for it again.
 *
 * `LuaScript` runs a script: `SCRIPT LOAD` once (single-flight), then `EVALSHA`; when Redis
 * answers `NOSCRIPT` (it restarted, or someone ran `SCRIPT FLUSH`), the same call is sent
 * again as `EVAL`, which also puts the script back in Redis's cache.
 */
import type { Clock } from '../base/clock.js';
import type { RedisCommander } from './client.js';
import { RedisStoreError } from './errors.js';

export class Connection {
  readonly #client: RedisCommander;
  readonly #maxPending: number;
  readonly #timeoutMs: number;
  readonly #clock: Clock;
  #pending = 0;

  constructor(client: RedisCommander, maxPending: number, timeoutMs: number, clock: Clock) {
    this.#client = client;
    this.#maxPending = maxPending;
    this.#timeoutMs = timeoutMs;
    this.#clock = clock;
  }

  /** Commands sent and not answered yet. */
  get pending(): number {
    return this.#pending;
  }

  send(args: readonly string[]): Promise<unknown> {
    return this.op(() => this.raw(args));
  }

  /** Runs one operation (possibly several commands) counted as one pending command. */
  op<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#pending >= this.#maxPending) {
      return Promise.reject(new RedisStoreError('STORE_BUSY', `${this.#pending} Redis commands are still waiting for an answer`));
    }
    this.#pending++;
    return this.bounded(fn(), () => void this.#pending--);
  }

  /**
   * `p`, or a `STORE_TIMEOUT` rejection once `timeoutMs` has passed without an answer (never,
   * with `Infinity`); `done` runs once, when either comes first.
   */
  bounded<T>(p: Promise<T>, done?: () => void): Promise<T> {
    const clock = this.#clock;
    const ms = this.#timeoutMs;
    return new Promise<T>((resolve, reject) => {
      let open = true;
      const end = (): boolean => {
        if (!open) return false;
        open = false;
        if (timer !== undefined) clock.clearTimeout(timer);
        done?.();
        return true;
      };
      const timer = ms === Infinity ? undefined : clock.setTimeout(() => void (end() && reject(new RedisStoreError('STORE_TIMEOUT', `no answer from Redis within ${ms} ms (commandTimeoutMs)`))), ms, true);
      p.then(
        (value) => void (end() && resolve(value)),
        (error: unknown) => void (end() && reject(error)),
      );
    });
  }

  /** One command, not counted. */
  raw(args: readonly string[]): Promise<unknown> {
    let reply: unknown;
    try {
      reply = this.#client.send(args);
    } catch (error) {
      return Promise.reject(new RedisStoreError('STORE_CLIENT', 'the Redis client threw', error));
    }
    if (typeof (reply as PromiseLike<unknown> | null)?.then !== 'function') {
      return Promise.reject(new RedisStoreError('STORE_CLIENT', 'the Redis client did not return a promise'));
    }
    return Promise.resolve(reply).catch((error: unknown) => {
      if (isOffline(error)) throw new RedisStoreError('STORE_OFFLINE', 'the Redis client is not connected (it fails commands while offline instead of queueing them)', error);
      throw new RedisStoreError('STORE_REPLY', `Redis command ${args[0]} failed`, error);
    });
  }
}

export class LuaScript {
  readonly #conn: Connection;
  readonly #source: string;
  #sha: string | undefined;
  #loading: Promise<string> | undefined;

  constructor(conn: Connection, source: string) {
    this.#conn = conn;
    this.#source = source;
  }

  /** Counted as one pending command on the connection, the script's loading included. */
  run(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.#conn.op(() => this.#run(keys, args));
  }

  /** Whether the last run answered in one round trip (no SCRIPT LOAD, no NOSCRIPT retry). */
  get lastRunDirect(): boolean {
    return this.#direct;
  }

  #direct = false;

  async #run(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args];
    this.#direct = this.#sha !== undefined;
    const sha = this.#sha ?? (await this.#load());
    try {
      return await this.#conn.raw(['EVALSHA', sha, ...tail]);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      this.#direct = false;
      return this.#conn.raw(['EVAL', this.#source, ...tail]);
    }
  }

  #load(): Promise<string> {
    // Bounded on its own: every run waits on the one load, and a load that never settled held them all.
    this.#loading ??= this.#conn.bounded(this.#conn.raw(['SCRIPT', 'LOAD', this.#source])).then(
      (sha) => {
        this.#loading = undefined;
        if (typeof sha !== 'string' || !/^[0-9a-f]{40}$/.test(sha)) throw new RedisStoreError('STORE_REPLY', 'SCRIPT LOAD did not answer with a SHA1');
        this.#sha = sha;
        return sha;
      },
      (error: unknown) => {
        // Let the next call try again rather than remembering a failure.
        this.#loading = undefined;
        throw error;
      },
    );
    return this.#loading;
  }
}

function isNoScript(error: unknown): boolean {
  const cause = error instanceof RedisStoreError ? error.cause : error;
  const message = (cause as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.includes('NOSCRIPT');
}

/**
 * The client refused to send because it is not connected: ioredis with
 * `enableOfflineQueue: false` ("Stream isn't writeable…") or after `disconnect()`
 * ("Connection is closed."), node-redis with `disableOfflineQueue` (`ClientOfflineError`)
 * or closed (`ClientClosedError`). Redis error replies never look like these.
 */
function isOffline(error: unknown): boolean {
  const e = error as { name?: unknown; message?: unknown } | null;
  const name = typeof e?.name === 'string' ? e.name : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  return (
    name === 'ClientOfflineError' ||
    name === 'ClientClosedError' ||
    /Stream isn't writeable|enableOfflineQueue|^Connection is closed|The client is closed|client is offline/i.test(message)
  );
}
