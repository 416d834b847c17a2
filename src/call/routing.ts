/**
 * A call's `pin` and `exclude` (`execute()`'s options), the call-routing feature
 * (features.ts `routing`): the names checked against the pool's endpoints when the call is
 * planned (plan.ts). The call path's own exclusions (an endpoint that answered
 * `unsupported`) do not need it.
 */
import { PoolError, describe, invalidOption } from '../base/errors.js';
import type { EndpointState } from '../selection/endpoint.js';

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
