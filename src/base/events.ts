/**
 * The event stream: one typed union, delivered synchronously after the state change it
 * describes.
 *
 * Contract (tested in test/events.test.ts):
 * - every `attempt-start` is followed by exactly one `attempt-success`, `attempt-failure`
 *   or `attempt-cancelled` with the same `callId` and `attempt`;
 * - `retry-scheduled` precedes every backoff sleep;
 * - `breaker-opened` fires on each opening, including each failed probe (with the longer
 *   cooldown); `breaker-closed` once when it closes;
 * - a failed call ends with `call-failed`, whose `error` is what `execute` rejects with;
 *   when the call failed because of an attempt, its `cause` is that attempt's `error`.
 * - durations cover the attempt only, never a wait for a permit, a token or a backoff.
 *
 * A listener that throws is isolated: the exception is swallowed and the call goes on.
 * When no listener is attached the pool builds no event objects at all.
 */
import type { ErrorClass } from './classify.js';
import type { PoolError } from './errors.js';

/** Why an attempt ended without a verdict. */
export type CancelReason = 'aborted' | 'closed' | 'superseded';

/** The class of a failed attempt: what `classify` said, or `timeout` when it ran out of time. */
export type FailureClass = ErrorClass | 'timeout';

interface AttemptFields {
  readonly callId: number;
  readonly endpoint: string;
  /** 1 for the first attempt of a call. */
  readonly attempt: number;
}

export type PoolEvent =
  | (AttemptFields & { readonly type: 'attempt-start'; readonly probe: boolean })
  | (AttemptFields & { readonly type: 'attempt-success'; readonly durationMs: number })
  | (AttemptFields & {
      readonly type: 'attempt-failure';
      readonly durationMs: number;
      readonly errorClass: FailureClass;
      readonly error: unknown;
    })
  | (AttemptFields & { readonly type: 'attempt-cancelled'; readonly durationMs: number; readonly reason: CancelReason })
  | {
      readonly type: 'retry-scheduled';
      readonly callId: number;
      /** The number the next attempt will have. */
      readonly attempt: number;
      readonly delayMs: number;
      /** True when the delay came from the server's `retryAfterMs` hint. */
      readonly hinted: boolean;
    }
  | { readonly type: 'rate-limit-wait'; readonly callId: number; readonly endpoint: string; readonly delayMs: number }
  | { readonly type: 'endpoint-cooling'; readonly endpoint: string; readonly cooldownMs: number }
  /**
   * A learned ceiling changed: set from a hint (`reason: 'hint'`; `clampedFrom` when the
   * hinted number was outside the learned range) or raised by recovery (`'recovery'`).
   * `scope`: the endpoint's own limit (`key`) or its group's shared one (`group`).
   */
  | {
      readonly type: 'endpoint-recalibrated';
      readonly endpoint: string;
      readonly perSecond: number;
      readonly scope: 'key' | 'group';
      readonly reason: 'hint' | 'recovery';
      readonly clampedFrom?: number;
    }
  /**
   * An adaptive limit (`rateLimit.adaptive`) moved: down after a rate-limited answer with no
   * number (`reason: 'decrease'`), up while the server accepts (`'increase'`).
   */
  | { readonly type: 'endpoint-adapted'; readonly endpoint: string; readonly perSecond: number; readonly previous: number; readonly reason: 'decrease' | 'increase' }
  /** The endpoint's daily quota is spent: no calls until `untilMs`. */
  | { readonly type: 'endpoint-parked'; readonly endpoint: string; readonly untilMs: number }
  /** The endpoint can never succeed (e.g. an invalid key): out until `enableEndpoint`. */
  | { readonly type: 'endpoint-disabled'; readonly endpoint: string }
  | { readonly type: 'endpoint-enabled'; readonly endpoint: string }
  /** A credential refresh for the endpoint finished (once per refresh, however many calls waited on it). */
  | { readonly type: 'auth-refresh'; readonly endpoint: string; readonly ok: boolean; readonly error?: unknown }
  /** A hedged attempt is starting beside a slow one (its `attempt-start` follows). */
  | { readonly type: 'hedge'; readonly callId: number; readonly endpoint: string; readonly attempt: number }
  /** A tier entered (or left) panic mode: too many of its endpoints are ejected, so breakers are ignored there. */
  | { readonly type: 'panic'; readonly priority: 'high' | 'low'; readonly active: boolean }
  /** The shared limiter store timed out or failed: local limits at the degraded share. */
  | { readonly type: 'store-degraded'; readonly error: unknown }
  /** The shared limiter store answers again: full local limits restored. */
  | { readonly type: 'store-recovered' }
  /** A counter reported by the caller through `pool.report()`. */
  | { readonly type: 'report'; readonly endpoint: string; readonly name: string; readonly value: number }
  | { readonly type: 'breaker-opened'; readonly endpoint: string; readonly cooldownMs: number }
  | { readonly type: 'breaker-closed'; readonly endpoint: string }
  /** A half-open probe was out `outMs`, past the open period and the pool's bound on an attempt: presumed lost, its slot went to the probe whose `attempt-start` came just before. */
  | { readonly type: 'probe-lost'; readonly endpoint: string; readonly outMs: number }
  | { readonly type: 'call-failed'; readonly callId: number; readonly error: PoolError };

