/**
 * `createRedisStore`: a `LimiterStore` on Redis, so that every process using the same keys
 * shares one per-second limit and one daily count per endpoint (or per group).
 *
 * Each `acquire` is one `EVALSHA` of the admission script (see admit-script.ts): atomic,
 * timed by Redis, nothing written unless the call is admitted, every key with an expiry.
 * Calls of one process that arrive while an admission on the same key is in flight wait
 * for it: refused together (one script run instead of one each), or asked in turn.
 *
 * Failure contract: `acquire` never throws; it returns a promise that rejects when the
 * client throws, returns a non-promise, answers with an error, or already has `maxPending`
 * commands outstanding. The pool bounds each acquire by `sharedQuota.timeoutMs` and, on a
 * rejection or a timeout, carries on at `degradedShare` of each local limit until Redis
 * answers again; a late answer is ignored (it may have counted a call: the fleet errs on
 * the safe side).
 */
import { checkKeys, type KnownKeys } from '../options/validate.js';
import type { LimiterStore, SharedLimit } from '../limits/store.js';
import type { RedisCommander } from './client.js';
import { RedisStoreError } from './errors.js';
import { ADMIT_LUA } from './admit-script.js';
import { Connection, LuaScript } from './script.js';
import { checkCommander, resolvePrefix } from './options.js';

export interface RedisStoreOptions {
  /** Prepended to every key, to keep apart pools (or apps) sharing a Redis. @default 'endpoint-pool:' */
  readonly prefix?: string;
  /** Commands outstanding on the client beyond which `acquire` rejects at once. @default 1000 */
  readonly maxPending?: number;
}

const STORE_OPTION_KEYS: Record<keyof RedisStoreOptions, true> & KnownKeys = { prefix: true, maxPending: true };

export interface RedisStore extends LimiterStore {
  /** The keys holding a limit's state: per-second, then daily. */
  keysOf(limit: SharedLimit): readonly [string, string];
  /** `acquire` calls waiting for Redis. */
  readonly pending: number;
}

interface Prepared {
  readonly keys: readonly [string, string];
  readonly args: readonly string[];
}

/**
 * A shared limiter store on Redis.
 * @example
 * const store = createRedisStore(fromIoredis(redis), { prefix: 'myapp:' });
 * const pool = new Pool({ endpoints, classify, sharedQuota: { store, timeoutMs: 50 } });
 */
export function createRedisStore(client: RedisCommander, options: RedisStoreOptions = {}): RedisStore {
  checkCommander('createRedisStore', client);
  checkKeys('createRedisStore options', options as Record<string, unknown>, STORE_OPTION_KEYS);
  const prefix = resolvePrefix('createRedisStore', options.prefix);
  const maxPending = options.maxPending ?? 1000;
  if (!Number.isInteger(maxPending) || maxPending < 1) throw new TypeError(`createRedisStore: maxPending: expected an integer >= 1, got ${String(maxPending)}`);
  const conn = new Connection(client, maxPending);
  const script = new LuaScript(conn, ADMIT_LUA);
  // A pool hands the same SharedLimit object for every attempt on a quota.
  const prepared = new WeakMap<SharedLimit, Prepared>();

  const prepare = (limit: SharedLimit): Prepared => {
    let p = prepared.get(limit);
    if (p === undefined) {
      p = { keys: keysFor(prefix, limit.key), args: argsFor(limit) };
      prepared.set(limit, p);
    }
    return p;
  };

  // Admissions in flight, per key: a call that arrives while one is out shares its refusal.
  const inflight = new Map<string, Promise<number>>();
  const ask = (key: string, p: Prepared): Promise<number> => {
    const answer = script.run(p.keys, p.args).then(toWaitMs);
    inflight.set(key, answer);
    const done = (): void => {
      if (inflight.get(key) === answer) inflight.delete(key);
    };
    answer.then(done, done);
    return answer;
  };

  return {
    acquire(limit: SharedLimit): Promise<number> {
      let p: Prepared;
      try {
        p = prepare(limit);
      } catch (error) {
        return Promise.reject(error);
      }
      // Concurrent callers on one key would mostly be refused one by one: when the call
      // ahead is refused, so is this one, for as long; when it is admitted, ask for this one.
      const ahead = inflight.get(limit.key);
      // Waiting on it counts as pending too, so a stuck client still hits `maxPending`.
      if (ahead !== undefined) return conn.op(() => ahead.then((waitMs) => (waitMs > 0 ? waitMs : ask(limit.key, p))));
      return ask(limit.key, p);
    },
    keysOf: (limit) => keysFor(prefix, limit.key),
    get pending() {
      return conn.pending;
    },
  };
}

/** Both keys share a hash tag, so they land on one slot of a Redis Cluster. */
function keysFor(prefix: string, key: string): readonly [string, string] {
  return [`${prefix}{${key}}:rate`, `${prefix}{${key}}:day`];
}

function argsFor(limit: SharedLimit): string[] {
  const perSecond = limit.perSecond;
  const mode = perSecond === undefined ? 'none' : limit.mode;
  const burst = limit.burst ?? Math.max(1, Math.ceil(perSecond ?? 1));
  return [mode, String(perSecond ?? 0), String(burst), String(limit.marginMs), String(limit.perDay ?? 0), String(limit.dailyStopFraction), String(limit.dailyResetUtcHour)];
}

function toWaitMs(reply: unknown): number {
  const n = typeof reply === 'number' ? reply : typeof reply === 'string' ? Number(reply) : Number.NaN;
  if (!Number.isFinite(n) || n < 0) throw new RedisStoreError('STORE_REPLY', 'the admission script answered with something other than a wait in ms');
  return n;
}
