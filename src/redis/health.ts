/**
 * `createRedisHealth`: what one process learns about an endpoint's health, shared with the
 * fleet, so that the others skip a dead endpoint without each discovering it on its own
 * calls; and one refresher's survivor list, so that one health check serves every process.
 *
 * Publishing: pass the pool's events to `publish` (from `onEvent`). A breaker opening is
 * shared for its cooldown, a disabled endpoint for `disabledTtlMs`, a parked one until its
 * reset; a breaker closing or an endpoint enabled clears the mark early. Every mark expires
 * on its own: a crashed process leaves nothing stuck.
 *
 * Reading: `exclude(names)` is synchronous, for `pool.execute(op, { exclude })`. It answers
 * from the last view it fetched and fetches a new one in the background once that view is
 * older than `maxAgeMs`: a call never waits on Redis for it, and with Redis down it simply
 * excludes nothing (the local breakers still decide). It never excludes every one of
 * `names`: when the fleet marks them all, the pool's own breakers decide.
 *
 * Survivors: one health check serves the fleet. The list is published fresh for `ttlMs`
 * and kept stale for `maxStaleMs` more; once it is stale, every process goes on serving it
 * while the one that wins a lock re-checks in the background (stale while revalidate), so
 * no process falls back (to a paid endpoint, say) just because the list aged. `Refresher`
 * takes this object as its `shared` option.
 *
 * Keys: `{prefix}v2:health:marks`, `{prefix}v2:survivors:list|fresh|lock`: the same hash
 * tag as the store's, so a pool's keys live in one Cluster slot.
 *
 * Nothing here throws or rejects: failures go to `onError`.
 */
import { checkKeys, type KnownKeys } from '../options/validate.js';
import type { Clock } from '../base/clock.js';
import { PoolError, describe } from '../base/errors.js';
import type { PoolEvent } from '../base/events.js';
import type { RedisCommander } from './client.js';
import { MARK_LUA, READ_LUA } from './health-script.js';
import { checkCommander, checkOnError, keyOf, resolveClock, resolveCommandTimeout, resolveMaxPending, resolvePrefix } from './options.js';
import { Connection, LuaScript } from './script.js';

/** Why the fleet skips an endpoint: its breaker is open, it is disabled, or its daily quota is spent. */
export type SharedStatus = 'open' | 'disabled' | 'parked';

export interface SharedMark {
  readonly endpoint: string;
  readonly status: SharedStatus;
  /** How long the mark still holds. */
  readonly remainingMs: number;
}

export interface RedisHealthOptions {
  /** Prepended to every key. @default 'endpoint-pool:' */
  readonly prefix?: string;
  /** How long a disabled endpoint stays marked (it may be re-enabled elsewhere). @default 600000 */
  readonly disabledTtlMs?: number;
  /** Age beyond which `exclude()` fetches a new view (in the background). @default 1000 */
  readonly maxAgeMs?: number;
  /** Used to turn `endpoint-parked`'s `untilMs` into a duration, and for the view's age. @default systemClock */
  readonly clock?: Clock;
  /** Receives every Redis failure (they are never thrown). @default none */
  readonly onError?: (error: unknown) => void;
  /** Commands outstanding beyond which new ones fail at once. @default 100 */
  readonly maxPending?: number;
  /** How long a command may go unanswered before it counts as failed (to `onError`, as `STORE_TIMEOUT`). @default 10000 */
  readonly commandTimeoutMs?: number;
}

export interface SurvivorsOptions {
  /** How long a published list is fresh: after it, one process re-checks while the others serve it stale. */
  readonly ttlMs: number;
  /** How long the process that won the refresh has to publish before another may try. @default ttlMs */
  readonly lockMs?: number;
  /** How long past `ttlMs` a list may still be served stale (while nobody manages to re-check). @default 10 × ttlMs */
  readonly maxStaleMs?: number;
}

