/**
 * The pool's shared runtime: resolved options, endpoint states and tiers, the permit
 * queue, parked calls, and the helpers that emit events and metrics. `Pool` is the public
 * facade over it; `Call` (one per `execute`) reads and updates it.
 */
import type { BackoffOptions } from './backoff.js';
import type { BreakerOptions } from './breaker.js';
import type { Classifier } from './classify.js';
import type { Clock, RandomSource } from './clock.js';
import { EndpointState } from './endpoint.js';
import { invalidOption } from './errors.js';
import { deliver, type EventListener, type PoolEvent } from './events.js';
import { TokenBucket } from './limiter.js';
import { safeIncrement, type MetricsSink } from './metrics.js';
import {
  PRIORITIES,
  finite,
  limitOrInfinity,
  oneOf,
  plainObject,
  positiveInteger,
  type BreakerMode,
  type EndpointConfig,
  type Strategy,
} from './options.js';
import { selectEndpoint, type Selection } from './selector.js';

/** A call waiting for something: capacity to free up, a permit, or time to pass. */
export interface Waiter {
  /** An in-flight or probe slot may have freed up. */
  wake(): void;
  /** A permit was handed to it. */
  grantPermit(): void;
  /** The pool is closing: fail if still waiting. */
  closeWaiting(): void;
}

export interface ResolvedOptions {
  readonly classify: Classifier;
  readonly strategy: Strategy;
  readonly maxAttempts: number;
  readonly attemptTimeoutMs: number;
  readonly deadlineMs: number;
  readonly backoff: BackoffOptions;
  readonly breaker: BreakerOptions;
  readonly rateLimitCooldownMs: number;
  readonly maxConcurrentCalls: number;
  readonly breakerMode: BreakerMode;
}

export class PoolState<C> {
  readonly opts: ResolvedOptions;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly metrics: MetricsSink | undefined;
  readonly listener: EventListener | undefined;

  endpoints: EndpointState<C>[] = [];
  byName = new Map<string, EndpointState<C>>();
  /** Rotation rings per tier (high, low); each endpoint repeated `weight` times under round-robin. */
  tiers: EndpointState<C>[][] = [[], []];
  readonly cursors = [0, 0];

  /** Permits left; `Infinity` when calls are not limited. */
  permits: number;
  readonly permitQueue: Waiter[] = [];
  /** Calls waiting for an in-flight or probe slot to free up. */
  readonly parked = new Set<Waiter>();
  /** Every call in any kind of wait (so that `close()` can end them). */
  readonly waiting = new Set<Waiter>();
  #wakeScheduled = false;

  closed = false;
  active = 0;
  callSeq = 0;
  onIdle: (() => void) | undefined;

  constructor(opts: ResolvedOptions, clock: Clock, random: RandomSource, metrics: MetricsSink | undefined, listener: EventListener | undefined) {
    this.opts = opts;
    this.clock = clock;
    this.random = random;
    this.metrics = metrics;
    this.listener = listener;
    this.permits = opts.maxConcurrentCalls;
  }

  /** Validates and installs an endpoint set, keeping the state of endpoints kept by name. */
  setEndpoints(configs: unknown): void {
    if (!Array.isArray(configs) || configs.length === 0) throw invalidOption('endpoints', 'a non-empty array', configs);
    const now = this.clock.now();
    const next: EndpointState<C>[] = [];
    const byName = new Map<string, EndpointState<C>>();
    for (let i = 0; i < configs.length; i++) {
      const field = `endpoints[${i}]`;
      const c = plainObject(field, configs[i]) as Partial<EndpointConfig<C>> | undefined;
      if (c === undefined) throw invalidOption(field, 'an endpoint object', undefined);
      if (typeof c.name !== 'string' || c.name.length === 0) throw invalidOption(`${field}.name`, 'a non-empty string', c.name);
      if (byName.has(c.name)) throw invalidOption(`${field}.name`, 'a name not used by another endpoint', c.name);
      if (!('conn' in c)) throw invalidOption(`${field}.conn`, 'a connection value', undefined);
      const priority = oneOf(`${field}.priority`, c.priority, PRIORITIES, 'high');
      const weight = positiveInteger(`${field}.weight`, c.weight, 1);
      const maxInFlight = limitOrInfinity(`${field}.maxInFlight`, c.maxInFlight);
      const rl = plainObject(`${field}.rateLimit`, c.rateLimit);
      let perSecond = 0;
      let burst = 0;
      if (rl !== undefined) {
        perSecond = finite(`${field}.rateLimit.perSecond`, rl['perSecond'], Number.NaN, 0, true);
        if (Number.isNaN(perSecond)) throw invalidOption(`${field}.rateLimit.perSecond`, 'a finite number > 0', undefined);
        burst = finite(`${field}.rateLimit.burst`, rl['burst'], Math.max(1, Math.ceil(perSecond)), 1);
      }
      const old = this.byName.get(c.name);
      let ep: EndpointState<C>;
      if (old !== undefined && old.conn === c.conn && old.priority === priority && old.weight === weight && old.maxInFlight === maxInFlight) {
        ep = old;
      } else {
        ep = new EndpointState(c.name, c.conn as C, priority, weight, maxInFlight, this.opts.breaker, undefined);
      }
      const limiter = ep.limiter;
      const sameLimit = limiter instanceof TokenBucket && limiter.perSecond === perSecond && limiter.burst === burst;
      if (rl === undefined) ep.limiter = undefined;
      else if (!sameLimit) ep.limiter = new TokenBucket(perSecond, burst, now);
      next.push(ep);
      byName.set(c.name, ep);
    }
    for (const old of this.endpoints) if (byName.get(old.name) !== old) old.live = false;
    this.endpoints = next;
    this.byName = byName;
    this.#buildTiers();
    this.wakeParked();
  }

