/**
 * When a call has nowhere left to go: how many attempts it may make, whether any wait
 * could still end in an attempt, and what to give as the cause when it made none.
 */
import { AUTO_ATTEMPTS, DEFAULTS } from '../options/defaults.js';
import type { Verdict } from '../base/classify.js';
import type { Hedging } from './hedging.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';
import { WaitSlots } from './waits.js';

/**
 * The attempt cap (replays after a credential refresh not counted). `maxAttempts` left
 * unset (`AUTO_ATTEMPTS`): every endpoint of the pool once, and at least
 * `DEFAULTS.maxAttempts`, so that with a, b and c down a call still reaches d.
 */
export function attemptLimit<C>(s: PoolState<C>, maxAttempts: number): number {
  return maxAttempts === AUTO_ATTEMPTS ? Math.max(DEFAULTS.maxAttempts, s.endpoints.length) : maxAttempts;
}

/** Every candidate is excluded for this call or disabled: no wait can end in an attempt. */
export function nothingCanAdmit<C>(s: PoolState<C>, pin: EndpointState<C> | undefined, excluded: readonly EndpointState<C>[] | undefined): boolean {
  if (pin !== undefined) return pin.disabled || excluded?.includes(pin) === true;
  for (const ep of s.endpoints) if (!ep.disabled && excluded?.includes(ep) !== true) return false;
  return true;
}

/** Why an endpoint takes no call now, as `outReason` numbers them. */
const OUT_REASONS = ['excluded for this call', 'disabled', 'breaker open', 'parked, quota spent'];

/** Why `ep` takes no call now (an index into OUT_REASONS); `unavailableMs` checks the same, in the same order. */
export function outReason<C>(ep: EndpointState<C>, now: number, excluded: readonly EndpointState<C>[] | undefined): number {
  return excluded?.includes(ep) === true ? 0 : ep.disabled ? 1 : ep.breaker.admits(now) ? 3 : 2;
}

/** NO_ENDPOINT's message: each reason with the endpoints it holds back (three named at most), so that a spent quota does not read as an open breaker. */
export function noEndpointMessage<C>(s: PoolState<C>, now: number, excluded: readonly EndpointState<C>[] | undefined): string {
  const names: string[][] = [[], [], [], []];
  for (const ep of s.endpoints) names[outReason(ep, now, excluded)]!.push(JSON.stringify(ep.name));
  const parts: string[] = [];
  names.forEach((n, i) => {
    if (n.length > 0) parts.push(`${OUT_REASONS[i]}: ${n.slice(0, 3).join(', ')}${n.length > 3 ? ` and ${n.length - 3} more` : ''}`);
  });
  return `no endpoint admits calls (${parts.join('; ')})`;
}

/** Remembers an error that counted against `ep` (a transient failure, a timeout). */
export function keepError<C>(ep: EndpointState<C>, error: unknown, now: number): void {
  ep.lastError = error;
  ep.lastErrorAt = now;
}

/** The most recent error any endpoint recorded: why a call that made no attempt found nothing open. */
export function lastPoolError<C>(s: PoolState<C>): unknown {
  let at = Number.NEGATIVE_INFINITY;
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
  /** Endpoints whose credentials this call already refreshed. */
  refreshed: EndpointState<C>[] | undefined = undefined;
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
  /** Hedged attempts, for a call with a hedge plan. */
  hedging: Hedging<C> | undefined = undefined;

  constructor(attempts: number) {
    super();
    this.attempts = attempts;
  }

  /** Leaves `ep` out of the call's later selections, on top of the plan's own exclusions. */
  exclude(ep: EndpointState<C>, planned: readonly EndpointState<C>[] | undefined): void {
    (this.excluded ??= planned?.slice() ?? []).push(ep);
  }

  markTried(ep: EndpointState<C>): void {
    if (!(this.tried ??= []).includes(ep)) this.tried.push(ep);
  }
}
