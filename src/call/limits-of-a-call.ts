/**
 * When a call has nowhere left to go: how many attempts it may make, whether any wait
 * could still end in an attempt, and what to give as the cause when it made none.
 */
import { AUTO_ATTEMPTS, DEFAULTS } from '../options/defaults.js';
import type { Verdict } from '../base/classify.js';
import type { Attempt } from './attempt.js';
import type { Hedging } from './hedging.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';
import { WaitSlots } from './waits.js';
import { quoted } from './outcome.js';

/**
 * The attempt cap (replays after a credential refresh not counted). `maxAttempts` left
 * unset (`AUTO_ATTEMPTS`): every endpoint of the pool once, and at least
 * `DEFAULTS.maxAttempts`, so that with a, b and c down a call still reaches d. Endpoints the
 * call tried (or left out after they refused it) that `setEndpoints` has since removed or
 * replaced count on top (`h`): a replacement is an endpoint the call has not tried, and it must
 * not cost the call its last one.
 */
export function attemptLimit<C>(s: PoolState<C>, maxAttempts: number, h?: CallHistory<C>): number {
  if (maxAttempts !== AUTO_ATTEMPTS) return maxAttempts;
  let n = s.endpoints.length;
  if (h !== undefined) n += gone(h);
  return Math.max(DEFAULTS.maxAttempts, n);
}

/** Endpoints the call tried or left out (see `exclude`) that have left the pool. */
function gone<C>(h: CallHistory<C>): number {
  let n = 0;
  if (h.tried !== undefined) for (const ep of h.tried) if (!ep.live) n++;
  return n;
}

/** A call made every attempt it may (`h`: its history; replays after a credential refresh not counted). */
export function spent<C>(s: PoolState<C>, attempts: number, h: CallHistory<C> | undefined, maxAttempts: number): boolean {
  return attempts - (h?.replays ?? 0) >= attemptLimit(s, maxAttempts, h);
}

/** Every candidate is excluded for this call or disabled: no wait can end in an attempt. */
export function nothingCanAdmit<C>(s: PoolState<C>, excluded: readonly EndpointState<C>[] | undefined): boolean {
  for (const ep of s.endpoints) if (!ep.disabled && excluded?.includes(ep) !== true) return false;
  return true;
}

/** Six items at most, then how many more. */
export function listed(items: readonly string[], total = items.length): string {
  return items.slice(0, 6).join(', ') + (total > 6 ? ` and ${total - 6} more` : '');
}

/** NO_ENDPOINT's message: why each endpoint takes no call (a spent quota is no open breaker). */
export function noEndpointMessage<C>(s: PoolState<C>, now: number, excluded: readonly EndpointState<C>[] | undefined): string {
  return `no endpoint admits calls: ${listed(s.endpoints.map((ep) => `${quoted(ep)} ${excluded?.includes(ep) === true ? 'excluded' : ep.disabled ? 'disabled' : ep.breaker.admits(now) ? 'parked' : ep.breaker.waitMs(now) > 0 ? 'breaker open' : 'breaker half-open (probe out)'}`))}`;
}

/** Remembers an error that counted against `ep` (a transient failure, a timeout). */
export function keepError<C>(ep: EndpointState<C>, error: unknown, now: number): void {
  ep.lastError = error;
  ep.lastErrorAt = now;
}

/** The most recent error any endpoint recorded: why a call that made no attempt found nothing open. */
export function lastPoolError<C>(s: PoolState<C>): unknown {
  let at = -Infinity;
  let error: unknown;
  for (const ep of s.endpoints) {
    if (ep.lastErrorAt > at) {
      at = ep.lastErrorAt;
      error = ep.lastError;
    }
  }
  return error;
}

/**
 * What only a call that fails, retries, backs off, refreshes credentials or asks the
 * shared store keeps: made on first need, so a call that succeeds at once carries one
 * empty field instead of eight (heap per call in flight).
 */
export class CallHistory<C> extends WaitSlots {
  /** Attempts started so far (hedges included). */
  attempts: number;
  /** Replays after a credential refresh: attempts that spend no retry budget. */
  replays = 0;
  /** Credential refreshes this call counted: each as its endpoint, the endpoint's generation when it started and the counted attempt (auth.ts). */
  refreshed: (EndpointState<C> | number)[] | undefined = undefined;
  retries = 0;
  lastDelay = 0;
  lastError: unknown = undefined;
  /** The cooldown set by the last failure when it was rate-limited. */
  lastRetryAfterMs: number | undefined = undefined;
  /** The endpoint the shared store is being asked about. */
  admitting: EndpointState<C> | undefined = undefined;
  /** The classifier's verdict, reused across failures. */
  verdict: Verdict | undefined = undefined;
  /** Endpoints tried so far (a retry prefers others). */
  tried: EndpointState<C>[] | undefined = undefined;
  /** The plan's exclusions plus endpoints this call left out (unsupported, parked); `undefined`: the plan's. */
  excluded: EndpointState<C>[] | undefined = undefined;
  /** The latest primary attempt after the call's own (see `Call.#latest`). */
  last: Attempt<C> | undefined = undefined;
  /** Hedged attempts, for a call with a hedge plan. */
  hedges: Hedging<C> | undefined = undefined;

  constructor(attempts: number) {
    super();
    this.attempts = attempts;
  }

  /** Leaves `ep` out of the call's later selections, on top of the plan's own exclusions. */
  exclude(ep: EndpointState<C>, planned: readonly EndpointState<C>[] | undefined): void {
    (this.excluded ??= planned?.slice() ?? []).push(ep);
    // Tried too, so that the attempt cap counts it once if it leaves the pool (a call that
    // tried it and then left it out counted it twice); never selected again, it changes nothing else.
    this.markTried(ep);
  }

  markTried(ep: EndpointState<C>): void {
    if (!(this.tried ??= []).includes(ep)) this.tried.push(ep);
  }

  /** The first six failures, as endpoint and what happened, in turn (see noteFailure). */
  failures: (EndpointState<C> | string)[] | undefined = undefined;
  failed = 0;
}

/** The failed attempts of a call between `open` and `close`, or '' when none failed. */
export function failureList<C>(h: CallHistory<C> | undefined, open = ' (failed: ', close = ')'): string {
  const f = h?.failures;
  if (f === undefined) return '';
  const items: string[] = [];
  for (let i = 0; i < f.length; i += 2) items.push(`${quoted(f[i] as EndpointState<C>)} ${f[i + 1] as string}`);
  return open + listed(items, h!.failed) + close;
}

/** Notes `"a" timeout` for a failed attempt (the first six), for the call's final message (`failures`, `failed`). */
export function noteFailure<C>(h: CallHistory<C>, ep: EndpointState<C>, what: string): void {
  if (++h.failed <= 6) (h.failures ??= []).push(ep, what); // the words only if a message needs them (most failures are retried)
}
