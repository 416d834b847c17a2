/**
 * A call's `pin`, `exclude` and `avoid` (`execute()`'s options), the call-routing feature
 * (features.ts `routing`): the names checked against the pool's endpoints when the call is
 * planned (plan.ts), `avoid` asked at each selection. The call path's own exclusions (an endpoint that answered
 * `unsupported`) do not need it.
 */
import { PoolError, describe, invalidOption } from '../base/errors.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { Selection } from '../selection/selector.js';
import { quoted } from './outcome.js';

/** The endpoints named in `exclude`: a fresh array per call (the call adds to it). */
export function excludedOf<C>(byName: ReadonlyMap<string, EndpointState<C>>, value: unknown): EndpointState<C>[] {
  if (!Array.isArray(value)) throw invalidOption('exclude', 'an array of endpoint names', value);
  // Stryker disable next-line ArrayDeclaration: the list is only ever searched for endpoints (includes), so a stray element changes nothing
  const excluded: EndpointState<C>[] = [];
  value.forEach((name, i) => {
    const ep = typeof name === 'string' ? byName.get(name) : undefined;
    if (ep === undefined) throw invalidOption(`exclude[${i}]`, 'the name of an endpoint of this pool', name);
    excluded.push(ep);
  });
  return excluded;
}

/** The endpoint named in `pin`; `PIN_UNAVAILABLE` when the pool has none of that name. */
export function pinnedOf<C>(byName: ReadonlyMap<string, EndpointState<C>>, value: unknown): EndpointState<C> {
  if (typeof value !== 'string') throw invalidOption('pin', 'an endpoint name', value);
  const pin = byName.get(value);
  if (pin === undefined) throw new PoolError('PIN_UNAVAILABLE', `pinned endpoint ${describe(value)} is not in the pool`);
  return pin;
}

/** What `selectAvoiding` needs of the pool: its selection and its endpoints. */
export interface AvoidingPool<C> {
  select(now: number, tried: EndpointState<C>[] | undefined, excluded: EndpointState<C>[] | undefined): Selection<C>;
  readonly endpoints: readonly EndpointState<C>[];
}

/**
 * `excluded` with the endpoints `avoid` names now added and not in it already: a copy, or
 * `excluded` itself (even undefined) when that adds none. Linear in endpoints and exclusions
 * (routing may have excluded a third of a thousand endpoints). What `avoid` throws goes to the
 * caller.
 */
export function avoidedBy<C>(endpoints: readonly EndpointState<C>[], avoid: (endpoint: string) => unknown, excluded: EndpointState<C>[] | undefined): EndpointState<C>[] | undefined {
  let hits: EndpointState<C>[] | undefined;
  for (const ep of endpoints) if (avoid(ep.name) === true) (hits ??= []).push(ep);
  if (hits === undefined || excluded === undefined || excluded.length === 0) return hits ?? excluded;
  const out: { has(ep: EndpointState<C>): boolean } = hits.length * excluded.length <= 64 ? { has: (ep) => excluded.includes(ep) } : new Set(excluded);
  return hits.every((ep) => out.has(ep)) ? excluded : [...excluded, ...hits.filter((ep) => !out.has(ep))];
}

/**
 * Marks an `avoid` that is patient (head routing's, rpc/head-poll.ts): while an endpoint it does
 * not name, untried, will be free before the call's deadline (its turn, its cooldown, a slot), the
 * call waits for it rather than go to one it names now. A node behind the chain head then serves
 * a read only when those that can serve failed it or are out, not while they are busy (a read
 * served by a free node 3 blocks behind while the tip was at its in-flight cap).
 */
export const PATIENT: unique symbol = Symbol.for('endpoint-pool.patientAvoid') as never;
type Patient = { [PATIENT]?: true };

/** `avoid`, marked patient. */
export function patient<F extends (endpoint: string) => boolean>(avoid: F): F {
  (avoid as Patient)[PATIENT] = true;
  return avoid;
}

/**
 * Selection for a call with `avoid`: the endpoints it names now are picked only when no other
 * can serve the call now, untried. A fresh endpoint beats a retry on one the call tried, so
 * after the others failed the call moves on to an avoided one at once (no backoff), and it
 * waits for a turn or a cooldown only when an avoided endpoint cannot serve either. A throw
 * from `avoid` fails the call (`INVALID_OPTIONS`, the throw as `cause`). Hedges never go to an
 * avoided endpoint (call/hedging.ts): a hedge is a bet on speed, not the last way to serve.
 */
export function selectAvoiding<C>(s: AvoidingPool<C>, avoid: (endpoint: string) => unknown, now: number, tried: EndpointState<C>[] | undefined, excluded: EndpointState<C>[] | undefined, deadlineAt = Infinity): Selection<C> | PoolError {
  let soft: EndpointState<C>[] | undefined;
  try {
    soft = avoidedBy(s.endpoints, avoid, excluded);
  } catch (thrown) {
    return new PoolError('INVALID_OPTIONS', "the call's avoid threw (see cause)", { cause: thrown });
  }
  if (soft === excluded) return s.select(now, tried, excluded);
  const preferred = s.select(now, tried, soft);
  if (preferred.kind === 'endpoint' && !preferred.tried) return preferred;
  if (preferred.kind === 'wait' && (avoid as Patient)[PATIENT] === true && (preferred.endpoint === undefined || tried?.includes(preferred.endpoint) !== true) && (preferred.waitMs === Infinity || now + preferred.waitMs < deadlineAt)) return preferred;
  const any = s.select(now, tried, excluded);
  return (any.kind === 'endpoint' && !any.tried) || preferred.kind !== 'endpoint' ? any : preferred;
}

/** Why the pinned endpoint `ep` cannot serve the call: `PIN_UNAVAILABLE`'s message. */
function cannotServe<C>(ep: EndpointState<C>, why: string): string {
  return `pinned endpoint ${quoted(ep)} cannot serve: ${why}`;
}

/**
 * Selection for a call pinned to one endpoint: that endpoint or nothing. A string: it can
 * never serve this call (the message); otherwise when it can.
 */
export function selectPinned<C>(ep: EndpointState<C>, now: number, tried: readonly EndpointState<C>[] | undefined, excluded: readonly EndpointState<C>[] | undefined): Selection<C> | string {
  if (!ep.live) return cannotServe(ep, 'it was removed from the pool');
  if (excluded?.includes(ep) === true) return cannotServe(ep, 'it answered that it does not support this operation');
  if (ep.disabled) return cannotServe(ep, 'it is disabled');
  const out = ep.unavailableMs(now);
  if (out > 0) return { kind: 'none', retryAfterMs: out };
  const wait = ep.readyInMs(now);
  if (wait > 0) return { kind: 'wait', waitMs: wait, endpoint: ep };
  return { kind: 'endpoint', endpoint: ep, tried: tried?.includes(ep) === true };
}

/** The message for a pinned call that must fail now: its endpoint is out (parked or breaker open). */
export function pinnedOut<C>(ep: EndpointState<C>, now: number): string {
  return cannotServe(ep, ep.breaker.admits(now) ? 'it is parked (quota spent)' : ep.breaker.waitMs(now) > 0 ? 'its breaker is open' : 'its breaker is half-open, its probe still out');
}
