/**
 * The pool's side of the shared store (`sharedQuota`): made by the store feature when the
 * option is given, held as `PoolState.fleet` (a pool without the option, or without the
 * feature, has none and bundles none of this).
 *
 * It knows whether an attempt must ask the store now (admission.ts asks), runs the degraded
 * mode (after a failure or a timeout, local limits at `degradedShare` until the store
 * answers again, then for `retryAfterMs` + 1 s more), and carries what this process and the
 * fleet tell each other about quotas: a learned ceiling, a parking, an endpoint disabled or
 * enabled, reported through the store's optional `report` and `parkEndpoint` and heard
 * through its optional `subscribe`, which `dispose` ends.
 */
import { deliver, type PoolEvent } from '../base/events.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';
import { keyLevel, type Quota } from './quota.js';
import type { ResolvedStore, SharedChange, SharedLimit, SharedState } from './store.js';

/** A store refusal at least this long, lasting to within this of the daily reset, is a spent day. */
const SPENT_DAY_SLACK_MS = 60_000;

/** News for the store: the key's limit, the endpoint, the change (a number: a key of a group parked for so long). */
type News = readonly [SharedLimit, string, SharedChange | number];

export class Fleet<C> {
  readonly #s: PoolState<C>;
  /** The pool's `sharedQuota`, resolved. */
  readonly #shared: ResolvedStore;
  /** The store failed: local limits at a reduced share until it answers again. */
  storeDown = false;
  /** When to try the store again after a failure. */
  retryAt = 0;
  /** When the local limits go back to full after a recovery (0: they are). */
  #restoreAt = 0;
  readonly #reports: boolean;
  #unsubscribe: (() => void) | undefined;
  /** Endpoints this pool disabled because the fleet said so (re-enabled when the fleet forgets them). */
  readonly #fleetDisabled = new Set<string>();
  /** News for the store, in the order it happened, sent once its event's listeners heard it. */
  readonly #news: News[] = [];
  #sending = false;

