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

/** Each example, what it shows, and what its output must hold (a string it contains, or a pattern it matches). */
const EXAMPLES: readonly (readonly [file: string, shows: string, prints: readonly (string | RegExp)[]])[] = [
  ['pooled-fetch.mjs', 'the first base URL answers 503, the call is served by the second', [/^200 \{ path: '\/v1\/items\?limit=2' \}/m, /'eu'\s*│\s*1\s*│\s*1/, /'us'\s*│\s*1\s*│\s*0/]],
  ['refresher.mjs', 'only the candidates that pass the check are installed', ["before the first refresh: [ 'seed' ]", "after: [ 'candidate-0', 'candidate-2' ]"]],
  [
    'prometheus.mjs',
    'one failed attempt on a, one served on b, in the text format',
    ['endpoint_pool_attempts_total{endpoint="a",pool="demo"} 1', 'endpoint_pool_failures_total{endpoint="a",class="transient",pool="demo"} 1', 'endpoint_pool_attempts_total{endpoint="b",pool="demo"} 1'],
  ],
  ['viem-failover.mjs', 'the primary dies halfway, no caller sees an error', ['caller-visible errors: 0', /'primary'.*'open'/, /'backup'\s*│\s*\d+\s*│\s*\d+\s*│\s*0\s*│\s*'closed'/]],
];

describe('examples', () => {
  test.each(EXAMPLES)('%s: %s', async (file, _shows, prints) => {
    const { code, out } = await run(file);
    for (const p of prints) {
      if (typeof p === 'string') expect(out).toContain(p);
      else expect(out).toMatch(p);
    }
    expect(code).toBe(0);
  }, 70_000);
});
