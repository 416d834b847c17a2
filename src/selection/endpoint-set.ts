/**
 * Turns a list of endpoint configs (and groups) into endpoint states, validating every
 * field, and carries state over from the previous set: an endpoint kept by name with the
 * same connection and settings keeps its breaker, counters and quota; a group kept with
 * the same members and limit keeps its shared quota.
 */
import type { ResolvedBreaker } from '../health/breaker.js';
import type { RandomSource } from '../base/clock.js';
import { EndpointState } from './endpoint.js';
import { invalidOption } from '../base/errors.js';
import { DEFAULTS } from '../options/defaults.js';
import { PRIORITIES, type EndpointConfig } from '../options/options.js';
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

/** Whether two resolved rate limits are the same settings. */
export function sameLimit(a: ResolvedRateLimit | undefined, b: ResolvedRateLimit | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

interface Built<C> {
  readonly state: EndpointState<C>;
  readonly limit: ResolvedRateLimit | undefined;
  /** A kept endpoint whose rate limit changed: it gets a fresh quota once everything is validated. */
  readonly newQuota: boolean;
}

export function buildEndpointSet<C>(
  configs: unknown,
  groupsValue: unknown,
  previous: EndpointSet<C> | undefined,
  previousLimits: Map<EndpointState<C>, ResolvedRateLimit | undefined>,
  breaker: ResolvedBreaker,
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
    const keep = old !== undefined && old.conn === c.conn && old.priority === priority && old.weight === weight && old.maxInFlight === maxInFlight;
    const key = `endpoint:${c.name}`;
    const state = keep ? old : new EndpointState(c.name, c.conn as C, priority, weight, maxInFlight, breaker, quota(limit, key), random);
    built.push({ state, limit, newQuota: keep && !sameLimit(previousLimits.get(old), limit) });
    byName.set(c.name, state);
  }
  const limits = new Map<EndpointState<C>, ResolvedRateLimit | undefined>();
  for (const b of built) limits.set(b.state, b.limit);
  // `groups` is the limits feature's (limits/groups.ts): without it, any group is refused.
  if (features === undefined && groupsValue !== undefined && !(Array.isArray(groupsValue) && groupsValue.length === 0)) throw needFeature('groups', 'limits');
  const grouping = features?.groups(groupsValue, built.map((b) => b.state), byName, previous, previousLimits, limits, resetUtcHour, now, wall);
  // Everything is valid: only now is any kept endpoint changed (a throw above changes nothing).
  const before = new Map(built.map((b) => [b.state, b.state.quota]));
  for (const b of built) if (b.newQuota) b.state.quota = carryDay(quota(b.limit, `endpoint:${b.state.name}`), [before.get(b.state)!], now);
  grouping?.apply(before);
  if (previous !== undefined) for (const old of previous.endpoints) if (byName.get(old.name) !== old) old.live = false;
  return { endpoints: built.map((b) => b.state), byName, groups: grouping?.declared ?? [], limits };
}

/** A new quota takes the day its predecessors spent; `parks`: their parks too (not into a group: the members keep theirs as their own). */
export function carryDay(quota: BasicQuota, from: readonly BasicQuota[], now: number, parks = true): BasicQuota {
  for (const old of new Set(from)) {
    if (parks && old.parkedUntil > quota.parkedUntil) quota.parkedUntil = old.parkedUntil;
    if (old.daily !== undefined) quota.daily?.absorb(old.daily, now, parks);
  }
  return quota;
}
