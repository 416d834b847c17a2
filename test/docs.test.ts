/**
 * The documentation's code is code: every TypeScript block of README.md and docs/*.md
 * compiles against the built package (`npm test` builds first) in a strict NodeNext
 * project, blocks marked `runnable` run under Node against loopback servers they start
 * themselves, blocks marked `vitest` run as a vitest file, and relative links resolve.
 * The checker's own failures are tested too, so a broken block cannot pass unnoticed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { afterAll, describe, expect, test, vi } from 'vitest';
import ts from 'typescript';
import { Pool } from '../src/index.js';
import { docFiles, extractBlocks, javascriptBlocks, typescriptBlocks, type DocBlock } from './helpers/doc-blocks.js';
import { transformSync } from 'esbuild';
import { runBlock, runVitestBlock, scratch, typeCheck, type Scratch } from './helpers/doc-check.js';

const root = join(import.meta.dirname, '..');
const blocks = typescriptBlocks(root);
const runnable = blocks.filter((b) => b.mode === 'runnable');
const vitestBlocks = blocks.filter((b) => b.mode === 'vitest');
/** A safety net for a block that never ends; a block that passes takes well under a second or two. */
const RUN_TIMEOUT_MS = 30_000;

/**
 * Stryker runs the suite on a copy without dist/ (`npm run mutation`); these checks read
 * the built package, not the mutated sources, so they cannot kill a mutant there.
 */
const needsBuild = describe.skipIf(process.env['STRYKER_MUTATOR_WORKER'] !== undefined);

let work: Scratch | undefined;
function workDir(): string {
  if (work === undefined) {
    if (!existsSync(join(root, 'dist', 'index.d.ts'))) throw new Error('dist/ is missing: run `npm run build` (npm test does)');
    work = scratch(root);
  }
  return work.dir;
}
afterAll(() => work?.remove());

