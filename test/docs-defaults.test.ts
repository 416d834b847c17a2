/**
 * The defaults the documentation states are the ones the pool applies: every row of
 * docs/options.md (the pool's options and the nested `backoff`, `breaker`, `health`,
 * `ceilingRecovery`, `latency` and `hedge`) and every `@default` of the option interfaces'
 * doc comments (what editors and the API reference show) whose default is a literal
 * (`5`, `'full'`, `Infinity`, `false`, `[]`, `{ initialMs: 100, ... }`) is held against the
 * options a pool resolves from nothing. A default written in words ("the attempt timeout")
 * is left to the tests of its behaviour.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { Pool } from '../src/index.js';
import { poolStateOf } from '../src/pool-core.js';

const root = join(import.meta.dirname, '..');

/** The options a pool resolves with nothing but its endpoints and classifier. */
function resolved(): Record<string, unknown> {
  const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient' });
  return poolStateOf(pool).opts as unknown as Record<string, unknown>;
}

/** A literal as the docs write it (`5`, `'x'`, `Infinity`, `{ a: 1 }`), or undefined when the text is not one. */
function literal(text: string): { value: unknown } | undefined {
  const t = text.trim();
  if (!/^(-?[\d.]+|'[^']*'|Infinity|true|false|\[\]|\{[\w\s:,.'-]*\})$/.test(t)) return undefined;
  // Our own docs, read as JavaScript: only the literal shapes the pattern above lets through.
  return { value: new Function(`return (${t});`)() as unknown };
}

interface Claim {
  readonly where: string;
  readonly path: readonly string[];
  readonly value: unknown;
}

const SECTIONS: Record<string, string> = { 'Pool options': '', backoff: 'backoff', breaker: 'breaker', health: 'health', ceilingRecovery: 'ceilingRecovery', latency: 'latency', hedge: 'hedge' };

function docClaims(): Claim[] {
  const lines = readFileSync(join(root, 'docs/options.md'), 'utf8').split('\n');
  const claims: Claim[] = [];
  let section: string | undefined;
  lines.forEach((line, i) => {
    const heading = /^#{2,3} `?([^`]+)`?\s*$/.exec(line);
    if (heading !== null) {
      section = SECTIONS[heading[1]!];
      return;
    }
    if (section === undefined) return;
    const row = /^\| `(\w+)` \| `([^`]+)`/.exec(line);
    if (row === null) return;
    const lit = literal(row[2]!);
    if (lit === undefined) return;
    claims.push({ where: `docs/options.md:${i + 1}`, path: section === '' ? [row[1]!] : [section, row[1]!], value: lit.value });
  });
  return claims;
}

const INTERFACES: Record<string, [file: string, prefix: string]> = {
  PoolOptions: ['src/options/options.ts', ''],
  HealthOptions: ['src/options/options.ts', 'health'],
  CeilingRecoveryOptions: ['src/options/options.ts', 'ceilingRecovery'],
  LatencyOptions: ['src/options/options.ts', 'latency'],
  HedgeOptions: ['src/options/options.ts', 'hedge'],
  BackoffOptions: ['src/call/backoff.ts', 'backoff'],
  BreakerOptions: ['src/health/breaker.ts', 'breaker'],
};

function commentClaims(): Claim[] {
  const claims: Claim[] = [];
  for (const [name, [file, prefix]] of Object.entries(INTERFACES)) {
    const text = readFileSync(join(root, file), 'utf8');
    const start = text.search(new RegExp(`export interface ${name}\\b`));
    expect(start, `${name} in ${file}`).toBeGreaterThan(-1);
    const body = text.slice(start, text.indexOf('\n}', start));
    // Each member with the doc comment right above it.
    for (const m of body.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*readonly (\w+)\??:/g)) {
      const tag = /@default ([^\n*]+?)\s*(?:\*|$)/m.exec(m[1]!);
      if (tag === null) continue;
      // A literal, alone or followed by a remark: `Infinity (only the deadline bounds it)`.
      const lit = literal(tag[1]!) ?? literal(/^(\{[^}]*\}|\S+)\s+[(:]/.exec(tag[1]!)?.[1] ?? '');
      if (lit === undefined) continue;
      claims.push({ where: `${file} ${name}.${m[2]}`, path: prefix === '' ? [m[2]!] : [prefix, m[2]!], value: lit.value });
    }
  }
  return claims;
}

function check(claims: readonly Claim[]): string[] {
  const opts = resolved();
  const wrong: string[] = [];
  for (const c of claims) {
    let got: unknown = opts;
    for (const p of c.path) got = (got as Record<string, unknown> | undefined)?.[p];
    if (got === undefined) continue; // not resolved ahead of use (an option that is off by default)
    if (typeof c.value === 'object' && c.value !== null && !Array.isArray(c.value)) {
      // An object default lists fields of the resolved one.
      for (const [k, v] of Object.entries(c.value)) {
        if ((got as Record<string, unknown>)[k] !== v) wrong.push(`${c.where}: ${c.path.join('.')}.${k} documented ${String(v)}, resolved ${String((got as Record<string, unknown>)[k])}`);
      }
    } else if (Array.isArray(c.value) ? !Array.isArray(got) || got.length !== c.value.length : got !== c.value) {
      wrong.push(`${c.where}: ${c.path.join('.')} documented ${JSON.stringify(c.value)}, resolved ${String(got)}`);
    }
  }
  return wrong;
}

describe('documented defaults', () => {
  test('docs/options.md states the defaults a pool applies', () => {
    const claims = docClaims();
    if (process.env['DOCS_DEFAULTS_VERBOSE'] !== undefined) console.log(claims.map((c) => `${c.path.join('.')}=${JSON.stringify(c.value)}`).join(' '));
    expect(claims.length).toBeGreaterThanOrEqual(30);
    expect(check(claims)).toEqual([]);
  });

  test("the option interfaces' @default tags state the defaults a pool applies", () => {
    const claims = commentClaims();
    if (process.env['DOCS_DEFAULTS_VERBOSE'] !== undefined) console.log(claims.map((c) => `${c.path.join('.')}=${JSON.stringify(c.value)}`).join(' '));
    expect(claims.length).toBeGreaterThanOrEqual(25);
    expect(check(claims)).toEqual([]);
  });
});
