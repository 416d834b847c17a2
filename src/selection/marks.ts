/**
 * Membership in a call's tried and excluded lists during one selection. Short lists are
 * searched (`includes`: one to three endpoints, most calls); past that both are marked on
 * their endpoints with a fresh stamp, so the walk over the tiers asks each endpoint in
 * constant time. Searched, a call walking hundreds of endpoints (a large key pool in an
 * outage, an exclude of hundreds) paid tried × endpoints on every selection: 113 µs an
 * attempt at 1,000 endpoints, the selection nine tenths of it (bench/paths/walk-scale.mjs).
 * Selection is synchronous, so one counter serves every pool: no other selection runs while
 * a stamp is in use.
 */
import type { EndpointState } from './endpoint.js';

let stamp = 0;

/**
 * 0: search the lists; else `s`, with `mark` at `s` on each excluded endpoint and at `s + 1`
 * on each tried one that is not also excluded (excluded wins, as where the lists are searched).
 */
export function markLists<C>(tried: readonly EndpointState<C>[] | undefined, excluded: readonly EndpointState<C>[] | undefined): number {
  if ((tried?.length ?? 0) + (excluded?.length ?? 0) <= 8) return 0;
  const s = (stamp += 2);
  if (tried !== undefined) for (const ep of tried) ep.mark = s + 1;
  if (excluded !== undefined) for (const ep of excluded) ep.mark = s;
  return s;
}

/** Whether `ep` is in the call's excluded list, under `markLists`'s answer `m`. */
export function isExcluded<C>(ep: EndpointState<C>, m: number, excluded: readonly EndpointState<C>[] | undefined): boolean {
  return excluded !== undefined && (m !== 0 ? ep.mark === m : excluded.includes(ep));
}

/** Whether `ep` is in the call's tried list (and not excluded, where the lists are marked), under `m`. */
export function isTried<C>(ep: EndpointState<C>, m: number, tried: readonly EndpointState<C>[] | undefined): boolean {
  return tried !== undefined && (m !== 0 ? ep.mark === m + 1 : tried.includes(ep));
}
