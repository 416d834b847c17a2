/**
 * Small statistics helpers shared by the benchmarks: median, spread and percentiles of
 * plain number arrays. Nothing here reads a clock.
 */

/** The median of `xs` (NaN for an empty array). */
export function median(xs) {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Spread of repeated runs: min, max, and the half-range as a share of the median. */
export function spread(xs) {
  const min = Math.min(...xs);
  const max = Math.max(...xs);
  const med = median(xs);
  return { min, max, relative: med > 0 ? (max - min) / 2 / med : 0 };
}

/** The `p`-th percentile (0..100) of an already sorted array, nearest rank. */
export function percentileSorted(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

/** Percentiles of an unsorted array (sorts a copy once). */
export function percentiles(xs, ps) {
  const s = Float64Array.from(xs).sort();
  return ps.map((p) => percentileSorted(s, p));
}

/** Rounds to `digits` significant decimals, for readable JSON. */
export function round(x, digits = 3) {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
