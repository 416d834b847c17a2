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
import type { Quota, ResolvedRateLimit } from '../limits/quota.js';
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

function sameLimit(a: ResolvedRateLimit | undefined, b: ResolvedRateLimit | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

interface Built<C> {
  readonly state: EndpointState<C>;
  readonly limit: ResolvedRateLimit | undefined;
  /** A kept endpoint whose rate limit changed: it gets a fresh quota once everything is validated. */
  readonly newQuota: boolean;
}

/** The rate limit a group's members share; throws when members disagree. */
function groupLimit<C>(group: string[], g: number, byName: Map<string, EndpointState<C>>, limits: Map<EndpointState<C>, ResolvedRateLimit | undefined>): ResolvedRateLimit | undefined {
  let limit: ResolvedRateLimit | undefined;
  for (const n of group) {
    const l = limits.get(byName.get(n)!);
    if (l === undefined) continue;
    if (limit !== undefined && !sameLimit(limit, l)) throw invalidOption(`groups[${g}]`, 'members whose rateLimit settings agree', group);
    limit = l;
  }
  return limit;
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
  const { groups, at, declared } = resolveGroups(groupsValue, byName, previous === undefined);
  if (declared.length > 0 && features === undefined) throw needFeature('groups', 'limits');
  const limits = new Map<EndpointState<C>, ResolvedRateLimit | undefined>();
  for (const b of built) limits.set(b.state, b.limit);
  const groupLimits = groups.map((group, g) => groupLimit(group, at[g]!, byName, limits));
  // Everything is valid: only now is any kept endpoint changed (a throw above changes nothing).
  const before = new Map(built.map((b) => [b.state, b.state.quota]));
  for (const b of built) if (b.newQuota) b.state.quota = carryDay(quota(b.limit, `endpoint:${b.state.name}`), [before.get(b.state)!], now);
  const grouped = new Set<EndpointState<C>>();
  for (let g = 0; g < groups.length; g++) {
    const members = groups[g]!.map((n) => byName.get(n)!);
    const limit = groupLimits[g];
    // Keep the shared quota if every member already shared one with the same limit.
    const first = members[0]!.quota;
    const reuse = members.every((m) => m.quota === first && sameLimit(previousLimits.get(m), limit) && isKeptMember(m, previous));
    // Groups exist only with the limits feature (refused above): their quotas are Quotas.
    const shared = reuse ? (first as Quota) : (carryDay(features!.quota(limit, resetUtcHour, now, `group:${groups[g]!.join('+')}`, wall), members.map((m) => before.get(m)!), now, false) as Quota);
    for (const m of members) {
      // A park a member brings (its server said its day is spent) stays its own in the group: the siblings serve.
      const parked = before.get(m)!.parkedUntil;
      if (!reuse && parked > now) {
        const own = (m.own ??= features!.keyLevel(shared, m.name, resetUtcHour, now, wall));
        if (own.parkedUntil < parked) own.parkedUntil = parked;
      }
      m.quota = shared;
      limits.set(m, limit);
      grouped.add(m);
    }
  }
  // An endpoint that left its group gets a quota of its own again.
  for (const b of built) {
    if (!grouped.has(b.state) && b.state.quota.grouped) b.state.quota = carryDay(quota(b.limit, `endpoint:${b.state.name}`), [before.get(b.state)!], now);
  }
  if (previous !== undefined) for (const old of previous.endpoints) if (byName.get(old.name) !== old) old.live = false;
  return { endpoints: built.map((b) => b.state), byName, groups: declared, limits };
}

/** A new quota takes the day its predecessors spent; `parks`: their parks too (not into a group: the members keep theirs as their own). */
function carryDay(quota: BasicQuota, from: readonly BasicQuota[], now: number, parks = true): BasicQuota {
  for (const old of new Set(from)) {
    if (parks && old.parkedUntil > quota.parkedUntil) quota.parkedUntil = old.parkedUntil;
    if (old.daily !== undefined) quota.daily?.absorb(old.daily, now, parks);
  }
  return quota;
}

function isKeptMember<C>(m: EndpointState<C>, previous: EndpointSet<C> | undefined): boolean {
  return previous !== undefined && previous.byName.get(m.name) === m;
}

/**
 * Groups by name. In the constructor (`strict`), unknown names are an error; when the
 * endpoint set is replaced, members no longer present are left out of `groups` (the groups
 * in force) but kept in `declared`. A name may be in one group only; groups of fewer than
 * two present members are ignored.
 */
function resolveGroups(value: unknown, byName: Map<string, unknown>, strict: boolean): { groups: string[][]; at: number[]; declared: string[][] } {
  if (value === undefined) return { groups: [], at: [], declared: [] };
  if (!Array.isArray(value)) throw invalidOption('groups', 'an array of arrays of endpoint names', value);
  const seen = new Set<string>();
  const groups: string[][] = [];
  /** Each group's index in `value`, for messages. */
  const at: number[] = [];
  const declared: string[][] = [];
  value.forEach((group: unknown, g) => {
    if (!Array.isArray(group)) throw invalidOption(`groups[${g}]`, 'an array of endpoint names', group);
    const members: string[] = [];
    const names: string[] = [];
    group.forEach((name: unknown, i) => {
      if (typeof name !== 'string' || (strict && !byName.has(name))) throw invalidOption(`groups[${g}][${i}]`, 'the name of an endpoint of this pool', name);
      if (seen.has(name)) throw invalidOption(`groups[${g}][${i}]`, 'a name that is in no other group', name);
      seen.add(name);
      names.push(name);
      if (byName.has(name)) members.push(name);
    });
    declared.push(names);
    if (members.length >= 2) {
      groups.push(members);
      at.push(g);
    }
  });
  return { groups, at, declared };
}
