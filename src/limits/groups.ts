/**
 * Groups of endpoints that share one quota (the pool's `groups`: keys of one account), and
 * the quotas of a replaced endpoint set: part of the rate-limit feature (features.ts
 * `limits.group`), run by `buildEndpointSet` once every endpoint config is checked.
 *
 * Checks the groups, then (only when everything is valid, so that a throw changes nothing)
 * carries quotas over: a kept endpoint whose rate limit changed gets a fresh quota with the
 * day it spent; a group kept with the same members and limit keeps its shared quota, a new
 * one takes its members' day; an endpoint that left its group gets a quota of its own again.
 * Each new quota also counts its predecessors' calls of the last second (`carryPace`).
 */
import { invalidOption } from '../base/errors.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { Built, EndpointSet } from '../selection/endpoint-set.js';
import type { BasicQuota } from './basic-quota.js';
import { keyLevel, Quota, type ResolvedRateLimit } from './quota.js';
import { PacedLimiter } from './paced.js';
import { TokenBucket } from './bucket.js';

function sameLimit(a: ResolvedRateLimit | undefined, b: ResolvedRateLimit | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The rate limit a group's members share; throws when members disagree. */
function groupLimit<C>(group: string[], g: number, byName: Map<string, EndpointState<C>>, limits: Map<EndpointState<C>, ResolvedRateLimit | undefined>): ResolvedRateLimit | undefined {
  let limit: ResolvedRateLimit | undefined;
  for (const n of group) {
    const l = limits.get(byName.get(n)!);
    if (l === undefined) continue;
    // A group is shared under its own key.
    if (l.sharedName !== undefined) throw invalidOption(`groups[${g}]`, 'members without a rateLimit.sharedName', group);
    if (limit !== undefined && !sameLimit(limit, l)) throw invalidOption(`groups[${g}]`, 'members whose rateLimit settings agree', group);
    limit = l;
  }
  return limit;
}

/** The groups as declared, and every endpoint's rate limit (for the next replacement). */
export function groupEndpoints<C>(
  built: readonly Built<C>[],
  groupsValue: unknown,
  byName: Map<string, EndpointState<C>>,
  previous: EndpointSet<C> | undefined,
  previousLimits: Map<EndpointState<C>, ResolvedRateLimit | undefined>,
  quota: (limit: ResolvedRateLimit | undefined, key: string) => BasicQuota,
  resetUtcHour: number,
  now: number,
  wall: (() => number) | undefined,
): { readonly groups: string[][]; readonly limits: Map<EndpointState<C>, ResolvedRateLimit | undefined> } {
  const { groups, at, declared } = resolveGroups(groupsValue, byName, previous === undefined);
  const limits = new Map<EndpointState<C>, ResolvedRateLimit | undefined>();
  for (const b of built) limits.set(b.state, b.limit);
  const groupLimits = groups.map((group, g) => groupLimit(group, at[g]!, byName, limits));
  // Everything is valid: only now is any kept endpoint changed (a throw above changes nothing).
  const before = new Map(built.map((b) => [b.state, b.state.quota]));
  // A kept endpoint whose rate limit changed gets a fresh quota: its predecessor's day and pace carry over, unless
  // its sharedName changed (another key: nothing of the old one's is its own).
  for (const b of built) {
    const was = previousLimits.get(b.state);
    if (!isKeptMember(b.state, previous) || sameLimit(was, b.limit)) continue;
    const fresh = quota(b.limit, `endpoint:${b.state.name}`);
    b.state.quota = was?.sharedName !== b.limit?.sharedName ? fresh : carryOver(fresh, [before.get(b.state)!], now);
  }
  const grouped = new Set<EndpointState<C>>();
  for (let g = 0; g < groups.length; g++) {
    const members = groups[g]!.map((n) => byName.get(n)!);
    const limit = groupLimits[g];
    // Keep the shared quota if every member already shared one with the same limit.
    const first = members[0]!.quota;
    const reuse = members.every((m) => m.quota === first && sameLimit(previousLimits.get(m), limit) && isKeptMember(m, previous));
    const shared = reuse ? (first as Quota) : (carryOver(new Quota(limit, resetUtcHour, now, `group:${groups[g]!.join('+')}`, wall), members.map((m) => before.get(m)!), now, false) as Quota);
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
  for (const b of built) {
    if (!grouped.has(b.state) && b.state.quota.grouped) b.state.quota = carryOver(quota(b.limit, `endpoint:${b.state.name}`), [before.get(b.state)!], now);
  }
  return { groups: declared, limits };
}
/**
 * A new quota takes the day its predecessors spent and their last second: the calls they let
 * leave lately count against it (a group rebuilt around a replaced member, or a member's
 * limit changed, must not start a fresh burst on the same account). `parks`: their parks too
 * (not into a group: the members keep theirs as their own).
 */
function carryOver(quota: BasicQuota, from: readonly BasicQuota[], now: number, parks = true): BasicQuota {
  const olds = new Set(from);
  for (const old of olds) {
    if (parks && old.parkedUntil > quota.parkedUntil) quota.parkedUntil = old.parkedUntil;
    if (old.daily !== undefined) quota.daily?.absorb(old.daily, now, parks);
  }
  carryPace(quota, olds, now);
  return quota;
}

/**
 * The predecessors' recent calls, into a new quota's limiter: a paced one records their
 * recent starts (every predecessor's, in order: they were one account's or they are now); a
 * bucket starts short of the tokens they had spent (their deficits add up).
 */
function carryPace(quota: BasicQuota, olds: ReadonlySet<BasicQuota>, now: number): void {
  const rate = quota.rate;
  if (rate === undefined) return;
  const starts: number[] = [];
  let spent = 0;
  for (const old of olds) {
    const r = old.rate;
    if (r instanceof PacedLimiter) starts.push(...r.recent());
    else if (r !== undefined) spent += r.burst - r.tokens(now);
  }
  if (rate instanceof PacedLimiter) {
    starts.sort((a, b) => a - b);
    // A bucket keeps no times: what it had spent counts as calls that left just now.
    for (let i = 0; i < Math.ceil(spent - 1e-9); i++) starts.push(now);
    for (const t of starts) rate.replay(t);
  } else {
    const horizon = now - 1000 - rate.intervalMs;
    for (const t of starts) if (t > horizon) spent++;
    if (spent > 0) quota.rate = new TokenBucket(rate.perSecond, rate.burst, now, Math.max(0, rate.tokens(now) - spent));
  }
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
