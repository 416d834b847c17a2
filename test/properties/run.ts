/**
 * How property tests run: seeded and reproducible.
 *
 * - `FC_RUNS` sets the runs per property (default 1,000; `npm run test:deep` raises it);
 * - `FC_SEED` (and `FC_PATH`, printed with it) replays one failing run exactly;
 * - without `FC_SEED` a fresh seed is drawn per property and printed when it fails.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { simulate, type Outcome, type Scenario, type SimHooks } from './sim.js';

export const RUNS = Number(process.env['FC_RUNS'] ?? 1000);

/** Per-test timeout: generous, since shrinking a failure re-runs many scenarios. */
export const TIMEOUT = Math.max(120_000, RUNS * 40);

export function seedFor(): number {
  const fixed = process.env['FC_SEED'];
  return fixed !== undefined ? Number(fixed) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
}

/** Totals over every run of one property, to show the generator reached the paths it aims at. */
export interface Totals {
  runs: number;
  attempts: number;
  probes: number;
  lostProbes: number;
  calls: number;
  endings: Record<string, number>;
}

/**
 * Runs `simulate` over `arb` and fails with every violation of the shrunk counterexample,
 * the seed, and the command that replays it.
 */
export async function checkScenarios(
  name: string,
  arb: fc.Arbitrary<Scenario>,
  runs = RUNS,
  hooks: SimHooks = {},
  /** An extra condition on each run's outcome (beyond the invariants). */
  expectOutcome: (o: Outcome) => boolean = () => true,
): Promise<Totals> {
  const seed = seedFor();
  const totals: Totals = { runs: 0, attempts: 0, probes: 0, lostProbes: 0, calls: 0, endings: {} };
  let last: Outcome | undefined;
  const result = await fc.check(
    fc.asyncProperty(arb, async (sc) => {
      last = await simulate(sc, hooks);
      totals.runs++;
      totals.attempts += last.attempts;
      totals.probes += last.probes;
      totals.lostProbes += last.lostProbes;
      totals.calls += last.calls;
      for (const [k, n] of Object.entries(last.endings)) totals.endings[k] = (totals.endings[k] ?? 0) + n;
      return last.violations.length === 0 && expectOutcome(last);
    }),
    {
      seed,
      numRuns: runs,
      ...(process.env['FC_PATH'] !== undefined ? { path: process.env['FC_PATH'] } : {}),
      endOnFailure: process.env['FC_SHRINK'] === '0',
    },
  );
  if (result.failed) {
    const replay = `FC_SEED=${result.seed} FC_PATH=${result.counterexamplePath ?? ''} npx vitest run test/properties`;
    const sc = result.counterexample?.[0];
    // Re-run the shrunk counterexample to report its violations.
    const replayed = sc !== undefined ? await simulate(sc, hooks) : undefined;
    const violations = replayed === undefined ? [String(result.errorInstance)] : [...replayed.violations, ...(expectOutcome(replayed) ? [] : [`unexpected outcome: ${JSON.stringify(replayed.endings)}`])];
    const message = [
      `property "${name}" failed after ${result.numRuns} run(s) (seed ${result.seed}); replay with:`,
      `  ${replay}`,
      'violations:',
      ...violations.map((x) => `  - ${x}`),
      'scenario:',
      JSON.stringify(sc, (_k, val: unknown) => (val === Number.POSITIVE_INFINITY ? 'Infinity' : val)),
    ].join('\n');
    expect.fail(message);
  }
  void last;
  return totals;
}

/**
 * The fixed-seed runner of the scenario properties that own their simulator (daily, rpc,
 * shared): runs `simulate` over `arb` with `seed` (`FC_PATH` replays a path), hands each
 * outcome to `seen`, and fails with the shrunk scenario's violations and the replay command
 * (`offset`: what a variant adds to `FC_SEED`, taken off again in that command).
 */
export async function checkSeeded<S, O extends { readonly violations: readonly string[] }>(
  file: string,
  arb: fc.Arbitrary<S>,
  simulate: (sc: S) => Promise<O>,
  { seed, runs, seen, offset = 0 }: { seed: number; runs: number; seen: (o: O) => void; offset?: number },
): Promise<void> {
  const result = await fc.check(
    fc.asyncProperty(arb, async (sc) => {
      const o = await simulate(sc);
      seen(o);
      return o.violations.length === 0;
    }),
    { seed, numRuns: runs, ...(process.env['FC_PATH'] !== undefined ? { path: process.env['FC_PATH'] } : {}) },
  );
  if (result.failed) {
    const sc = result.counterexample![0];
    const o = await simulate(sc);
    expect.fail(
      [
        `${file} property failed (seed ${result.seed}); replay: FC_SEED=${result.seed - offset} FC_PATH=${result.counterexamplePath ?? ''} npx vitest run test/properties/${file.split(/[-,]/)[0]}.test.ts`,
        ...o.violations.map((x) => `  - ${x}`),
        JSON.stringify(sc),
      ].join('\n'),
    );
  }
}

/** What a property keeps of a call's end: how many times it settled (once, checked), when, and with what. */
export interface Settlement {
  settled: number;
  settledAt?: number | undefined;
  value?: unknown;
  error?: unknown;
}

/** Records `p`'s settlement into `rec` at `now()`; the returned promise never rejects. */
export function recordSettlement(p: Promise<unknown>, rec: Settlement, now: () => number): Promise<void> {
  return p.then(
    (value) => {
      rec.settled++;
      rec.settledAt = now();
      rec.value = value;
    },
    (error: unknown) => {
      rec.settled++;
      rec.settledAt = now();
      rec.error = error;
    },
  );
}
