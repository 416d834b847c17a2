/**
 * Soak and process-exit checks, in child processes on the built package (`npm test`
 * builds first).
 *
 * - `test/soak/soak.mjs`: SOAK_CALLS calls (100,000 here; 1,000,000 with `npm run soak`)
 *   on the FakeClock with faults mixed in; heap after forced GC must stay within 4 MB of
 *   the warm-up sample, no timer, abort listener or in-flight slot may be left, and every
 *   attempt-start must have its terminal event.
 * - `test/soak/exit-child.mjs`: a process that used a pool on the real clock must exit on
 *   its own once its calls are done, with or without `close()`.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const CALLS = Number(process.env['SOAK_CALLS'] ?? 100_000);

interface Child {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly exitedAt: number;
}

function runNode(args: string[], timeoutMs: number): Promise<Child> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // A child that does not exit on its own is killed, and the test fails on `signal`.
    const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      const exitedAt = Date.now();
      // 'exit' may precede the last 'data' events; wait for the streams to end.
      child.on('close', () => resolve({ code, signal, stdout, stderr, exitedAt }));
    });
  });
}

describe('soak', () => {
  test(`${CALLS.toLocaleString('en')} calls with faults: flat heap, nothing left behind`, async () => {
    const r = await runNode(['--expose-gc', 'test/soak/soak.mjs', String(CALLS)], 600_000);
    expect(r.signal).toBeNull();
    const result = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      calls: number;
      attempts: number;
      terminals: number;
      outcomes: Record<string, number>;
      heap: { growthBytes: number; boundBytes: number; baselineBytes: number; finalBytes: number };
      pendingTimers: number;
      abortListeners: number;
      inFlight: number;
      problems: string[];
    };
    console.log(`soak: ${JSON.stringify({ calls: result.calls, heap: result.heap, outcomes: result.outcomes })}`);
    expect(result.problems).toEqual([]);
    expect(r.code).toBe(0);
    expect(result.calls).toBe(CALLS);
    expect(result.attempts).toBe(result.terminals);
    expect(result.heap.growthBytes).toBeLessThan(result.heap.boundBytes);
    expect(result.pendingTimers).toBe(0);
    expect(result.abortListeners).toBe(0);
    expect(result.inFlight).toBe(0);
    // Faults really were mixed in.
    expect(Object.keys(result.outcomes).sort()).toEqual(expect.arrayContaining(['ABORTED', 'PERMANENT', 'ok']));
    expect(result.attempts).toBeGreaterThan(CALLS);
  }, 600_000);
});

describe('a process that used the pool exits on its own', () => {
  test.each(['no-close', 'close'])('%s', async (mode) => {
    const r = await runNode(['test/soak/exit-child.mjs', mode], 15_000);
    expect(r.stderr).toBe('');
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    const done = JSON.parse(r.stdout.trim()) as { at: number; activeCalls: number; outcomes: string[] };
    expect(done.activeCalls).toBe(0);
    expect(done.outcomes).toHaveLength(7);
    // Nothing kept the loop alive after the work was done (a leaked 10 s breaker timer or a
    // forgotten deadline timer would show here).
    expect(r.exitedAt - done.at).toBeLessThan(1000);
  }, 20_000);
});