export interface RedisHealth {
  /** Shares what an event says about an endpoint; ignores other events. Use from `onEvent`. */
  publish(event: PoolEvent): Promise<void>;
  /** Marks an endpoint for the fleet for `ttlMs`. */
  mark(endpoint: string, status: SharedStatus, ttlMs: number): Promise<void>;
  /** Removes a mark (all of an endpoint's marks when `status` is omitted). */
  clear(endpoint: string, status?: SharedStatus): Promise<void>;
  /** The fleet's current marks, read now. Resolves to `[]` when Redis fails. */
  marks(): Promise<SharedMark[]>;
  /** Fetches the view `exclude()` answers from. */
  refresh(): Promise<void>;
  /** Names to skip, from the last view (see the module comment); at most all but one of `names`. */
  exclude(names?: readonly string[]): string[];
  /** Publishes a refresher's list of healthy endpoints (or URLs): fresh for `ttlMs`, served stale for `maxStaleMs` more. */
  publishSurvivors(list: readonly string[], ttlMs: number, maxStaleMs?: number): Promise<void>;
  /** The last published list (fresh or stale), or `undefined` when there is none (or Redis failed). */
  readSurvivors(): Promise<string[] | undefined>;
  /**
   * One health check for the fleet, stale while revalidate: a fresh published list is
   * returned as is. A stale one is returned too, and the one process that wins the lock
   * re-checks in the background and publishes (the others go on with the stale list). With
   * no list at all, the winner runs `check` and returns its result; the others (and every
   * process while Redis fails) get the last list this process saw, else `undefined` (use
   * your fallback until the winner publishes). A failed `check` publishes nothing.
   */
  refreshSurvivors(check: () => Promise<readonly string[]>, options: SurvivorsOptions): Promise<string[] | undefined>;
  /** The background re-check started by the last `refreshSurvivors`, if one runs (for tests and shutdown). */
  readonly revalidating: Promise<void> | undefined;
}

const STATUSES: readonly SharedStatus[] = ['open', 'disabled', 'parked'];

/**
 * Shared health on Redis.
 * @example
 * const health = createRedisHealth(fromIoredis(redis));
 * const pool = new Pool({ endpoints, classify, onEvent: (e) => void health.publish(e) });
 * await pool.execute(op, { exclude: health.exclude(pool.endpointNames) });
 */
const HEALTH_OPTION_KEYS: Record<keyof RedisHealthOptions, true> & KnownKeys = {
  prefix: true,
  disabledTtlMs: true,
  maxAgeMs: true,
  clock: true,
  onError: true,
  maxPending: true,
  commandTimeoutMs: true,
};

