/**
 * The pool's shared runtime: resolved options, endpoint states and tiers, the permit
 * queue, parked calls, and the helpers that emit events and metrics. `Pool` is the public
 * facade over it; `Call` (one per `execute`) reads and updates it.
 */
import { wallNow, type Clock, type RandomSource, type TimerHandle } from './base/clock.js';
import type { EndpointState } from './selection/endpoint.js';
import { buildEndpointSet } from './selection/endpoint-set.js';
import { deliver, Listeners, type EventListener, type PoolEvent } from './base/events.js';
import { safeIncrement, type MetricsSink } from './base/metrics.js';
import type { ResolvedRateLimit } from './limits/quota.js';
import { TimeoutQueue } from './call/timeouts.js';
import type { PermitQueue, PermitWaiter } from './call/permit-queue.js';
import { defaultPlan, type CallPlan } from './call/plan.js';
import type { ResolvedOptions } from './options/resolve.js';
import { selectEndpoint, type Selection, type Selector } from './selection/selector.js';
import type { PoolError } from './base/errors.js';
import type { Features, FleetOf, PanicOf } from './features.js';

/** A call waiting for something: capacity to free up, a permit, or time to pass. */
export interface Waiter extends PermitWaiter {
  /** An in-flight or probe slot may have freed up. */
  wake(): void;
  /** The pool is closing: fail if still waiting. */
  closeWaiting(): void;
}

export class PoolState<C> {
  readonly opts: ResolvedOptions;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly metrics: MetricsSink | undefined;
  /** Every subscriber behind one function, or `undefined` when nobody listens: the hot path checks it before building an event. */
  listener: EventListener | undefined;
  readonly listeners: Listeners;

  endpoints: EndpointState<C>[] = [];
  byName = new Map<string, EndpointState<C>>();
  groups: string[][] = [];
  #limits = new Map<EndpointState<C>, ResolvedRateLimit | undefined>();
  /** Rotation rings per tier (high, low); each endpoint repeated `weight` times under round-robin. */
  tiers: EndpointState<C>[][] = [[], []];
  readonly cursors = [0, 0];
  /** Permits left; `Infinity` when calls are not limited. */
  permits: number;
  /** `undefined` without the concurrency feature, where no call ever waits for a permit. */
  readonly permitQueue: PermitQueue | undefined;
  /** Calls waiting for an in-flight or probe slot to free up. */
  readonly parked = new Set<Waiter>();
  /** Every call in any kind of wait (so that `close()` can end them). */
  readonly waiting = new Set<Waiter>();
  /** Probes and credential refreshes still running, and started Refreshers: each ends itself with the error it is given (`close()` ends them). */
  readonly probes = new Set<(error: PoolError) => void>();
  #wakeScheduled = false;

  /** When a call was last turned away for want of a turn (learned ceilings then recover sooner). */
  turnedAwayAt = -Infinity;
  closed = false;
  active = 0;
  /** Whether attempt durations feed the latency trackers (`latency`, a pool `hedge`, or since a call hedged on a percentile). */
  tracksLatency: boolean;
  /** Whether a success's duration is used (metrics, events, slow calls, failure-rate windows). */
  timesSuccesses = false;
  /** Attempt timeouts, on one shared timer. */
  readonly timeouts: TimeoutQueue;
  callSeq = 0;
  /** The plan of a call made with no options (shared: nothing allocated per call). */
  readonly defaultPlan: CallPlan<C>;
  onIdle: (() => void) | undefined;
  #abortAt = Infinity;
  #abortTimer: TimerHandle | undefined;
  /** The calendar reading, for daily resets only (everything else runs on the monotonic `clock.now()`). */
  readonly wall = (): number => wallNow(this.clock);

  readonly features: Features; // the optional features' code this pool may use
  /** The pool's side of the shared store, made by the store feature when `sharedQuota` is given. */
  readonly fleet: FleetOf<C> | undefined;

  constructor(opts: ResolvedOptions, clock: Clock, random: RandomSource, metrics: MetricsSink | undefined, listener: EventListener | undefined, features: Features) {
    this.features = features;
    this.opts = opts;
    this.clock = clock;
    this.random = random;
    this.metrics = metrics;
    this.listener = listener;
    this.listeners = new Listeners(listener, (current) => {
      this.listener = current;
      this.#timeSuccesses();
    });
    this.permits = opts.maxConcurrentCalls ?? Infinity;
    this.permitQueue = features.concurrency === undefined ? undefined : new features.concurrency.Queue();
    this.timeouts = new TimeoutQueue(clock);
    this.defaultPlan = defaultPlan(this);
    // Latency is tracked only with the latency feature (the resolver refuses `strategy: 'latency'` without it).
    this.tracksLatency = features.latency !== undefined && (opts.strategy === 'latency' || opts.hedgeConfigured);
    const strategy = opts.strategy;
    // The resolver refuses a strategy whose feature is missing.
    this.#byStrategy = strategy === 'ordered' || strategy === 'round-robin' ? undefined : features[strategy]!.selector(this);
    this.#timeSuccesses();
    this.fleet = opts.sharedQuota === undefined ? undefined : features.store!.connect(this);
    this.#panic = opts.maxEjectedPercent === undefined ? undefined : features.panic!.mode(this, opts.maxEjectedPercent);
  }

