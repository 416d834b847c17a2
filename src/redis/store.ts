/**
 * `createRedisStore`: a `LimiterStore` on Redis, so that every process using the same keys
 * shares one per-second limit and one daily count per endpoint (or per group), and learns
 * what the others learned about them.
 *
 * Admission (admit-script.ts) is atomic, timed by Redis, writes nothing unless it counts a
 * call, and gives every key an expiry. A call the fleet cannot take now gets a slot reserved
 * for later (at most `maxReserveMs` ahead) instead of a bare refusal: `acquire` resolves to
 * the wait until the earliest slot this process holds on that key, and the next `acquire`
 * on the key made from that moment takes it without a round trip. Slots are held per key,
 * not per caller, so that the pool's cooldown (one per quota) wakes its callers in slot
 * order; a slot nobody takes within `slotGraceMs` is dropped (it stays counted: the fleet
 * errs on the safe side). Callers that find no slot while an admission on the key is in
 * flight are asked for together, in one script run.
 *
 * Fleet knowledge: `report(limit, change)` writes a learned ceiling, a parked quota or a
 * disabled endpoint into the limit's state hash, `parkEndpoint` one key of a group parked
 * until the daily reset (handed out until then, not after); every admission answer carries that state
 * when it changed since this process last saw it, and `subscribe` listeners (the pool) get
 * it. The admission script itself obeys a learned ceiling and a parked quota at once.
 *
 * Keys: `{<prefix>}v2:<kind>:<limit key>` with kind `bucket`, `paced`, `daily` or `state`.
 * The braces are a Redis Cluster hash tag: all of a pool's keys (health's included) live in
 * one slot, so a script may touch several. `v2` changes with the layout, so an older
 * release's keys are never read as this one's.
 *
 * Failure contract: `acquire` never throws; it rejects with a `RedisStoreError` when the
 * client throws, is not connected, answers with an error, leaves a command unanswered for
 * `commandTimeoutMs`, or has `maxPending` commands outstanding. The pool bounds each acquire
 * by `sharedQuota.timeoutMs` and degrades on a rejection; a script error is one failed
 * acquire, never a lasting state (the next acquire runs the script again).
 */
import type { Clock } from '../base/clock.js';
import { PoolError, describe } from '../base/errors.js';
import type { LimiterStore, SharedChange, SharedLimit, SharedState } from '../limits/store.js';
import { checkKeys, type KnownKeys } from '../options/validate.js';
import type { RedisCommander } from './client.js';
import { RedisStoreError } from './errors.js';
import { ADMIT_LUA, REPORT_LUA } from './admit-script.js';
import { Connection, LuaScript } from './script.js';
import { checkCommander, checkOnError, keyOf, resolveClock, resolveCommandTimeout, resolveMaxPending, resolvePrefix } from './options.js';
import { ClockOffset, argsFor, changeArgs, keyParkArgs, parseAnswer, type Answer } from './wire.js';

export interface RedisStoreOptions {
  /** Names this pool's keys (and their hash tag), to keep apart pools or apps sharing a Redis. @default 'endpoint-pool:' */
  readonly prefix?: string;
  /** Commands outstanding on the client beyond which `acquire` rejects at once. @default 1000 */
  readonly maxPending?: number;
  /**
   * How long a command may go unanswered before the store counts it as failed (`STORE_TIMEOUT`)
   * and asks again with the next call; a reply that comes later is dropped. @default 10000
   */
  readonly commandTimeoutMs?: number;
  /** Furthest ahead a refused call gets a slot reserved; beyond it, a refusal until the slot is that close. @default 5000 */
  readonly maxReserveMs?: number;
  /** How late a reserved slot may still be taken; also added to the one-second window. @default 50 */
  readonly slotGraceMs?: number;
  /** How long a learned ceiling is kept in Redis. @default 86400000 (a day) */
  readonly learnedTtlMs?: number;
  /** How long an endpoint disabled by one process stays disabled for the others. @default 600000 */
  readonly disabledTtlMs?: number;
  /** Told about every failed `report` (they never reject). @default none */
  readonly onError?: (error: unknown) => void;
  /**
   * How long a process holds calls after the store fails, before going on at its degraded
   * share: until the slots others reserved have left and a second has passed. By default it
   * follows the load: the furthest lead of a slot this process was handed in the last
   * `maxReserveMs` (0 when nothing waits), plus `slotGraceMs`, plus one second.
   */
  readonly degradedHoldMs?: number;
  /** For the local times of reserved slots. @default systemClock */
  readonly clock?: Clock;
}

