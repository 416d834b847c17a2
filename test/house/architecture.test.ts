/**
 * The house rules, enforced: file size, no import cycles, pure policies that know nothing
 * of the pool, and a core that runs anywhere (no `node:` module, no subpath adapter).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(__dirname, '../../src');
const SUBPATHS = ['fetch', 'viem', 'redis', 'prometheus', 'otel', 'testing', 'ethers', 'keys'];
const MAX_LINES = 400;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

/** Module specifiers a file imports or re-exports, type-only ones included. */
export function importsOf(source: string): string[] {
  const out: string[] = [];
  const re = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (const m of source.matchAll(re)) out.push((m[1] ?? m[2] ?? m[3])!);
  return out;
}

const all = files(SRC);
const rel = (f: string): string => relative(SRC, f).replaceAll('\\', '/');
const graph = new Map<string, string[]>();
for (const f of all) {
  const source = readFileSync(f, 'utf8');
  // features.ts names every optional feature's types for the core's feature table: its
  // type-only imports are erased and are the one allowed way back (its value imports count).
  const deps = (rel(f) === 'features.ts' ? importsOf(source.replace(/(?:^|\n)\s*import type [^;]*;/g, '')) : importsOf(source))
    .filter((s) => s.startsWith('.'))
    .map((s) => rel(resolve(dirname(f), s.replace(/\.js$/, '.ts'))));
  graph.set(rel(f), deps);
}
const isCore = (f: string): boolean => !SUBPATHS.includes(f.split('/')[0]!) || !f.includes('/');

function closure(start: string): Set<string> {
  const seen = new Set<string>();
  const stack = [start];
  while (stack.length > 0) {
    const f = stack.pop()!;
    for (const d of graph.get(f) ?? []) {
      if (!seen.has(d)) {
        seen.add(d);
        stack.push(d);
      }
    }
  }
  return seen;
}

describe('house rules', () => {
  it(`no file in src/ is over ${MAX_LINES} lines`, () => {
    const long = all.map((f) => [rel(f), readFileSync(f, 'utf8').split('\n').length] as const).filter(([, n]) => n > MAX_LINES);
    expect(long).toEqual([]);
  });

  it('no import cycle (type-only imports included)', () => {
    const cycles: string[] = [];
    for (const f of graph.keys()) if (closure(f).has(f)) cycles.push(f);
    expect(cycles).toEqual([]);
  });

  it('the pure policies (breaker, selectors, limiters, backoff) import nothing of the pool', () => {
    const pure = ['health/breaker.ts', 'selection/selector.ts', 'limits/bucket.ts', 'limits/paced.ts', 'limits/daily.ts', 'limits/quota.ts', 'limits/window.ts', 'limits/budget.ts', 'call/backoff.ts'];
    const machinery = (f: string): boolean => f === 'pool.ts' || f === 'state.ts' || f === 'index.ts' || f === 'options/resolve.ts' || (f.startsWith('call/') && f !== 'call/backoff.ts' && f !== 'call/context.ts');
    const found = pure.flatMap((p) => [...closure(p)].filter(machinery).map((m) => `${p} -> ${m}`));
    expect(found).toEqual([]);
  });

  it('the core imports no node: module and no subpath adapter', () => {
    const bad: string[] = [];
    for (const f of all) {
      const r = rel(f);
      if (!isCore(r)) continue;
      for (const s of importsOf(readFileSync(f, 'utf8'))) {
        if (s.startsWith('node:') || !s.startsWith('.')) bad.push(`${r} imports ${s}`);
      }
      for (const d of graph.get(r) ?? []) if (!isCore(d)) bad.push(`${r} imports ${d}`);
    }
    expect(bad).toEqual([]);
  });

  it('the import scanner sees static, type-only, re-export and dynamic imports', () => {
    const src = "import { a } from './a.js';\nimport type { B } from './b.js';\nexport { c } from './c.js';\nconst d = await import('./d.js');\nimport './e.js';";
    expect(importsOf(src).sort()).toEqual(['./a.js', './b.js', './c.js', './d.js', './e.js']);
  });
});
