/**
 * Type-checks and runs documentation blocks (see doc-blocks.ts) against the built package.
 *
 * Blocks are written into a scratch folder inside the repository (`.docs-check-*`, git-
 * ignored), so that `import ... from 'endpoint-pool'` resolves the way it does for a user:
 * through the package's own `exports` (a package may import itself by name) to `dist/`,
 * and every other import (viem, ioredis, vitest, ...) from the repository's node_modules.
 * The compiler settings are those of a strict NodeNext project.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { blockName, type DocBlock } from './doc-blocks.js';

export const COMPILER_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts'],
  types: ['node'],
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  noImplicitOverride: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  skipLibCheck: true,
  noEmit: true,
};

export interface Scratch {
  readonly dir: string;
  remove(): void;
}

/** A scratch folder inside `root` (so the package resolves itself by name). */
export function scratch(root: string): Scratch {
  const dir = mkdtempSync(join(root, '.docs-check-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The source written for a block: `export {}` makes every block a module of its own. */
function source(block: DocBlock): string {
  return `${block.code}\nexport {};\n`;
}

/**
 * Type-checks every block in one program; returns one line per diagnostic, located in the
 * Markdown file (`README.md:57: TS2304 Cannot find name 'x'.`). Empty when all compile.
 */
export function typeCheck(blocks: readonly DocBlock[], dir: string, options: ts.CompilerOptions = COMPILER_OPTIONS): string[] {
  const byPath = new Map<string, DocBlock>();
  for (const block of blocks) {
    const path = join(dir, `${blockName(block)}${block.mode === 'vitest' ? '.test' : ''}.ts`);
    writeFileSync(path, source(block));
    byPath.set(path, block);
  }
  const program = ts.createProgram([...byPath.keys()], options);
  const out: string[] = [];
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const block = d.file === undefined ? undefined : byPath.get(d.file.fileName);
    if (d.file === undefined || block === undefined || d.start === undefined) {
      out.push(`${d.file?.fileName ?? '(global)'}: TS${d.code} ${message}`);
      continue;
    }
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    out.push(`${block.file}:${block.line + line}: TS${d.code} ${message}`);
  }
  return out;
}

export interface RunResult {
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly output: string;
}

/** Runs `node args` in `cwd`, killed after `timeoutMs`. */
function runNode(args: readonly string[], cwd: string, timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve) => {
    const env = { ...process.env };
    // A vitest child must not think it is one of the parent's workers.
    for (const key of Object.keys(env)) if (key.startsWith('VITEST') || key === 'NODE_OPTIONS' || key === 'FORCE_COLOR') delete env[key];
    env['NO_COLOR'] = '1';
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      resolve({ exitCode, timedOut, output });
    });
  });
}

/** Transpiles a block to an ES module and runs it with Node. */
export function runBlock(block: DocBlock, dir: string, timeoutMs: number): Promise<RunResult> {
  const js = ts.transpileModule(source(block), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    fileName: `${blockName(block)}.ts`,
  }).outputText;
  const path = join(dir, `${blockName(block)}.mjs`);
  writeFileSync(path, js);
  return runNode([path], dir, timeoutMs);
}

/**
 * Runs a block as a vitest test file, in a vitest of its own rooted in the scratch folder
 * (`endpoint-pool` and its subpaths aliased to `dist/`).
 */
export function runVitestBlock(block: DocBlock, root: string, dir: string, timeoutMs: number): Promise<RunResult> {
  const sub = join(dir, `vitest-${blockName(block)}`);
  mkdirSync(sub, { recursive: true });
  writeFileSync(join(sub, 'block.test.ts'), source(block));
  const dist = join(root, 'dist');
  writeFileSync(
    join(sub, 'vitest.config.mjs'),
    [
      `export default {`,
      `  resolve: { alias: [`,
      `    { find: /^endpoint-pool$/, replacement: ${JSON.stringify(join(dist, 'index.js'))} },`,
      `    { find: /^endpoint-pool\\/([a-z]+)$/, replacement: ${JSON.stringify(dist)} + '/$1/index.js' },`,
      `  ] },`,
      `  test: { include: ['block.test.ts'], pool: 'forks', watch: false },`,
      `};`,
      ``,
    ].join('\n'),
  );
  const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
  return runNode([vitest, 'run', '--root', sub, '--config', join(sub, 'vitest.config.mjs')], sub, timeoutMs);
}

