/** Types for keypools.mjs (the generated key-pool profiles), for the property test. */
export interface KeyProfile {
  readonly seed: number;
  readonly durationMs: number;
  readonly keys: readonly { readonly name: string; readonly plan: number; readonly limit: number; readonly group: string | undefined; readonly invalid?: boolean; readonly dailyCapAtMs?: number }[];
  readonly groups: readonly { readonly name: string; readonly plan: number; readonly limit: number; readonly members: readonly string[] }[];
  readonly drifts: readonly { readonly target: string; readonly from: number; readonly to: number; readonly factor: number }[];
}
export interface KeyRun {
  readonly calls: number;
  readonly failurePct: number;
  readonly selfInflicted429Pct: number;
  readonly medianFailureMs: number;
  readonly servedP99Ms: number;
  readonly deadlineMs: number;
  readonly unsettled: number;
  readonly capacity: number;
  readonly codes: Record<string, number>;
  readonly fates: { readonly ok: number; readonly perSecond: number; readonly daily: number; readonly invalid: number };
  /** What an ideal scheduler with the same margin and queue bound fails on the same arrivals (%). */
  readonly oracleFailurePct: number;
}
export function generateProfile(seed: number, durationMs?: number): KeyProfile;
export function trueCapacity(profile: KeyProfile): number;
export function recommendedOptions(profile: KeyProfile, classify: (error: unknown) => unknown, deadlineMs?: number): Record<string, unknown> & { deadlineMs: number };
export function runKeyPool(o: {
  profile: KeyProfile;
  load: number;
  Pool: unknown;
  FakeClock: unknown;
  options: (profile: KeyProfile) => Record<string, unknown>;
  durationMs?: number;
  seed?: number;
  /** The pool's clock reads up to this much ahead of the time its timers run on (see `readAhead`). @default 0 */
  jitterMs?: number;
  /** Diagnostics: `started(pool, clock)`, `event(now, event)`, `failed(arrivedAt, now, error)`. */
  trace?: { started?: (pool: unknown, clock: unknown) => void; event?: (now: number, e: unknown) => void; failed?: (arrivedAt: number, now: number, e: unknown) => void };
}): Promise<KeyRun>;
export function readAhead(clock: { now(): number; wallNow(): number; setTimeout(fn: () => void, ms: number, background?: boolean): unknown; clearTimeout(h: unknown): void; setRef(h: unknown, keepAlive: boolean): void }, jitterMs: number, rng: { next(): number }): unknown;
export function capacityAt(profile: KeyProfile, t: number, capped?: boolean): number;
export function arrivalTimes(profile: KeyProfile, mean: number, durationMs: number, arrivals: { next(): number; exponential(mean: number): number }): number[];
export function oracleFailurePct(profile: KeyProfile, times: readonly number[], maxWaitMs: number, share?: number): number;