/** The keys of one limit, by kind. */
export interface RedisLimitKeys {
  readonly bucket: string;
  readonly paced: string;
  readonly daily: string;
  readonly state: string;
}

const STORE_OPTION_KEYS: Record<keyof RedisStoreOptions, true> & KnownKeys = {
  prefix: true,
  maxPending: true,
  commandTimeoutMs: true,
  maxReserveMs: true,
  slotGraceMs: true,
  learnedTtlMs: true,
  disabledTtlMs: true,
  onError: true,
  degradedHoldMs: true,
  clock: true,
};

export interface RedisStore extends LimiterStore {
  readonly degradedHoldMs: number;
  report(limit: SharedLimit, change: SharedChange): Promise<void>;
  parkEndpoint(limit: SharedLimit, endpoint: string, forMs: number): Promise<void>;
  subscribe(listener: (key: string, state: SharedState) => void): () => void;
  /** The keys holding a limit's state. */
  keysOf(limit: SharedLimit): RedisLimitKeys;
  /** The last shared state seen for a limit key (from an admission answer), for a key this process used in the last hour. */
  stateOf(key: string): SharedState | undefined;
  /** `acquire` calls waiting for Redis. */
  readonly pending: number;
  /** Script runs sent so far (each one round trip). */
  readonly roundTrips: number;
}

interface Prepared {
  readonly keys: readonly string[];
  readonly args: readonly string[];
  readonly guard: string;
  readonly graceMs: number;
}

interface Asker {
  resolve(waitMs: number): void;
  reject(error: unknown): void;
}

/** One limit key's local side: slots held, callers waiting for an answer. */
interface KeyState {
  /** Local start times of the slots reserved for this process, ascending. */
  slots: number[];
  asking: boolean;
  next: Asker[];
  version: string;
  shared: SharedState | undefined;
  /**
   * This process's reports on the key's state still unanswered. Redis answers one client in the
   * order it sent: an admission answered meanwhile was run before them, so its state is older
   * than what this process has just said (a listener's re-enable, say) and is not published.
   */
  reportsOut: number;
  /** When this process last asked for the key or reported on it (an entry idle for an hour is dropped). */
  usedAt: number;
}

