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
}): Promise<KeyRun>;
