/**
 * Runs several processes (fleet-worker.mjs) against one Redis and merges their upstream
 * logs. Each process has its own pool; only Redis ties them together.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export interface FleetConfig {
  readonly port: number;
  readonly prefix: string;
  readonly endpoints: readonly { readonly name: string; readonly rateLimit?: object }[];
  readonly groups?: readonly (readonly string[])[];
  readonly concurrency: number;
  readonly opMs: number;
  readonly timeoutMs: number;
  readonly retryAfterMs: number;
  readonly degradedShare: number;
  /** Passed to createRedisStore. */
  readonly storeOptions?: object;
}

export interface WorkerResult {
  readonly log: [string, number][];
  readonly events: { type: string; t: number }[];
  readonly ok: number;
  readonly failed: Record<string, number>;
}

export interface FleetRun {
  readonly startAt: number;
  readonly results: WorkerResult[];
  /** Upstream arrival times per endpoint name, all processes merged, sorted. */
  readonly byEndpoint: Map<string, number[]>;
}

const WORKER = join(import.meta.dirname, 'fleet-worker.mjs');
const DIST = join(import.meta.dirname, '..', '..', 'dist', 'redis', 'index.js');

/** `during(startAt)` runs alongside the fleet (e.g. to kill Redis at some point). */
export async function runFleet(cfg: FleetConfig, processes: number, durationMs: number, during?: (startAt: number) => Promise<void>): Promise<FleetRun> {
  if (!existsSync(DIST)) throw new Error('the fleet tests run on the built package: run `npm run build` (npm test does) first');
  const children: ChildProcess[] = [];
  const kill = () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL'));
  const guard = setTimeout(kill, durationMs + 20_000);
  try {
    const results: Promise<WorkerResult>[] = [];
    const readies: Promise<void>[] = [];
    for (let i = 0; i < processes; i++) {
      const child = fork(WORKER, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      children.push(child);
      let onReady!: () => void;
      readies.push(new Promise<void>((r) => (onReady = r)));
      results.push(
        new Promise<WorkerResult>((resolve, reject) => {
          child.on('message', (m: { ready?: boolean } & WorkerResult) => (m.ready === true ? onReady() : resolve(m)));
          child.once('exit', (code) => reject(new Error(`fleet worker exited with ${code} before reporting`)));
        }),
      );
      child.send(cfg);
    }
    await Promise.all(readies);
    // A common start a little ahead, so that every process begins together.
    const startAt = Date.now() + 300;
    for (const c of children) c.send({ startAt, durationMs });
    const side = during?.(startAt);
    const all = await Promise.all(results);
    await side;
    const byEndpoint = new Map<string, number[]>();
    for (const r of all) for (const [name, t] of r.log) (byEndpoint.get(name) ?? byEndpoint.set(name, []).get(name)!).push(t);
    for (const list of byEndpoint.values()) list.sort((a, b) => a - b);
    return { startAt, results: all, byEndpoint };
  } finally {
    clearTimeout(guard);
    kill();
  }
}

/** Arrival times of several endpoints (a group) merged. */
export function merged(run: FleetRun, ...names: string[]): number[] {
  return names.flatMap((n) => run.byEndpoint.get(n) ?? []).sort((a, b) => a - b);
}

/** The most arrivals in any window of `windowMs` (half-open), in `[from, to)`. */
export function maxInWindow(times: readonly number[], windowMs: number, from = -Infinity, to = Infinity): number {
  const ts = times.filter((t) => t >= from && t < to);
  let best = 0;
  for (let i = 0, j = 0; j < ts.length; j++) {
    while (ts[j]! - ts[i]! >= windowMs) i++;
    if (j - i + 1 > best) best = j - i + 1;
  }
  return best;
}

export function countIn(times: readonly number[], from: number, to: number): number {
  return times.filter((t) => t >= from && t < to).length;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