  #buildTiers(): void {
    const weighted = this.opts.strategy !== 'ordered';
    const tiers: EndpointState<C>[][] = [[], []];
    for (const ep of this.endpoints) {
      const ring = tiers[ep.priority === 'high' ? 0 : 1]!;
      const copies = weighted ? ep.weight : 1;
      for (let k = 0; k < copies; k++) ring.push(ep);
    }
    this.tiers = tiers;
    this.cursors[0] = 0;
    this.cursors[1] = 0;
  }

  /** One selection for a call: strategy start positions, then the pure selector. */
  select(now: number, tried: EndpointState<C>[] | undefined, excluded: EndpointState<C>[] | undefined): Selection<C> {
    if (this.opts.strategy === 'ordered') return selectEndpoint({ tiers: this.tiers, starts: ZERO_STARTS, now, tried, excluded });
    if (this.opts.strategy === 'random') {
      // A fresh start per tier for every selection; the ring's weights make it a weighted pick.
      const starts = [randomIndex(this.random, this.tiers[0]!.length), randomIndex(this.random, this.tiers[1]!.length)];
      return selectEndpoint({ tiers: this.tiers, starts, now, tried, excluded });
    }
    const picked = selectEndpoint({ tiers: this.tiers, starts: this.cursors, now, tried, excluded });
    // The cursor moves once per selection, whether or not the endpoint it landed on could serve.
    const high = this.tiers[0]!.length;
    const low = this.tiers[1]!.length;
    if (high > 0) this.cursors[0] = (this.cursors[0]! + 1) % high;
    if (low > 0) this.cursors[1] = (this.cursors[1]! + 1) % low;
    return picked;
  }

  emit(event: PoolEvent): void {
    if (this.listener !== undefined) deliver(this.listener, event);
  }

  count(name: string, labels: Readonly<Record<string, string>>, value = 1): void {
    if (this.metrics !== undefined) safeIncrement(this.metrics, name, labels, value);
  }

  /** Tells every parked call that capacity may have freed up; each re-selects. */
  wakeParked(): void {
    if (this.parked.size === 0 || this.#wakeScheduled) return;
    // In a microtask, so a call's wake-up never runs inside another call's settlement.
    this.#wakeScheduled = true;
    queueMicrotask(() => {
      this.#wakeScheduled = false;
      for (const w of [...this.parked]) w.wake();
    });
  }

  /** Hands a freed permit to the next queued call (in a microtask), or returns it to the pool. */
  releasePermit(): void {
    const next = this.permitQueue.shift();
    if (next === undefined) this.permits++;
    else queueMicrotask(() => next.grantPermit());
  }

  callEnded(): void {
    this.active--;
    if (this.active === 0 && this.onIdle !== undefined) this.onIdle();
  }
}

const ZERO_STARTS: readonly number[] = [0, 0];

/** An index in [0, n), robust to a random source that returns 1 or garbage. */
function randomIndex(random: RandomSource, n: number): number {
  if (n <= 1) return 0;
  const i = Math.floor(random() * n);
  return i >= 0 && i < n ? i : 0;
}
