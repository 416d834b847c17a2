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
 * Nothing here throws or rejects: failures go to `onError`.
 */
import { checkKeys, type KnownKeys } from '../options/validate.js';
import { systemClock, type Clock } from '../base/clock.js';
import type { PoolEvent } from '../base/events.js';
import type { RedisCommander } from './client.js';
import { MARK_LUA, READ_LUA } from './health-script.js';
import { checkCommander, resolvePrefix } from './options.js';
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
}

export interface SurvivorsOptions {
  /** How long a published list is good for. */
  readonly ttlMs: number;
  /** How long the process that won the refresh has to publish before another may try. @default ttlMs */
  readonly lockMs?: number;
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
  /** Publishes a refresher's list of healthy endpoints (or URLs) for `ttlMs`. */
  publishSurvivors(list: readonly string[], ttlMs: number): Promise<void>;
  /** The last published list, or `undefined` when there is none (or it expired, or Redis failed). */
  readSurvivors(): Promise<string[] | undefined>;
  /**
   * One health check for the fleet: the published list if there is one; else, in the one
   * process that wins the lock, runs `check` and publishes its result; elsewhere resolves
   * `undefined` (use your fallback list until the winner publishes).
   */
  refreshSurvivors(check: () => Promise<readonly string[]>, options: SurvivorsOptions): Promise<string[] | undefined>;
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
};

export function createRedisHealth(client: RedisCommander, options: RedisHealthOptions = {}): RedisHealth {
  checkCommander('createRedisHealth', client);
  checkKeys('createRedisHealth options', options as Record<string, unknown>, HEALTH_OPTION_KEYS);
  const prefix = resolvePrefix('createRedisHealth', options.prefix);
  const disabledTtlMs = positive('disabledTtlMs', options.disabledTtlMs, 600_000);
  const maxAgeMs = positive('maxAgeMs', options.maxAgeMs, 1000);
  const clock = options.clock ?? systemClock;
  const onError = options.onError;
  const maxPending = options.maxPending ?? 100;
  const setKey = `${prefix}health`;
  const survivorsKey = `${prefix}survivors`;
  const lockKey = `${prefix}survivors:lock`;
  const plain = new Connection(client, maxPending);
  const mark = new LuaScript(plain, MARK_LUA);
  const read = new LuaScript(plain, READ_LUA);

  /** Endpoint name → when (on our clock) its last known mark ends. */
  let view = new Map<string, number>();
  let fetchedAt = Number.NEGATIVE_INFINITY;
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
    publishSurvivors(list, ttlMs) {
      if (!(ttlMs > 0) || !Number.isFinite(ttlMs)) return DONE;
      return plain.send(['SET', survivorsKey, JSON.stringify(list), 'PX', String(Math.ceil(ttlMs))]).then(noop, report);
    },
    readSurvivors() {
      return plain.send(['GET', survivorsKey]).then(parseList, report);
    },
    async refreshSurvivors(check, o) {
      const published = await api.readSurvivors();
      if (published !== undefined) return published;
      const lockMs = o.lockMs ?? o.ttlMs;
      const won = await plain.send(['SET', lockKey, '1', 'NX', 'PX', String(Math.ceil(lockMs))]).then((r) => r === 'OK', (error: unknown) => (report(error), false));
      if (!won) return undefined;
      let list: string[];
      try {
        list = [...(await check())];
      } catch (error) {
        report(error);
        await plain.send(['DEL', lockKey]).catch(report);
        return undefined;
      }
      await api.publishSurvivors(list, o.ttlMs);
      return list;
    },
  };
  return api;
}

const DONE: Promise<void> = Promise.resolve();
const noop = (): void => undefined;

function positive(field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value > 0)) throw new TypeError(`createRedisHealth: ${field}: expected a number > 0, got ${String(value)}`);
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
  if (typeof reply !== 'string') return undefined;
  try {
    const list: unknown = JSON.parse(reply);
    return Array.isArray(list) && list.every((x) => typeof x === 'string') ? list : undefined;
  } catch {
    return undefined;
  }
}