export type PoolEventType = PoolEvent['type'];

export type EventListener = (event: PoolEvent) => void;

/** Calls a listener, isolating whatever it throws. */
export function deliver(listener: EventListener, event: PoolEvent): void {
  try {
    const result: unknown = listener(event);
    // An async listener that rejects must not surface as an unhandled rejection either.
    if (typeof result === 'object' && result !== null && typeof (result as PromiseLike<unknown>).then === 'function') {
      (result as PromiseLike<unknown>).then(undefined, () => undefined);
    }
  } catch {
    // A broken listener must never change a call's outcome.
  }
}

/** The event of one type, narrowed from the union. */
export type PoolEventOf<T extends PoolEventType> = Extract<PoolEvent, { readonly type: T }>;

/**
 * What `pool.on()` returns: call it to unsubscribe (idempotent). It is also a
 * `Disposable` where the runtime has `Symbol.dispose`, so `using sub = pool.on(...)`
 * unsubscribes at the end of the block.
 */
export interface Unsubscribe {
  (): void;
  [Symbol.dispose](): void;
}

/**
 * The pool's subscribers: `onEvent` from the constructor plus those added with `on()`,
 * for one type or all. `current` is a single function, or `undefined` when nobody
 * listens, so the hot path keeps checking one field before building an event.
 */
export class Listeners {
  /** Subscribers by type, those for all types under `'*'`; a type with none has no entry. */
  readonly #byType = new Map<string, readonly EventListener[]>();
  #current: EventListener | undefined;
  readonly #changed: (current: EventListener | undefined) => void;

  constructor(initial: EventListener | undefined, changed: (current: EventListener | undefined) => void) {
    this.#changed = changed;
    if (initial !== undefined) this.#byType.set('*', [initial]);
    this.#current = initial;
  }

  get current(): EventListener | undefined {
    return this.#current;
  }

  add(type: PoolEventType | '*', listener: EventListener): Unsubscribe {
    // Each subscription is its own entry (the same function twice is called twice, removed once per unsubscribe).
    const entry: EventListener = (event) => listener(event);
    this.#set(type, [...(this.#byType.get(type) ?? []), entry]);
    let done = false;
    const off = (() => {
      if (done) return;
      done = true;
      this.#set(type, (this.#byType.get(type) ?? []).filter((l) => l !== entry));
    }) as Unsubscribe;
    const dispose = (Symbol as { dispose?: symbol }).dispose;
    if (typeof dispose === 'symbol') (off as unknown as Record<symbol, () => void>)[dispose] = off;
    return off;
  }

  #set(type: string, list: readonly EventListener[]): void {
    const byType = this.#byType;
    if (list.length === 0) byType.delete(type);
    else byType.set(type, list);
    const all = byType.get('*') ?? [];
    let next: EventListener | undefined;
    // No typed subscriber (the map holds `'*'` alone, or nothing) and at most one for all: that one, called directly.
    if (byType.size === (all.length > 0 ? 1 : 0) && all.length <= 1) next = all[0];
    else {
      // Snapshots: a listener that (un)subscribes during delivery changes the next event's listeners, not this one's.
      next = (event) => {
        const typed = byType.get(event.type);
        for (const l of all) deliver(l, event);
        if (typed !== undefined) for (const l of typed) deliver(l, event);
      };
    }
    this.#current = next;
    this.#changed(next);
  }
}

/** Every event type `pool.on()` accepts. */
const TYPES = [
  '*',
  'attempt-start',
  'attempt-success',
  'attempt-failure',
  'attempt-cancelled',
  'retry-scheduled',
  'rate-limit-wait',
  'endpoint-cooling',
  'endpoint-recalibrated',
  'endpoint-adapted',
  'endpoint-parked',
  'endpoint-disabled',
  'endpoint-enabled',
  'auth-refresh',
  'hedge',
  'panic',
  'store-degraded',
  'store-recovered',
  'report',
  'breaker-opened',
  'breaker-closed',
  'probe-lost',
  'call-failed',
] as const satisfies readonly (PoolEventType | '*')[];

/** Compiles only while TYPES holds every type of the union: a type added to it and not here fails. */
type Never<T extends never> = T;
type UnlistedEventType = Never<Exclude<PoolEventType, (typeof TYPES)[number]>>;

/** True for an event type `pool.on()` accepts (or `'*'`). */
export function isEventType(value: unknown): value is PoolEventType | '*' {
  return typeof value === 'string' && (TYPES as readonly string[]).includes(value);
}
