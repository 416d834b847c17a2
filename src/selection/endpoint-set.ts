/**
 * Turns a list of endpoint configs (and groups) into endpoint states, validating every
 * field, and carries state over from the previous set: an endpoint kept by name with the
 * same connection keeps its breaker, counters and quota (its settings change in place); a
 * group kept with the same members and limit keeps its shared quota.
 */
import type { BreakerOptions } from '../health/breaker.js';
import type { RandomSource } from '../base/clock.js';
import { EndpointState } from './endpoint.js';
import { invalidOption } from '../base/errors.js';
import { DEFAULTS } from '../options/defaults.js';
import { PRIORITIES, type EndpointConfig, type Priority } from '../options/options.js';
import { limitOrInfinity, oneOf, optionsObject, positiveInteger, type KnownKeys } from '../options/validate.js';

const ENDPOINT_KEYS: Record<keyof EndpointConfig<unknown>, true> & KnownKeys = {
  name: true,
  conn: true,
  priority: true,
  weight: true,
  rateLimit: true,
  maxInFlight: true,
};

const ENDPOINT_ALIASES: Readonly<Record<string, string>> = { url: 'conn', client: 'conn', connection: 'conn', tier: 'priority', concurrency: 'maxInFlight' };
import type { ResolvedRateLimit } from '../limits/quota.js';
import { BasicQuota } from '../limits/basic-quota.js';
import { needFeature, type Features } from '../features.js';

const MAX_WEIGHT = 1000;

export interface EndpointSet<C> {
  readonly endpoints: EndpointState<C>[];
  readonly byName: Map<string, EndpointState<C>>;
  /**
   * The groups as declared (members by name, absent ones included), for the next
   * replacement: a key taken out and put back without a `groups` argument rejoins its group.
   */
  readonly groups: string[][];
}

/** An endpoint as configured, with its checked rate limit (limits/groups.ts arranges the quotas). */
export interface Built<C> {
  readonly state: EndpointState<C>;
  readonly limit: ResolvedRateLimit | undefined;
}

export function buildEndpointSet<C>(
  configs: unknown,
  groupsValue: unknown,
  previous: EndpointSet<C> | undefined,
  previousLimits: Map<EndpointState<C>, ResolvedRateLimit | undefined>,
  breaker: BreakerOptions,
  resetUtcHour: number,
  now: number,
  random: RandomSource,
  wall?: () => number,
  features?: Features['limits'],
): EndpointSet<C> & { readonly limits: Map<EndpointState<C>, ResolvedRateLimit | undefined> } {
  if (!Array.isArray(configs) || configs.length === 0) throw invalidOption('endpoints', 'a non-empty array', configs);
  // With the limits feature every endpoint gets a full Quota, limited or not (a Quota can learn a ceiling); without it, the cooldown only.
  const quota = features === undefined ? (): BasicQuota => new BasicQuota() : (limit: ResolvedRateLimit | undefined, key: string): BasicQuota => features.quota(limit, resetUtcHour, now, key, wall);
  const built: Built<C>[] = [];
  const byName = new Map<string, EndpointState<C>>();
  const kept: [EndpointState<C>, Priority, number, number][] = [];
  for (let i = 0; i < configs.length; i++) {
    const field = `endpoints[${i}]`;
    const c = optionsObject(field, configs[i], ENDPOINT_KEYS, ENDPOINT_ALIASES) as Partial<EndpointConfig<C>> | undefined;
    if (c === undefined) throw invalidOption(field, 'an endpoint object', undefined);
    if (typeof c.name !== 'string' || c.name.length === 0) throw invalidOption(`${field}.name`, 'a non-empty string', c.name);
    if (byName.has(c.name)) throw invalidOption(`${field}.name`, 'a name not used by another endpoint', c.name);
    if (!('conn' in c)) throw invalidOption(`${field}.conn`, 'a connection value', undefined);
    const priority = oneOf(`${field}.priority`, c.priority, PRIORITIES, DEFAULTS.priority);
    const weight = positiveInteger(`${field}.weight`, c.weight, DEFAULTS.weight);
    // The rotation ring repeats an endpoint `weight` times: keep it a ring, not a memory bomb.
    if (weight > MAX_WEIGHT) throw invalidOption(`${field}.weight`, `a positive integer up to ${MAX_WEIGHT}`, weight);
    const maxInFlight = limitOrInfinity(`${field}.maxInFlight`, c.maxInFlight);
    let limit: ResolvedRateLimit | undefined;
    if (c.rateLimit !== undefined) {
      if (features === undefined) throw needFeature(`${field}.rateLimit`, 'limits');
      limit = features.resolve(`${field}.rateLimit`, c.rateLimit);
    }
    const old = previous?.byName.get(c.name);
    // The same connection is the same endpoint (calls that pinned, excluded or tried it know it):
    // its settings change in place, once the whole list is valid (a throw changes nothing).
    const keep = old !== undefined && old.conn === c.conn;
    if (keep) kept.push([old, priority, weight, maxInFlight]);
    const state = keep ? old : new EndpointState(c.name, c.conn as C, priority, weight, maxInFlight, breaker, quota(limit, `endpoint:${c.name}`), random);
    built.push({ state, limit });
    byName.set(c.name, state);
  }
  let set: Pick<EndpointSet<C>, 'groups'> & { readonly limits: Map<EndpointState<C>, ResolvedRateLimit | undefined> } = { groups: [], limits: new Map() };
  if (features !== undefined) set = features.group(built, groupsValue, byName, previous, previousLimits, quota, resetUtcHour, now, wall);
  // Groups share a quota's limit: only the limits feature makes them (`groups: []` is nothing to refuse).
  else if (groupsValue !== undefined && !(Array.isArray(groupsValue) && groupsValue.length === 0)) throw needFeature('groups', 'limits');
  for (const [ep, p, w, m] of kept) (ep.priority = p), (ep.weight = w), (ep.maxInFlight = m);
  if (previous !== undefined) for (const old of previous.endpoints) if (byName.get(old.name) !== old) old.live = false;
  return { endpoints: built.map((b) => b.state), byName, ...set };
}
