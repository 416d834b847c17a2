/**
 * What keeps a process alive, through the built package in a child process (the system
 * clock; see src/call/timeouts.ts): an attempt waiting on nothing but its timeout keeps it
 * running until the timeout, and a pool whose calls are over never holds it. On Node, Bun and
 * Deno the attempt timer is referenced only when the process would otherwise exit
 * (`beforeExit`), not on every call. The child runs on the runtime running the test
 * (vitest.runtimes.config.ts runs this file on Bun and Deno too).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = JSON.stringify(pathToFileURL(join(root, 'dist', 'index.js')).href);
const dir = mkdtempSync(join(tmpdir(), 'endpoint-pool-liveness-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** How this runtime runs a module file. */
const runFile = 'Deno' in globalThis ? ['run', '-A'] : [];
let files = 0;

/**
 * Runs `body` in an async function of an ES module after `import { Pool, isPoolError }`, on
 * this runtime; killed after 30 s. Not at the module's top level: Bun and Deno keep a process
 * alive while a top-level `await` is pending (Node exits, code 13), which would hide the timer.
 */
function run(body: string): { stdout: string; status: number | null; signal: string | null; ms: number } {
  const file = join(dir, `child${files++}.mjs`);
  writeFileSync(file, `import { Pool, isPoolError } from ${dist};\nvoid (async () => {\n${body}\n})();`);
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [...runFile, file], { encoding: 'utf8', timeout: 30_000 });
  return { stdout: r.stdout.trim(), status: r.status, signal: r.signal, ms: performance.now() - t0 };
}

// Needs dist/ (a child process imports the build), which Stryker's sandbox does not have.
describe.skipIf(process.env['STRYKER_MUTATOR_WORKER'] !== undefined)('process liveness on the system clock', () => {
  test('attempts that wait on nothing else keep the process alive until their timeouts, the second one too', () => {
    // Without the hold, the process would end at once with the call unsettled (nothing printed).
    const r = run(`
      const pool = new Pool({ endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], classify: () => 'transient', attemptTimeoutMs: 150, maxAttempts: 2, backoff: { initialMs: 1, maxMs: 1 } });
      const t0 = performance.now();
      const error = await pool.execute(() => new Promise(() => undefined)).catch((e) => e);
      console.log(isPoolError(error) ? error.code : 'not a PoolError', error.attempts, performance.now() - t0 >= 290 ? 'waited' : 'early');`);
    expect([r.stdout, r.status, r.signal]).toEqual(['RETRIES_EXHAUSTED 2 waited', 0, null]);
  }, 40_000);

  test('a pool whose calls are over does not hold the process, however long its attempt timeout', () => {
    const r = run(`
      const pool = new Pool({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', attemptTimeoutMs: 60_000, deadlineMs: 120_000 });
      for (let i = 0; i < 3; i++) await pool.execute(async (c) => c);
      await pool.execute(() => new Promise((resolve) => setTimeout(resolve, 50)));
      console.log('done');`);
    expect([r.stdout, r.status, r.signal]).toEqual(['done', 0, null]);
    expect(r.ms).toBeLessThan(20_000); // a held process runs 60 s (killed at 30 s)
  }, 40_000);

  test('an attempt kept alive at exit that then settles lets the process go', () => {
    // The process would exit; the hold references the timer; an unreferenced timer (which runs
    // only because the process goes on) settles the attempt; the timer is released at once.
    const r = run(`
      const pool = new Pool({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', attemptTimeoutMs: 60_000, deadlineMs: 120_000 });
      const value = await pool.execute(() => new Promise((resolve) => setTimeout(() => resolve('settled'), 100).unref()));
      console.log(value);`);
    expect([r.stdout, r.status, r.signal]).toEqual(['settled', 0, null]);
    expect(r.ms).toBeLessThan(20_000);
  }, 40_000);
});
