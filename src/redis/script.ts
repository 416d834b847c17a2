/**
 * Runs a Lua script through a `RedisCommander`: `SCRIPT LOAD` once (single-flight), then
 * `EVALSHA`; when Redis answers `NOSCRIPT` (it restarted, or someone ran `SCRIPT FLUSH`),
 * the same call is sent again as `EVAL`, which also puts the script back in Redis's cache.
 *
 * Contract: `run` never throws. It rejects with a `RedisStoreError` when the client throws
 * or returns a non-promise, when Redis answers with an error, or at once when `maxPending`
 * commands are already waiting on the client (a stuck client must not pile up promises).
 */
import type { RedisCommander } from './client.js';
import { RedisStoreError } from './errors.js';

export class LuaScript {
  readonly #client: RedisCommander;
  readonly #source: string;
  readonly #maxPending: number;
  #sha: string | undefined;
  #loading: Promise<string> | undefined;
  #pending = 0;

  constructor(client: RedisCommander, source: string, maxPending: number) {
    this.#client = client;
    this.#source = source;
    this.#maxPending = maxPending;
  }

  /** Commands sent and not answered yet. */
  get pending(): number {
    return this.#pending;
  }

  run(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    if (this.#pending >= this.#maxPending) {
      return Promise.reject(new RedisStoreError('STORE_BUSY', `${this.#pending} Redis commands are still waiting for an answer`));
    }
    this.#pending++;
    const done = this.#run(keys, args);
    done.then(this.#settle, this.#settle);
    return done;
  }

  readonly #settle = (): void => {
    this.#pending--;
  };

  async #run(keys: readonly string[], args: readonly string[]): Promise<unknown> {
    const tail = [String(keys.length), ...keys, ...args];
    const sha = this.#sha ?? (await this.#load());
    try {
      return await this.#send(['EVALSHA', sha, ...tail]);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.#send(['EVAL', this.#source, ...tail]);
    }
  }

  #load(): Promise<string> {
    this.#loading ??= this.#send(['SCRIPT', 'LOAD', this.#source]).then(
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

  /** One command, with every way a client can misbehave turned into a rejection. */
  #send(args: readonly string[]): Promise<unknown> {
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
      if (error instanceof RedisStoreError) throw error;
      throw new RedisStoreError('STORE_REPLY', `Redis command ${args[0]} failed`, error);
    });
  }
}

function isNoScript(error: unknown): boolean {
  const cause = error instanceof RedisStoreError ? error.cause : error;
  const message = (cause as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.includes('NOSCRIPT');
}