export function createRedisHealth(client: RedisCommander, options: RedisHealthOptions = {}): RedisHealth {
  checkCommander('createRedisHealth', client);
  checkKeys('createRedisHealth options', options as Record<string, unknown>, HEALTH_OPTION_KEYS);
  const prefix = resolvePrefix('createRedisHealth', options.prefix);
  const disabledTtlMs = positive('disabledTtlMs', options.disabledTtlMs, 600_000);
  const maxAgeMs = positive('maxAgeMs', options.maxAgeMs, 1000);
  const clock = resolveClock(options.clock);
  const onError = checkOnError(options.onError);
  const maxPending = resolveMaxPending('createRedisHealth', options.maxPending, 100);
  const setKey = keyOf(prefix, 'health', 'marks');
  const survivorsKey = keyOf(prefix, 'survivors', 'list');
  const freshKey = keyOf(prefix, 'survivors', 'fresh');
  const lockKey = keyOf(prefix, 'survivors', 'lock');
  /** The last list this process read or published: served when Redis fails or another process holds the lock. */
  let lastList: string[] | undefined;
  let revalidating: Promise<void> | undefined;
  const plain = new Connection(client, maxPending, resolveCommandTimeout('createRedisHealth', options.commandTimeoutMs), clock);
  const mark = new LuaScript(plain, MARK_LUA);
  const read = new LuaScript(plain, READ_LUA);

  /** Endpoint name → when (on our clock) its last known mark ends. */
  let view = new Map<string, number>();
  let fetchedAt = -Infinity;
  let fetching: Promise<void> | undefined;

  const report = (error: unknown): undefined => {
    if (onError !== undefined) {
      try {
        onError(error);
      } catch {
        // An error handler that throws must not turn into a rejection.
      }
    }
    return undefined;
  };

  /** The published list and whether it is still fresh; `undefined` when Redis failed. */
  const readBoth = (): Promise<{ list: string[] | undefined; fresh: boolean } | undefined> =>
    plain.send(['MGET', survivorsKey, freshKey]).then(
      (reply) => (Array.isArray(reply) ? { list: parseList(reply[0]), fresh: reply[1] !== null && reply[1] !== undefined } : (report(new TypeError('MGET did not answer with an array')), undefined)),
      report,
    );

  const api: RedisHealth = {
    publish(event) {
      switch (event.type) {
        case 'breaker-opened':
          return api.mark(event.endpoint, 'open', event.cooldownMs);
        case 'breaker-closed':
          return api.clear(event.endpoint, 'open');
        case 'endpoint-disabled':
          return api.mark(event.endpoint, 'disabled', disabledTtlMs);
        case 'endpoint-enabled':
          return api.clear(event.endpoint, 'disabled');
        case 'endpoint-parked':
          return api.mark(event.endpoint, 'parked', event.untilMs - clock.now());
        default:
          return DONE;
      }
    },
    mark(endpoint, status, ttlMs) {
      if (!(ttlMs > 0) || !Number.isFinite(ttlMs)) return DONE;
      return mark.run([setKey], [`${status}|${endpoint}`, String(Math.ceil(ttlMs))]).then(noop, report);
    },
    clear(endpoint, status) {
      const members = (status === undefined ? STATUSES : [status]).map((s) => `${s}|${endpoint}`);
      return plain.send(['ZREM', setKey, ...members]).then(noop, report);
    },
    marks() {
      return read.run([setKey], []).then(parseMarks, (error: unknown) => (report(error), []));
    },
    refresh() {
      fetching ??= api.marks().then((marks) => {
        const now = clock.now();
        const next = new Map<string, number>();
        for (const m of marks) next.set(m.endpoint, Math.max(next.get(m.endpoint) ?? 0, now + m.remainingMs));
        view = next;
        fetchedAt = now;
        fetching = undefined;
      });
      return fetching;
    },
    exclude(names) {
      const now = clock.now();
      if (now - fetchedAt >= maxAgeMs) void api.refresh();
      const out: string[] = [];
      if (names === undefined) {
        for (const [name, until] of view) if (until > now) out.push(name);
        return out;
      }
      for (const name of names) if ((view.get(name) ?? 0) > now) out.push(name);
      return out.length >= names.length ? [] : out;
    },
    publishSurvivors(list, ttlMs, maxStaleMs = ttlMs * 10) {
      if (!(ttlMs > 0) || !Number.isFinite(ttlMs) || !(maxStaleMs >= 0)) return DONE;
      const copy = [...list];
      const fresh = String(Math.ceil(ttlMs));
      const keep = String(Math.ceil(ttlMs + maxStaleMs));
      return plain
        .send(['SET', survivorsKey, JSON.stringify(copy), 'PX', keep])
        .then(() => plain.send(['SET', freshKey, '1', 'PX', fresh]))
        .then(() => {
          lastList = copy;
        }, report);
    },
    readSurvivors() {
      return readBoth().then((r) => r?.list);
    },
    async refreshSurvivors(check, o) {
      const published = await readBoth();
      if (published?.list !== undefined) lastList = published.list;
      if (published?.list !== undefined && published.fresh) return published.list;
      if (published === undefined) return lastList;
      const lockMs = o.lockMs ?? o.ttlMs;
      const won = await plain.send(['SET', lockKey, '1', 'NX', 'PX', String(Math.ceil(lockMs))]).then((r) => r === 'OK', (error: unknown) => (report(error), false));
      if (!won) return published.list ?? lastList;
      const run = async (): Promise<string[] | undefined> => {
        let list: string[];
        try {
          list = [...(await check())];
        } catch (error) {
          report(error);
          await plain.send(['DEL', lockKey]).catch(report);
          return undefined;
        }
        await api.publishSurvivors(list, o.ttlMs, o.maxStaleMs);
        return list;
      };
      if (published.list === undefined) return (await run()) ?? lastList;
      // Stale: serve it now, re-check in the background.
      const job = run().then(noop);
      revalidating = job;
      void job.then(() => {
        if (revalidating === job) revalidating = undefined;
      });
      return published.list;
    },
    get revalidating() {
      return revalidating;
    },
  };
  return api;
}

const DONE: Promise<void> = Promise.resolve();
const noop = (): void => undefined;

function positive(field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value > 0)) throw new PoolError('INVALID_OPTIONS', `createRedisHealth: ${field}: expected a number > 0, got ${describe(value)}`, { field });
  return value;
}

function parseMarks(reply: unknown): SharedMark[] {
  if (!Array.isArray(reply)) return [];
  const out: SharedMark[] = [];
  for (let i = 0; i + 1 < reply.length; i += 2) {
    const member = String(reply[i]);
    const bar = member.indexOf('|');
    const status = member.slice(0, bar) as SharedStatus;
    if (bar < 0 || !STATUSES.includes(status)) continue;
    out.push({ endpoint: member.slice(bar + 1), status, remainingMs: Number(reply[i + 1]) });
  }
  return out;
}

function parseList(reply: unknown): string[] | undefined {
  if (reply === null || reply === undefined) return undefined;
  if (typeof reply !== 'string') return undefined;
  try {
    const list: unknown = JSON.parse(reply);
    return Array.isArray(list) && list.every((x) => typeof x === 'string') ? list : undefined;
  } catch {
    return undefined;
  }
}
