/**
 * Checks on the built package (`npm test` builds first): the core bundle imports no
 * `node:` module, both formats load, and `isPoolError` recognises errors across copies.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

const dist = join(import.meta.dirname, '..', 'dist');
const require = createRequire(import.meta.url);
const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as {
  dependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  exports: Record<string, unknown>;
  typesVersions: Record<string, Record<string, string[]>>;
  sideEffects: boolean;
};

/** Subpaths allowed to use Node built-ins (none today). */
const NODE_ONLY = new Set<string>([]);
/** Subpaths that import an optional peer dependency by its bare name. */
const PEER_IMPORTS: Record<string, readonly string[]> = { ethers: ['ethers'] };

describe('built package', () => {
  test('has no runtime dependencies and declares no side effects', () => {
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(pkg.sideEffects).toBe(false);
    // A peer imported by a subpath must stay optional: users of other subpaths never need it.
    for (const peer of Object.values(PEER_IMPORTS).flat()) expect(pkg.peerDependenciesMeta?.[peer]?.optional, peer).toBe(true);
  });

  test('the core and the browser-safe subpaths import no node: module and no bare specifier', () => {
    const files = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(c?js)$/.test(f) && !f.endsWith('.map'));
    expect(files).toContain('index.js');
    for (const f of files) {
      const entry = f.split(/[\\/]/)[0]!;
      if (NODE_ONLY.has(entry)) continue;
      const code = readFileSync(join(dist, f), 'utf8');
      expect(code, f).not.toMatch(/\bfrom\s*["']node:|require\(["']node:|import\(["']node:/);
      // Any import must be relative: a bare specifier would be a runtime dependency.
      const specifiers = [...code.matchAll(/(?:from\s*|require\(|import\()["']([^"']+)["']/g)].map((m) => m[1]!);
      const peers = PEER_IMPORTS[entry] ?? [];
      for (const s of specifiers) expect(s.startsWith('.') || peers.includes(s), `${f} imports ${s}`).toBe(true);
    }
  });

  test('ESM and CJS builds load, and isPoolError recognises an error from the other copy', async () => {
    const esm = (await import(join(dist, 'index.js'))) as typeof import('../src/index.js');
    const cjs = require(join(dist, 'index.cjs')) as typeof import('../src/index.js');
    expect(esm.PoolError).not.toBe(cjs.PoolError);
    const fromCjs = new cjs.PoolError('CLOSED', 'closed');
    expect(fromCjs instanceof esm.PoolError).toBe(false);
    expect(esm.isPoolError(fromCjs)).toBe(true);
    expect(cjs.isPoolError(new esm.PoolError('ABORTED', 'x'))).toBe(true);
    expect(esm.isPoolError(new Error('x'))).toBe(false);
    expect(esm.isPoolError({ code: 'CLOSED', name: 'PoolError' })).toBe(false);
    expect(esm.isPoolError(null)).toBe(false);
  });

  test('every subpath has a typesVersions entry, for projects on moduleResolution "node"', () => {
    // Without one, `import … from 'endpoint-pool/keys'` finds no types under node10
    // resolution (found by a new user's run: keys and ethers were missing).
    const subpaths = Object.keys(pkg.exports).filter((k) => k !== '.' && k !== './package.json').map((k) => k.slice(2));
    const mapped = pkg.typesVersions['*'] ?? {};
    for (const sub of subpaths) {
      expect(mapped[sub], sub).toEqual([`./dist/${sub}/index.d.ts`]);
      expect(() => readFileSync(join(dist, sub, 'index.d.ts')), sub).not.toThrow();
    }
  });

  test('every export path resolves to files that exist, types first', () => {
    for (const [key, value] of Object.entries(pkg.exports)) {
      if (typeof value === 'string') continue;
      for (const cond of Object.values(value as Record<string, Record<string, string>>)) {
        expect(Object.keys(cond)[0], key).toBe('types');
        for (const file of Object.values(cond)) expect(() => readFileSync(join(dist, '..', file)), file).not.toThrow();
      }
    }
  });
});
