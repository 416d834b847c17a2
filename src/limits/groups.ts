/**
 * `groups` (part of the rateLimits feature): endpoints whose rate limits are one account's
 * share one quota. Checked against the endpoint set being built (endpoint-set.ts), then
 * applied once everything is valid: a group kept with the same members and limit keeps its
 * shared quota; a member's park (its server said its day is spent) stays its own; an
 * endpoint that left its group gets a quota of its own again.
 */
import { invalidOption } from '../base/errors.js';
import type { BasicQuota } from './basic-quota.js';
import { Quota, keyLevel, type ResolvedRateLimit } from './quota.js';
import { carryDay, sameLimit, type EndpointSet } from '../selection/endpoint-set.js';
import type { EndpointState } from '../selection/endpoint.js';

/** The groups as declared, and what gives their members a shared quota once every option is valid. */
export interface Grouping<C> {
  readonly declared: string[][];
  /** `before`: each endpoint's quota before this replacement. */
  apply(before: Map<EndpointState<C>, BasicQuota>): void;
}

export function groupEndpoints<C>(
  value: unknown,
  endpoints: readonly EndpointState<C>[],
  byName: Map<string, EndpointState<C>>,
  previous: EndpointSet<C> | undefined,
  previousLimits: Map<EndpointState<C>, ResolvedRateLimit | undefined>,
  limits: Map<EndpointState<C>, ResolvedRateLimit | undefined>,
  resetUtcHour: number,
  now: number,
  wall?: () => number,
): Grouping<C> {
  const { groups, at, declared } = resolveGroups(value, byName, previous === undefined);
  const groupLimits = groups.map((group, g) => groupLimit(group, at[g]!, byName, limits));
  const quota = (limit: ResolvedRateLimit | undefined, key: string): Quota => new Quota(limit, resetUtcHour, now, key, wall);
  const apply = (before: Map<EndpointState<C>, BasicQuota>): void => {
    const grouped = new Set<EndpointState<C>>();
    for (let g = 0; g < groups.length; g++) {
      const members = groups[g]!.map((n) => byName.get(n)!);
      const limit = groupLimits[g];
      // Keep the shared quota if every member already shared one with the same limit.
      const first = members[0]!.quota;
      const reuse = members.every((m) => m.quota === first && sameLimit(previousLimits.get(m), limit) && previous?.byName.get(m.name) === m);
      const shared = reuse ? (first as Quota) : (carryDay(quota(limit, `group:${groups[g]!.join('+')}`), members.map((m) => before.get(m)!), now, false) as Quota);
      for (const m of members) {
        // A park a member brings (its server said its day is spent) stays its own in the group: the siblings serve.
        const parked = before.get(m)!.parkedUntil;
        if (!reuse && parked > now) {
          const own = (m.own ??= keyLevel(shared, m.name, resetUtcHour, now, wall));
          if (own.parkedUntil < parked) own.parkedUntil = parked;
        }
        m.quota = shared;
        limits.set(m, limit);
        grouped.add(m);
      }
    }
    // An endpoint that left its group gets a quota of its own again.
    for (const ep of endpoints) {
      if (!grouped.has(ep) && ep.quota.grouped) ep.quota = carryDay(quota(limits.get(ep), `endpoint:${ep.name}`), [before.get(ep)!], now);
    }
  };
  return { declared, apply };
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