  /** Panic mode (`maxEjectedPercent`), from the panic feature (selection/panic.ts). */
  readonly #panic: PanicOf<C> | undefined;

  /** `strategy: 'latency'`, `'health'` or `'random'`: the selector of the feature that brings it (latency-selector.ts, health.ts, random.ts). */
  readonly #byStrategy: Selector<C> | undefined;

  /** Starts recording attempt durations (a call's own `hedge: { percentile }` needs them). */
  trackLatency(): void {
    if (this.tracksLatency) return;
    this.tracksLatency = true;
    this.#timeSuccesses();
  }

  #timeSuccesses(): void {
    const o = this.opts;
    this.timesSuccesses =
      this.metrics !== undefined || this.listener !== undefined || this.tracksLatency || o.breaker.slowCallMs !== Infinity || o.breaker.mode === 'failure-rate';
  }

  /** Validates and installs an endpoint set, keeping the state of endpoints kept by name. */
  setEndpoints(configs: unknown, groups: unknown = this.groups): void {
    const previous = this.endpoints.length === 0 ? undefined : { endpoints: this.endpoints, byName: this.byName, groups: this.groups };
    const next = buildEndpointSet<C>(configs, groups, previous, this.#limits, this.opts.breaker, this.opts.dailyResetUtcHour, this.clock.now(), this.random, this.wall, this.features.limits);
    this.endpoints = next.endpoints;
    this.byName = next.byName;
    this.groups = next.groups;
    this.#limits = next.limits;
    this.fleet?.quotasChanged(this.clock.now());
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
    const strategy = this.opts.strategy;
    const panic = this.#panic;
    if (panic !== undefined) {
      const picked = panic.select(now, tried, excluded);
      if (picked !== undefined) return picked;
    }
    if (strategy === 'ordered') return selectEndpoint({ tiers: this.tiers, starts: ZERO_STARTS, now, tried, excluded });
    const by = this.#byStrategy;
    if (by !== undefined) return by.select(now, tried, excluded);
    const picked = selectEndpoint({ tiers: this.tiers, starts: this.cursors, now, tried, excluded });
    this.advanceCursors();
    return picked;
  }

  /** The cursor moves once per selection, whether or not the endpoint it landed on could serve. */
  advanceCursors(): void {
    const high = this.tiers[0]!.length;
    const low = this.tiers[1]!.length;
    if (high > 0) this.cursors[0] = (this.cursors[0]! + 1) % high;
    if (low > 0) this.cursors[1] = (this.cursors[1]! + 1) % low;
  }

  /** Whether `ep`'s tier is in panic now (breakers ignored), for a call's turn in a queue: a 'wait' selection sets no PANIC bit. */
  inPanic(ep: EndpointState<C>, now: number): boolean {
    return this.#panic !== undefined && this.#panic.has(ep, now);
  }

  emit(event: PoolEvent): void {
    if (this.fleet !== undefined) return this.fleet.emit(event);
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
    const next = this.permitQueue!.shift(); // a call holds a permit only when they are limited
    if (next === undefined) this.permits++;
    else queueMicrotask(() => next.grantPermit());
  }

  callEnded(): void {
    this.active--;
    if (this.active === 0 && this.onIdle !== undefined) this.onIdle();
  }

  /** `close({ abortAfterMs })`: `ms` from now (unless set sooner), every call with an attempt running fails `CLOSED`. */
  abortAfter(ms: number): void {
    const at = this.clock.now() + ms;
    if (at >= this.#abortAt || this.active === 0) return;
    this.#abortAt = at;
    this.stopAborting();
    if (ms > 0) this.#abortTimer = this.clock.setTimeout(() => this.#abortRunning(), ms);
    else this.#abortRunning();
  }

  stopAborting(): void {
    if (this.#abortTimer !== undefined) this.clock.clearTimeout(this.#abortTimer);
    this.#abortTimer = undefined;
  }

  #abortRunning(): void {
    this.#abortTimer = undefined;
    // Every running attempt is queued (see timeouts.ts); a call's first abandons its others too.
    for (const a of this.timeouts.entries() as unknown as Running[]) if (a.queued) a.owner.closedRunning();
  }
}

/** What the timeout queue holds: attempts (call/attempt.ts, not imported here: it imports this file). */
interface Running {
  readonly queued: boolean;
  readonly owner: { closedRunning(): void };
}

const ZERO_STARTS: readonly number[] = [0, 0];
