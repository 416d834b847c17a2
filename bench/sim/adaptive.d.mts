/** Types for adaptive.mjs (limits that tune themselves, issue 18), for the test. */
export interface AdaptivePhase {
  readonly limit: number;
  readonly utilisationAfter30s: number;
  readonly reach90Ms: number | null;
}
export interface AdaptiveRun {
  readonly contender: string;
  readonly rate: number;
  readonly seed: number;
  readonly phases: readonly AdaptivePhase[];
  readonly utilisation: number;
  readonly attempts: number;
  readonly limited: number;
  readonly limitedPct: number;
  readonly calls: number;
  readonly failedPct: number;
  readonly adapted: number;
}
export const SETTLE_MS: number;
export function contenders(rate: number): readonly { readonly name: string }[];
export function runAdaptive(o: { Pool: unknown; FakeClock: unknown; rate: number; seed: number; phaseMs?: number; only?: readonly string[] }): Promise<AdaptiveRun[]>;
export function worst(results: readonly AdaptiveRun[]): unknown[];
export function runAdaptiveAll(o: { Pool: unknown; FakeClock: unknown; rates?: readonly number[]; seeds?: readonly number[]; phaseMs?: number; only?: readonly string[]; log?: (s: string) => void }): Promise<{ rates: number[]; seeds: number[]; phaseMs: number; worst: unknown[]; results: AdaptiveRun[] }>;
export function renderAdaptive(run: { rates: readonly number[]; seeds: readonly number[]; phaseMs: number; results: readonly AdaptiveRun[] }): string;
