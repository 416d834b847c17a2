/**
 * Code blocks of the Markdown documentation, for test/docs.test.ts.
 *
 * A block is a fence at the start of a line: three backticks, a language, then optional
 * flags separated by spaces. TypeScript blocks (`ts`, `typescript`) are type-checked;
 * the flag `runnable` also runs a block as a Node ES module, and `vitest` runs it as a
 * vitest test file. Other languages (`sh`, `js`, `text`) are left alone.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

export type RunMode = 'compile' | 'runnable' | 'vitest';

export interface DocBlock {
  /** Path of the Markdown file, relative to the repository root. */
  readonly file: string;
  /** 1-based line of the block's first code line in the Markdown file. */
  readonly line: number;
  readonly lang: string;
  readonly mode: RunMode;
  readonly code: string;
}

const TS_LANGS = new Set(['ts', 'typescript']);
const FLAGS = new Set<string>(['runnable', 'vitest']);

/** Every fenced block of one Markdown text; throws on an unclosed fence or an unknown flag. */
export function extractBlocks(markdown: string, file: string): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*(.*)$/.exec(lines[i]!);
    if (open === null) continue;
    const lang = open[1]!.toLowerCase();
    const flags = open[2]!.split(/\s+/).filter((f) => f !== '');
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    if (end >= lines.length) throw new Error(`${file}:${i + 1}: code fence is never closed`);
    if (TS_LANGS.has(lang)) {
      for (const f of flags) if (!FLAGS.has(f)) throw new Error(`${file}:${i + 1}: unknown flag "${f}" on a ts block`);
      if (flags.length > 1) throw new Error(`${file}:${i + 1}: a block is either runnable or vitest, not both`);
    }
    const mode: RunMode = flags.includes('runnable') ? 'runnable' : flags.includes('vitest') ? 'vitest' : 'compile';
    blocks.push({ file, line: start + 1, lang, mode, code: lines.slice(start, end).join('\n') });
    i = end;
  }
  return blocks;
}

/** README.md and every Markdown file directly in docs/ (not docs/api/, the generated reference). */
export function docFiles(root: string): string[] {
  const docs = join(root, 'docs');
  const inDocs = readdirSync(docs)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join(docs, f));
  return [join(root, 'README.md'), ...inDocs];
}

/** Every TypeScript block of the documentation. */
export function typescriptBlocks(root: string): DocBlock[] {
  return docFiles(root).flatMap((path) =>
    extractBlocks(readFileSync(path, 'utf8'), relative(root, path)).filter((b) => TS_LANGS.has(b.lang)),
  );
}

/** Every JavaScript block (`js`, `javascript`, `mjs`) of the documentation: they are not type-checked, but must be JavaScript. */
export function javascriptBlocks(root: string): DocBlock[] {
  return docFiles(root).flatMap((path) => extractBlocks(readFileSync(path, 'utf8'), relative(root, path)).filter((b) => ['js', 'javascript', 'mjs'].includes(b.lang)));
}

/** A file name for a block that says where it came from: `README.md:42` → `README.md-L42`. */
export function blockName(block: DocBlock): string {
  return `${block.file.replace(/[\\/]/g, '__')}-L${block.line}`;
}