  constructor(s: PoolState<C>) {
    this.#s = s;
    const store = (this.#shared = s.opts.sharedQuota!).store;
    if (typeof store.subscribe === 'function') this.#unsubscribe = store.subscribe((key, state) => this.applyShared(key, state));
    this.#reports = typeof store.report === 'function' || typeof store.parkEndpoint === 'function';
  }

  /** Whether an attempt on `ep` must first be admitted by the store. */
  needsAdmission(ep: EndpointState<C>, now: number): boolean {
    return ep.quota.shared !== undefined && !(this.storeDown && now < this.retryAt);
  }

  /** A store refusal of `ep` lasting to about the daily reset: the fleet's day is spent, so park (docs/fleet.md). */
  daySpent(ep: EndpointState<C>, waitMs: number, now: number): boolean {
    const q = ep.quota as Quota;
    if (waitMs < SPENT_DAY_SLACK_MS || waitMs < q.resetInMs(now) - SPENT_DAY_SLACK_MS) return false;
    const untilMs = q.park(now);
    // Not shared back: the fleet knows.
    if (ep.live) this.#tell({ type: 'endpoint-parked', endpoint: ep.name, untilMs });
    queueMicrotask(() => q.waiters?.evacuate());
    return true;
  }

  /** What the fleet said, told to this process's listeners and not shared back (what a listener does meanwhile, enabling a key say, is news to share). */
  #tell(event: PoolEvent): void {
    if (this.#s.listener !== undefined) deliver(this.#s.listener, event);
  }

  /** Stops listening to the store (on `close()`). */
  stopListening(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
  }

  /**
   * An event the pool emits: told to its listeners, then shared with the fleet when it is news
   * the store takes (in the order it happened, about the quota of then). Listeners first: a store
   * that hands what it hears to the pools at once must not put what their listeners do before it.
   */
  emit(event: PoolEvent): void {
    const news = this.#reports ? this.#share(event) : undefined;
    if (news !== undefined) this.#news.push(news);
    this.#tell(event);
    if (this.#sending) return;
    this.#sending = true;
    const store = this.#shared.store;
    for (let n = this.#news[0]; n !== undefined; this.#news.shift(), n = this.#news[0]) {
      try {
        void Promise.resolve(typeof n[2] === 'number' ? store.parkEndpoint!(n[0], n[1], n[2]) : store.report!(n[0], n[2])).catch(() => undefined);
      } catch {
        // A store must never break the call that learned something.
      }
    }
    this.#sending = false;
  }

  /**
   * Applies a quota's shared state (from the store) to the quotas with that key: the
   * learned ceiling, the parking, the endpoints disabled elsewhere. Events are emitted as
   * for local changes, but nothing is reported back to the store.
   */
  applyShared(key: string, state: SharedState): void {
    const s = this.#s;
    const now = s.clock.now();
    for (const ep of s.endpoints) {
      // Only the limits feature makes a quota with a shared key: a Quota.
      const q = ep.quota as Quota;
      if (q.shared?.key !== key || !ep.live) continue; // (a listener may have called setEndpoints meanwhile)
      const first = s.endpoints.find((e) => e.quota === q) === ep;
      if (first && state.ceilingPerSecond !== undefined && q.ceilingPerSecond !== state.ceilingPerSecond) {
        const perSecond = q.learn(state.ceilingPerSecond, now);
        this.#tell({ type: 'endpoint-recalibrated', endpoint: ep.name, perSecond, scope: q.grouped ? 'group' : 'key', reason: 'hint' });
      }
      if (first && state.parkedForMs > 0 && q.parkedUntil < now + state.parkedForMs - 1000) {
        q.parkedUntil = now + state.parkedForMs;
        this.#tell({ type: 'endpoint-parked', endpoint: ep.name, untilMs: q.parkedUntil });
        // Its queued calls select again (after this update: see waiters.ts `evacuate`).
        queueMicrotask(() => q.waiters?.evacuate());
      }
      const keyParkMs = state.parkedEndpoints?.get(ep.name);
      if (keyParkMs !== undefined && keyParkMs > 0) {
        // A key parked elsewhere: parked here too (its own level in a group), until the same reset.
        const level = q.grouped ? (ep.own ??= keyLevel(q, ep.name, s.opts.dailyResetUtcHour, now, s.wall)) : q;
        if (level.parkedUntil < now + keyParkMs - 1000) {
          level.parkedUntil = now + keyParkMs;
          this.#tell({ type: 'endpoint-parked', endpoint: ep.name, untilMs: level.parkedUntil });
          queueMicrotask(() => q.waiters?.evacuate(ep));
        }
      }
      // What this pool has still to tell the fleet of the endpoint is newer than what the fleet says.
      if (this.#news.some((n) => n[0].key === key && n[1] === ep.name)) continue;
      if (state.disabled.has(ep.name)) {
        if (!ep.disabled) {
          ep.disabled = true;
          this.#fleetDisabled.add(ep.name);
          this.#tell({ type: 'endpoint-disabled', endpoint: ep.name });
          queueMicrotask(() => q.waiters?.evacuate(ep));
        }
      } else if (this.#fleetDisabled.delete(ep.name) && ep.disabled) {
        ep.disabled = false;
        this.#tell({ type: 'endpoint-enabled', endpoint: ep.name });
        s.wakeParked();
      }
    }
  }

  /** The news a learned ceiling, a parking or a disabled/enabled endpoint is for the fleet, if the store takes it. */
  #share(event: PoolEvent): News | undefined {
    const s = this.#s;
    let change: SharedChange | number;
    switch (event.type) {
      case 'endpoint-recalibrated':
        change = { type: 'ceiling', perSecond: event.perSecond };
        break;
      case 'endpoint-parked':
        change = event.untilMs - s.clock.now();
        // In a group only the key is parked (call/outcome.ts): a `parked` change would park its siblings too.
        if (s.byName.get(event.endpoint)?.quota.grouped !== true) change = { type: 'parked', forMs: change };
        break;
      case 'endpoint-disabled':
      case 'endpoint-enabled':
        this.#fleetDisabled.delete(event.endpoint);
        change = { type: event.type === 'endpoint-disabled' ? 'disabled' : 'enabled', endpoint: event.endpoint };
        break;
      default:
        return;
    }
    const limit = s.byName.get(event.endpoint)?.quota.shared;
    const store = this.#shared.store;
    if (limit !== undefined && typeof (typeof change === 'number' ? store.parkEndpoint : store.report) === 'function') return [limit, event.endpoint, change];
  }

  /** The endpoint set changed: quotas created while the store is down start at the degraded share too. */
  quotasChanged(now: number): void {
    if (this.storeDown || this.#restoreAt !== 0) this.#degradeAll(now);
  }

  /** The store timed out or failed: fall back to local limits at the degraded share. */
  storeFailed(now: number, error: unknown): void {
    this.retryAt = now + this.#shared.retryAfterMs;
    this.#restoreAt = 0;
    if (this.storeDown) return;
    this.storeDown = true;
    this.#degradeAll(now, true);
    this.#s.emit({ type: 'store-degraded', error });
  }

  #degradeAll(now: number, hold = false): void {
    const shared = this.#shared;
    const holdMs = hold ? holdFor(shared.store.degradedHoldMs) : 0;
    for (const q of new Set(this.#s.endpoints.map((e) => e.quota))) q.degrade(shared.degradedShare, now, holdMs);
  }

  /**
   * The store answered. After an outage, local limits stay at the degraded share for
   * `retryAfterMs` + 1 s more: by then every process has asked the store again (each retries
   * within `retryAfterMs`) and the store's one-second window holds only calls it counted, so
   * no process runs at full rate through the store while others still run on local shares.
   */
  storeAnswered(now: number): void {
    if (this.storeDown) {
      this.storeDown = false;
      this.#restoreAt = now + this.#shared.retryAfterMs + 1000;
      this.#s.emit({ type: 'store-recovered' });
      return;
    }
    if (this.#restoreAt === 0 || now < this.#restoreAt) return;
    this.#restoreAt = 0;
    for (const q of new Set(this.#s.endpoints.map((e) => e.quota))) {
      q.restore(now);
      q.waiters?.poke();
    }
  }
}

/** A store's `degradedHoldMs`, ignored unless a finite number ≥ 0. */
function holdFor(value: unknown): number {
  return typeof value === 'number' && value > 0 && Number.isFinite(value) ? value : 0;
}