needsBuild('documentation code blocks', () => {
  test('the guides are there, each with TypeScript blocks, some of them runnable', () => {
    const files = new Set(blocks.map((b) => b.file));
    for (const f of ['README.md', 'docs/options.md', 'docs/migration.md', 'docs/testing.md']) expect(files, f).toContain(f);
    expect(runnable.length).toBeGreaterThanOrEqual(3);
    expect(vitestBlocks.length).toBeGreaterThanOrEqual(1);
  });

  test('every TypeScript block compiles as it is shown (imports included)', () => {
    expect(typeCheck(blocks, workDir())).toEqual([]);
  }, 240_000);

  test.each(runnable.map((b) => [`${b.file}:${b.line}`, b] as const))('%s runs to completion', async (_at, block) => {
    const r = await runBlock(block, workDir(), RUN_TIMEOUT_MS);
    expect(r.timedOut, r.output).toBe(false);
    expect(r.exitCode, r.output).toBe(0);
  }, RUN_TIMEOUT_MS + 5_000);

  test.each(vitestBlocks.map((b) => [`${b.file}:${b.line}`, b] as const))('%s passes under vitest', async (_at, block) => {
    const r = await runVitestBlock(block, root, workDir(), RUN_TIMEOUT_MS * 2);
    expect(r.timedOut, r.output).toBe(false);
    expect(r.exitCode, r.output).toBe(0);
    expect(r.output).toMatch(/Tests\s+\d+ passed/);
  }, RUN_TIMEOUT_MS * 2 + 5_000);

  test('every JavaScript block is JavaScript (TypeScript syntax in a js block is a SyntaxError for whoever copies it)', () => {
    const js = javascriptBlocks(root);
    expect(js.length).toBeGreaterThanOrEqual(3);
    const broken: string[] = [];
    for (const b of js) {
      try {
        transformSync(b.code, { loader: 'js', format: 'esm', target: 'es2022' });
      } catch (e) {
        broken.push(`${b.file}:${b.line}: ${String((e as { errors?: { text: string }[] }).errors?.[0]?.text ?? e)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test('relative links point to files (and headings) that exist', () => {
    const broken: string[] = [];
    for (const path of docFiles(root)) {
      const text = stripCode(readFileSync(path, 'utf8'));
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/i.test(target)) continue;
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const to = file === '' ? path : join(dirname(path), file);
        const where = `${relative(root, path)} → ${target}`;
        if (!existsSync(to)) {
          broken.push(`${where}: no such file`);
          continue;
        }
        if (anchor !== undefined && to.endsWith('.md') && !anchors(readFileSync(to, 'utf8')).has(anchor)) broken.push(`${where}: no such heading`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('the options reference', () => {
  const reference = readFileSync(join(root, 'docs', 'options.md'), 'utf8');
  /** The names in the first column of the table(s) right under each heading. */
  const sections = new Map<string, Set<string>>();
  let heading = '';
  for (const line of reference.split('\n')) {
    const h = /^#{2,3} (.+)$/.exec(line);
    if (h !== null) sections.set((heading = h[1]!), new Set());
    const row = /^\| `([^`]+)` \|/.exec(line);
    if (row !== null) sections.get(heading)?.add(row[1]!);
  }
  const rowsOf = (title: string): Set<string> => sections.get(title) ?? new Set();

  /** Each documented options interface: where it is declared, and the section that lists its members. */
  const interfaces: Record<string, readonly [file: string, section: string]> = {
    PoolOptions: ['src/options/options.ts', 'Pool options'],
    EndpointConfig: ['src/options/options.ts', 'Endpoints'],
    RateLimitOptions: ['src/options/options.ts', '`rateLimit`'],
    HealthOptions: ['src/options/options.ts', '`health`'],
    CeilingRecoveryOptions: ['src/options/options.ts', '`ceilingRecovery`'],
    LatencyOptions: ['src/options/options.ts', '`latency`'],
    HedgeOptions: ['src/options/options.ts', '`hedge`'],
    ExecuteOptions: ['src/options/options.ts', 'Per-call options'],
    BackoffOptions: ['src/call/backoff.ts', '`backoff`'],
    BreakerOptions: ['src/health/breaker.ts', '`breaker`'],
    RetryBudgetOptions: ['src/limits/budget.ts', '`retryBudget`'],
    StoreOptions: ['src/limits/store.ts', '`sharedQuota`'],
    RefresherOptions: ['src/extras/refresher-options.ts', '`Refresher`'],
    PooledFetchOptions: ['src/fetch/pooled-fetch.ts', '`createPooledFetch`'],
    PoolTransportOptions: ['src/viem/options.ts', '`poolTransport`'],
    PooledProviderOptions: ['src/ethers/provider.ts', '`PooledJsonRpcProvider`'],
    QuorumOptions: ['src/rpc/reads.ts', '`quorum`'],
    HeadOptions: ['src/rpc/heads.ts', '`heads`'],
    RedisStoreOptions: ['src/redis/store.ts', '`createRedisStore`'],
    RedisHealthOptions: ['src/redis/health.ts', '`createRedisHealth`'],
  };

  test.each(Object.entries(interfaces))('has a row for every member of %s', (name, [file, section]) => {
    const members = interfaceMembers(join(root, file), name);
    expect(members.length, `${name} not found in ${file}`).toBeGreaterThan(0);
    expect(sections.has(section), `no section "${section}"`).toBe(true);
    expect(members.filter((m) => !rowsOf(section).has(m))).toEqual([]);
  });

  test('lists every strategy the Strategy type takes', () => {
    const strategies = unionLiterals(join(root, 'src', 'options', 'options.ts'), 'Strategy');
    expect(strategies).toHaveLength(5);
    expect(strategies.filter((s) => !rowsOf('Strategies').has(`'${s}'`))).toEqual([]);
  });
});

needsBuild('the checker fails on a broken block', () => {
  let n = 0;
  const md = (code: string, flag = ''): DocBlock => extractBlocks(`# t\n\ntext\n\n\`\`\`ts ${flag}\n${code}\n\`\`\`\n`, `fake${++n}.md`)[0]!;

  // The type checks share one program: each program parses the lib and the package's types
  // again, about a second apiece. Each case's errors are those at its own Markdown file.
  const cases = {
    missingImport: md(`const pool = new Pool<string>({ endpoints: [], classify: () => 'transient' });`),
    wrongOption: md(`import { Pool } from 'endpoint-pool';\nnew Pool<string>({ endpoints: [], classify: () => 'transient', strategy: 'fastest' });`),
    ioredis: md(`import Redis from 'ioredis';\nconst r = new Redis();`),
    correct: md(`import { Pool } from 'endpoint-pool';\nnew Pool<string>({ endpoints: [{ name: 'a', conn: 'x' }], classify: () => 'transient' });`),
  };
  let checked: string[] | undefined;
  const checkedOnce = (): string[] => (checked ??= typeCheck(Object.values(cases), workDir()));
  const errorsOf = (block: DocBlock): string[] => checkedOnce().filter((e) => e.startsWith(`${block.file}:`));

  test('a block missing an import is reported at its Markdown line', () => {
    const errors = errorsOf(cases.missingImport);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^fake\d+\.md:6: TS(2304|2552) Cannot find name 'Pool'/);
  }, 60_000);

  test('a wrong option type, and a default import of ioredis under NodeNext, are reported', () => {
    expect(errorsOf(cases.wrongOption).some((e) => /^fake\d+\.md:7: TS2322 .*fastest.* is not assignable to type 'Strategy'/.test(e))).toBe(true);
    expect(errorsOf(cases.ioredis).some((e) => /^fake\d+\.md:7: TS2351/.test(e))).toBe(true);
  }, 60_000);

  test('a correct block passes', () => {
    expect(errorsOf(cases.correct)).toEqual([]);
    // And nothing is reported outside the cases' own files.
    expect(checkedOnce().filter((e) => !Object.values(cases).some((b) => e.startsWith(`${b.file}:`)))).toEqual([]);
  }, 60_000);

  test('a runnable block that throws fails, one that never ends is killed', async () => {
    const thrown = await runBlock(md(`import { isPoolError } from 'endpoint-pool';\nif (!isPoolError(new Error('x'))) throw new Error('documented claim is false');`, 'runnable'), workDir(), RUN_TIMEOUT_MS);
    expect(thrown.exitCode).not.toBe(0);
    expect(thrown.output).toContain('documented claim is false');
    const hung = await runBlock(md(`setInterval(() => undefined, 1000);`, 'runnable'), workDir(), 500);
    expect(hung.timedOut).toBe(true);
  }, RUN_TIMEOUT_MS + 5_000);

  test('fences that would hide a block are errors', () => {
    expect(() => extractBlocks('```ts\nconst a = 1;\n', 'x.md')).toThrow(/never closed/);
    expect(() => extractBlocks('```ts runable\nconst a = 1;\n```\n', 'x.md')).toThrow(/unknown flag "runable"/);
  });
});

describe('claims of the testing guide', () => {
  test("vitest's fake timers drive a pool built on the system clock (no `clock` option)", async () => {
    vi.useFakeTimers();
    try {
      let calls = 0;
      const pool = new Pool<string>({
        endpoints: [{ name: 'only', conn: 'x' }],
        classify: () => 'transient',
        backoff: { initialMs: 1_000, maxMs: 1_000, jitter: 'none' },
      });
      const call = pool.execute(async () => {
        calls++;
        if (calls < 3) throw new Error('flaky');
        return 'ok';
      });
      await vi.advanceTimersByTimeAsync(1_999);
      expect(calls).toBe(2); // attempts at 0 s and 1 s; the third is due at 2 s
      await vi.advanceTimersByTimeAsync(1);
      await expect(call).resolves.toBe('ok');
      expect(calls).toBe(3);
      await pool.close();
    } finally {
      vi.useRealTimers();
    }
  });
});

/** Markdown with its fenced blocks and inline code removed (links inside code are not links). */
function stripCode(text: string): string {
  return text.replace(/^```[\s\S]*?^```\s*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchors for a Markdown file's headings. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of stripFences(text).matchAll(/^#{1,6}\s+(.+?)\s*$/gm)) {
    const base = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function stripFences(text: string): string {
  return text.replace(/^```[\s\S]*?^```\s*$/gm, '');
}

function parse(path: string): ts.SourceFile {
  return ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true);
}

/** The property names an interface declares itself (not those it inherits). */
function interfaceMembers(path: string, name: string): string[] {
  const decl = parse(path).statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name);
  return (decl?.members ?? []).flatMap((m) => (m.name !== undefined && ts.isIdentifier(m.name) ? [m.name.text] : []));
}

/** The string literals of a union type alias. */
function unionLiterals(path: string, name: string): string[] {
  const decl = parse(path).statements.find((s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === name);
  if (decl === undefined || !ts.isUnionTypeNode(decl.type)) return [];
  return decl.type.types.flatMap((t) => (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal) ? [t.literal.text] : []));
}
