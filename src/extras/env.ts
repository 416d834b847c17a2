/**
 * Choosing endpoints from the environment: a service takes a slice of a shared key list
 * (`ENDPOINT_SLICE="1-5"`), and keys counted together upstream are grouped
 * (`ENDPOINT_GROUPS="4-6;7,8"`).
 *
 * A spec is a comma-separated list of 1-based indices and inclusive ranges ("1-5",
 * "1,3,7", "1-3,8"). Upstream limits count per key, not per caller, so two services on
 * the same keys add up on each one: slicing gives each service its own keys. Interleave
 * slices ("1,3,5" / "2,4,6") rather than cut them contiguously: which keys are good
 * changes during the day, and an interleaved slice stays fair whatever the day brings.
 */
import { PoolError } from '../base/errors.js';

/** A spec as an error message may show it: echoed when short or when it reads as indices (an API key list passed by mistake must not reach the logs). */
function shown(spec: string): string {
  return spec.length <= 8 || /^[\d\s,;-]{0,80}$/.test(spec) ? JSON.stringify(spec) : `(a string of ${spec.length} characters, not indices)`;
}

function bad(spec: string, why: string): PoolError {
  return new PoolError('INVALID_OPTIONS', `endpoint spec ${shown(spec)}: ${why}`, { field: 'spec' });
}

/** Parses "1-5,8" into 1-based indices, in order, without duplicates. */
function parseIndices(spec: string, whole: string): number[] {
  const out: number[] = [];
  const seen = new Set<number>();
  for (const raw of spec.split(',')) {
    const part = raw.trim();
    if (part === '') continue;
    const m = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(part);
    if (m === null) throw bad(whole, `expected indices like "1-5" or "1,3,7", got ${shown(part)}`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (from < 1 || to < from) throw bad(whole, `${JSON.stringify(part)} is not a range of indices from 1 up`);
    if (to - from > 100_000) throw bad(whole, `${JSON.stringify(part)} is too wide`);
    for (let i = from; i <= to; i++) {
      if (!seen.has(i)) {
        seen.add(i);
        out.push(i);
      }
    }
  }
  return out;
}

/**
 * The items a slice spec selects. An absent or blank spec selects everything, and so does
 * a spec that selects nothing that exists: a service is never left without endpoints.
 */
export function applySlice<T>(items: readonly T[], spec: string | undefined): T[] {
  if (spec === undefined || spec.trim() === '') return [...items];
  const picked = parseIndices(spec, spec)
    .filter((i) => i <= items.length)
    .map((i) => items[i - 1]!);
  return picked.length === 0 ? [...items] : picked;
}

/**
 * Groups from a spec: groups separated by ";", each in slice syntax, as 1-based indices
 * of the full list. No fallback: a blank spec means no groups. Groups of one are ignored.
 * Returns 0-based indices.
 */
export function parseGroups(spec: string | undefined): number[][] {
  if (spec === undefined || spec.trim() === '') return [];
  const groups: number[][] = [];
  const used = new Set<number>();
  for (const part of spec.split(';')) {
    if (part.trim() === '') continue;
    const members = parseIndices(part, spec);
    for (const i of members) {
      if (used.has(i)) throw bad(spec, `index ${i} is in more than one group`);
      used.add(i);
    }
    if (members.length >= 2) groups.push(members.map((i) => i - 1));
  }
  return groups;
}
