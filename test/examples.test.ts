/**
 * The examples README points to run as a new user runs them (`node examples/<name>.mjs`, on
 * the built package, each in its own process against the local servers it starts) and print
 * what their comments promise. `npm run demo` is run by CI's last step; the others had no
 * check and could rot unseen.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

function run(file: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [`examples/${file}`], { cwd: root, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, out: `${stdout}${stderr}` });
    });
  });
}

describe('examples', () => {
  test('pooled-fetch: the first base URL answers 503, the call is served by the second', async () => {
    const { code, out } = await run('pooled-fetch.mjs');
    expect(out).toMatch(/^200 \{ path: '\/v1\/items\?limit=2' \}/m);
    expect(out).toMatch(/'eu'\s*│\s*1\s*│\s*1/);
    expect(out).toMatch(/'us'\s*│\s*1\s*│\s*0/);
    expect(code).toBe(0);
  }, 70_000);

  test('refresher: only the candidates that pass the check are installed', async () => {
    const { code, out } = await run('refresher.mjs');
    expect(out).toContain("before the first refresh: [ 'seed' ]");
    expect(out).toContain("after: [ 'candidate-0', 'candidate-2' ]");
    expect(code).toBe(0);
  }, 70_000);

  test('prometheus: one failed attempt on a, one served on b, in the text format', async () => {
    const { code, out } = await run('prometheus.mjs');
    expect(out).toContain('endpoint_pool_attempts_total{endpoint="a",pool="demo"} 1');
    expect(out).toContain('endpoint_pool_failures_total{endpoint="a",class="transient",pool="demo"} 1');
    expect(out).toContain('endpoint_pool_attempts_total{endpoint="b",pool="demo"} 1');
    expect(code).toBe(0);
  }, 70_000);

  test('viem-failover: the primary dies halfway, no caller sees an error', async () => {
    const { code, out } = await run('viem-failover.mjs');
    expect(out).toContain('caller-visible errors: 0');
    expect(out).toMatch(/'primary'.*'open'/);
    expect(out).toMatch(/'backup'\s*│\s*\d+\s*│\s*\d+\s*│\s*0\s*│\s*'closed'/);
    expect(code).toBe(0);
  }, 70_000);
});
