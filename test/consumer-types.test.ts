/**
 * A tiny consumer type-checked against the packed package (`npm pack`, then extracted into
 * the consumer's node_modules) under every module resolution TypeScript users pick: node10
 * (through `typesVersions`), node16 and nodenext from ESM and from CJS, and bundler.
 * Each subpath must resolve to its real declarations: a misuse marked `@ts-expect-error`
 * per subpath fails if the import silently became `any` or was not found.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const root = join(import.meta.dirname, '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

/** Uses one export of every entry point, and misuses one, so each import must carry real types. */
const CONSUMER = `
import { Pool, isPoolError, type PoolOptions } from 'endpoint-pool';
import { FakeClock, RecordingMetrics } from 'endpoint-pool/testing';
import { createPooledFetch, HttpStatusError } from 'endpoint-pool/fetch';
import { poolTransport } from 'endpoint-pool/viem';
import { RedisStoreError } from 'endpoint-pool/redis';
import { prometheusName } from 'endpoint-pool/prometheus';
import { otelSink } from 'endpoint-pool/otel';

const clock = new FakeClock();
const options: PoolOptions<string> = { endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, metrics: new RecordingMetrics() };
export const pool = new Pool<string>(options);
export const checks: boolean[] = [isPoolError(new Error('x')), new HttpStatusError(503) instanceof Error, RedisStoreError.prototype instanceof Error];
export const names: string[] = [prometheusName('endpoint_pool_attempts_total')];
export const fns: unknown[] = [createPooledFetch, poolTransport, otelSink];

// @ts-expect-error the root entry's types: a connection of the wrong type
new Pool<number>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient' });
// @ts-expect-error testing: advance takes milliseconds
void clock.advance('1 s');
// @ts-expect-error fetch: the options are required
createPooledFetch();
// @ts-expect-error viem: the options are required
poolTransport();
// @ts-expect-error redis: the error's code is a string union
export const code: number = new RedisStoreError('x', 'y').code;
// @ts-expect-error prometheus: a name is a string
prometheusName(1);
// @ts-expect-error otel: a meter is required
otelSink();
`;

/** name → [file extension, compiler options] */
const CASES: Record<string, [string, Record<string, string>]> = {
  'node10 (CommonJS)': ['.ts', { module: 'commonjs', moduleResolution: 'node10' }],
  'node16 from ESM': ['.mts', { module: 'node16', moduleResolution: 'node16' }],
  'node16 from CJS': ['.cts', { module: 'node16', moduleResolution: 'node16' }],
  'nodenext from ESM': ['.mts', { module: 'nodenext', moduleResolution: 'nodenext' }],
  'nodenext from CJS': ['.cts', { module: 'nodenext', moduleResolution: 'nodenext' }],
  bundler: ['.ts', { module: 'esnext', moduleResolution: 'bundler' }],
};

const slug = (name: string) => name.replace(/\W+/g, '-').replace(/-$/, '');

let dir = '';
/** tsc's diagnostics per case, from one `tsc -b --verbose` over every case's tsconfig. */
const diagnostics = new Map<string, string[]>();

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'endpoint-pool-consumer-'));
  const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: root, encoding: 'utf8' }).trim().split('\n').at(-1)!;
  const pkg = join(dir, 'node_modules', 'endpoint-pool');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['-xzf', join(dir, out), '-C', pkg, '--strip-components=1']);
  // A consumer package of its own: no "type", so .ts is CommonJS under node16 and .mts/.cts decide.
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  const configs: string[] = [];
  for (const [name, [ext, resolution]] of Object.entries(CASES)) {
    const file = `${slug(name)}${ext}`;
    writeFileSync(join(dir, file), CONSUMER);
    const config = `tsconfig.${slug(name)}.json`;
    configs.push(config);
    writeFileSync(
      join(dir, config),
      JSON.stringify({
        // The package's own declarations are checked too (skipLibCheck off); they declare
        // Symbol.asyncDispose, so a consumer needs esnext.disposable (or skipLibCheck).
        compilerOptions: {
          ...resolution,
          target: 'es2022',
          lib: ['es2022', 'esnext.disposable', 'dom'],
          types: [],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          skipDefaultLibCheck: true,
        },
        files: [file],
      }),
    );
  }
  // Build mode checks every case in one process (the declarations are parsed once: 5x less
  // CPU than one tsc per case); --verbose heads each project's diagnostics with its name.
  let output = '';
  try {
    output = execFileSync(process.execPath, [tsc, '-b', '--verbose', '--pretty', 'false', ...configs], { cwd: dir, encoding: 'utf8' });
  } catch (err) {
    output = String((err as { stdout?: string }).stdout ?? err);
  }
  let current = '';
  for (const line of output.split('\n')) {
    const building = /Building project '.*tsconfig\.(.+)\.json'/.exec(line);
    if (building) current = building[1]!;
    else if (/error TS\d+/.test(line)) diagnostics.set(current, [...(diagnostics.get(current) ?? []), line]);
  }
  for (const name of Object.keys(CASES)) if (!output.includes(`tsconfig.${slug(name)}.json`)) diagnostics.set(slug(name), [`tsc -b did not check this case:\n${output}`]);
}, 120_000);
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a consumer type-checks against the packed package', () => {
  test('the pack holds the declarations of every entry point', () => {
    const files = readdirSync(join(dir, 'node_modules', 'endpoint-pool', 'dist'), { recursive: true, encoding: 'utf8' });
    for (const entry of ['', 'testing/', 'fetch/', 'viem/', 'redis/', 'prometheus/', 'otel/']) {
      expect(files).toContain(`${entry}index.d.ts`);
      expect(files).toContain(`${entry}index.d.cts`);
    }
  });

  test.each(Object.keys(CASES))('%s', (name) => {
    expect(diagnostics.get(slug(name)) ?? []).toEqual([]);
  });
});