/** An idle key's local side is dropped after this long (its state comes again with its next admission). */
const IDLE_KEY_MS = 3_600_000;

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
  const maxPending = resolveMaxPending('createRedisStore', options.maxPending, 1000);
  const maxReserveMs = nonNegative('maxReserveMs', options.maxReserveMs, 5000);
  const slotGraceMs = nonNegative('slotGraceMs', options.slotGraceMs, 50);
  const learnedTtlMs = nonNegative('learnedTtlMs', options.learnedTtlMs, 86_400_000);
  const disabledTtlMs = nonNegative('disabledTtlMs', options.disabledTtlMs, 600_000);
  const fixedHoldMs = options.degradedHoldMs === undefined ? undefined : nonNegative('degradedHoldMs', options.degradedHoldMs, 0);
  const clock = resolveClock(options.clock);
  checkOnError(options.onError);
  const conn = new Connection(client, maxPending, resolveCommandTimeout('createRedisStore', options.commandTimeoutMs), clock);
  const admit = new LuaScript(conn, ADMIT_LUA);
  const reportScript = new LuaScript(conn, REPORT_LUA);
  const listeners = new Set<(key: string, state: SharedState) => void>();
  // A pool hands the same SharedLimit object for every attempt on a quota.
  const prepared = new WeakMap<SharedLimit, Prepared>();
  const byKey = new Map<string, KeyState>();
  let sweptAt = 0;
  let waiting = 0;
  let roundTrips = 0;
  const offsets = new ClockOffset();
  /** The furthest lead of a slot handed out recently, and when. */
  let lead = 0;
  let leadAt = -Infinity;

  const prepare = (limit: SharedLimit): Prepared => {
    let p = prepared.get(limit);
    if (p === undefined) {
      const k = keysFor(prefix, limit.key);
      // A daily-only limit has no one-second window for a late slot to crowd: it never goes stale.
      const graceMs = limit.perSecond === undefined ? Infinity : slotGraceMs;
      const a = argsFor(limit, slotGraceMs);
      p = { keys: [k.bucket, k.paced, k.daily, k.state], args: a.args, guard: a.guard, graceMs };
      prepared.set(limit, p);
    }
    return p;
  };

  const stateFor = (key: string): KeyState => {
    let k = byKey.get(key);
    if (k === undefined) {
      k = { slots: [], asking: false, next: [], version: '', shared: undefined, reportsOut: 0, usedAt: 0 };
      byKey.set(key, k);
    }
    const now = clock.now();
    k.usedAt = now;
    // A process that goes through keys (rotated, or one per tenant) keeps only those in use.
    if (now - sweptAt >= IDLE_KEY_MS / 4) {
      sweptAt = now;
      for (const [name, e] of byKey) {
        const held = e.slots.length > 0 && e.slots[e.slots.length - 1]! > now - IDLE_KEY_MS;
        if (now - e.usedAt > IDLE_KEY_MS && !held && !e.asking && e.next.length === 0 && e.reportsOut === 0) byKey.delete(name);
      }
    }
    return k;
  };

  /** 0: a slot is due and taken; > 0: the wait until the earliest slot held; undefined: none held. */
  const fromSlots = (k: KeyState, now: number, graceMs: number): number | undefined => {
    const slots = k.slots;
    while (slots.length > 0 && slots[0]! < now - graceMs) slots.shift();
    if (slots.length === 0) return undefined;
    if (slots[0]! <= now) {
      slots.shift();
      return 0;
    }
    return Math.max(1, Math.ceil(slots[0]! - now));
  };

  const publish = (key: string, state: SharedState): void => {
    for (const l of [...listeners]) {
      try {
        l(key, state);
      } catch {
        // A listener must not break admissions.
      }
    }
  };

  const ask = (key: string, k: KeyState, p: Prepared): void => {
    const batch = k.next;
    k.next = [];
    k.asking = true;
    roundTrips++;
    const sentAt = clock.now();
    admit.run(p.keys, [...p.args, String(batch.length), String(maxReserveMs), k.version, p.guard]).then(
      (reply) => {
        k.asking = false;
        waiting -= batch.length;
        let answer: Answer;
        try {
          answer = parseAnswer(reply, maxReserveMs);
        } catch (error) {
          for (const a of batch) a.reject(error);
          return drain(key, k, p);
        }
        const now = clock.now();
        // A run that had to load the script took two round trips: its midpoint says nothing of the offset.
        const offset = admit.lastRunDirect || !offsets.known ? offsets.sample(answer.redisNow, sentAt, now, !admit.lastRunDirect) : offsets.value;
        // (Left unread while a report is out: the next admission brings the state again.)
        if (answer.version !== k.version && k.reportsOut === 0) {
          k.version = answer.version;
          k.shared = answer.state;
          publish(key, answer.state);
        }
        // On this process's clock: Redis's slot time minus the best estimate of the clocks' offset.
        // A slot admitted "now" leaves as soon as its answer is here, as any admission does
        // (its lateness is the answer's own latency); a later one leaves at its time.
        for (const w of answer.slots) k.slots.push(w === 0 ? now : answer.redisNow + w - offset);
        const furthest = answer.slots.length > 0 ? answer.slots[answer.slots.length - 1]! : 0;
        if (furthest >= lead || now - leadAt > maxReserveMs) {
          lead = furthest;
          leadAt = now;
        }
        k.slots.sort((a, b) => a - b);
        for (const a of batch) a.resolve(fromSlots(k, now, p.graceMs) ?? Math.max(1, answer.refusedMs));
        drain(key, k, p);
      },
      (error: unknown) => {
        k.asking = false;
        waiting -= batch.length;
        for (const a of batch) a.reject(error);
        drain(key, k, p);
      },
    );
  };

  /** Callers that arrived during a run: answered from the slots it brought, else asked for together. */
  const drain = (key: string, k: KeyState, p: Prepared): void => {
    if (k.next.length === 0) return;
    const now = clock.now();
    const still: Asker[] = [];
    for (const a of k.next) {
      const w = fromSlots(k, now, p.graceMs);
      if (w === undefined) still.push(a);
      else {
        waiting--;
        a.resolve(w);
      }
    }
    k.next = still;
    if (still.length > 0) ask(key, k, p);
  };

  /** A change to a key's state, counted out until Redis answers it (see `KeyState.reportsOut`). */
  const sendReport = (limit: SharedLimit, args: string[]): Promise<void> => {
    const k = stateFor(limit.key);
    k.reportsOut++;
    const back = (): void => void k.reportsOut--;
    return reportScript.run([keysFor(prefix, limit.key).state], args).then(back, (error: unknown) => {
      back();
      reportError(options.onError, error);
    });
  };

  const api: RedisStore = {
    acquire(limit: SharedLimit): Promise<number> {
      let p: Prepared;
      try {
        p = prepare(limit);
      } catch (error) {
        return Promise.reject(error);
      }
      const k = stateFor(limit.key);
      const held = fromSlots(k, clock.now(), p.graceMs);
      if (held !== undefined) return Promise.resolve(held);
      if (waiting >= maxPending) {
        return Promise.reject(new RedisStoreError('STORE_BUSY', `${waiting} Redis admissions are still waiting for an answer`));
      }
      waiting++;
      return new Promise<number>((resolve, reject) => {
        k.next.push({ resolve, reject });
        if (k.asking) return;
        // Callers arriving in the same tick go in one script run.
        k.asking = true;
        queueMicrotask(() => ask(limit.key, k, p));
      });
    },
    report(limit, change) {
      let args: string[];
      try {
        args = changeArgs(change, learnedTtlMs, disabledTtlMs);
      } catch (error) {
        return Promise.resolve(reportError(options.onError, error));
      }
      return sendReport(limit, args);
    },
    parkEndpoint(limit, endpoint, forMs) {
      let args: string[];
      try {
        args = keyParkArgs(endpoint, forMs);
      } catch (error) {
        return Promise.resolve(reportError(options.onError, error));
      }
      return sendReport(limit, args);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    get degradedHoldMs() {
      if (fixedHoldMs !== undefined) return fixedHoldMs;
      const now = clock.now();
      return (now - leadAt <= maxReserveMs ? Math.min(lead, maxReserveMs) : 0) + slotGraceMs + 1000;
    },
    keysOf: (limit) => keysFor(prefix, limit.key),
    stateOf: (key) => byKey.get(key)?.shared,
    get pending() {
      return waiting;
    },
    get roundTrips() {
      return roundTrips;
    },
  };
  return api;
}

/** The keys of one limit: one hash tag (`{prefix}`) for the whole pool. */
export function keysFor(prefix: string, key: string): RedisLimitKeys {
  return { bucket: keyOf(prefix, 'bucket', key), paced: keyOf(prefix, 'paced', key), daily: keyOf(prefix, 'daily', key), state: keyOf(prefix, 'state', key) };
}

function reportError(onError: ((error: unknown) => void) | undefined, error: unknown): void {
  if (onError === undefined) return;
  try {
    onError(error);
  } catch {
    // An error handler that throws must not turn into a rejection.
  }
}

function nonNegative(field: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value >= 0) || !Number.isFinite(value)) throw new PoolError('INVALID_OPTIONS', `createRedisStore: ${field}: expected a finite number >= 0, got ${describe(value)}`, { field });
  return value;
}
