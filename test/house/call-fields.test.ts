/**
 * The classes a call is made of (a call is its own first attempt: six classes deep) declare
 * their fields with `declare` and assign them in their constructors. A field declared with
 * an initializer, without one, or as `#private` makes V8 run that class's field
 * initializers as a call of its own on every construction: 40-60 ns per call on Node 20 and
 * 26 with the chain as it was (docs/performance.md, "The viem path with `custom` handed in"). This keeps it that way.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, test } from 'vitest';

const SRC = resolve(__dirname, '../../src/call');
const CLASSES: [file: string, names: string[]][] = [
  ['context.ts', ['SignalContext']],
  ['attempt.ts', ['Attempt', 'OwnedAttempt']],
  ['call-core.ts', ['CallCore']],
  ['waits.ts', ['Waiting']],
  ['call.ts', ['Call']],
  ['tagged-call.ts', ['NumberedCall', 'TaggedCall']],
];

/** Lines of a class body that emit a field: a member without parentheses that is neither `declare`, `abstract` nor `static`. */
function emittedFields(source: string, name: string): string[] {
  const start = source.search(new RegExp(`\\bclass ${name}\\b`));
  if (start < 0) throw new Error(`class ${name} not found`);
  const end = source.indexOf('\n}', start);
  const body = source.slice(source.indexOf('{\n', start) + 2, end);
  return body
    .split('\n')
    .filter((l) => /^ {2}\S/.test(l)) // members, not their bodies
    .map((l) => l.trim())
    .filter((l) => !l.startsWith('//') && !l.startsWith('/*') && !l.startsWith('*') && !l.startsWith('}'))
    .filter((l) => /^(?:(?:readonly|protected|private|public|override)\s+)*#?[\w$]+[!?]?\s*(?::[^(]*)?(?:=.*)?;$/.test(l))
    .filter((l) => !/\b(?:declare|abstract|static)\b/.test(l.split(/[:=]/)[0]!));
}

describe('the call classes emit no class fields', () => {
  test.each(CLASSES.flatMap(([file, names]) => names.map((n) => [file, n] as const)))('%s: %s', (file, name) => {
    expect(emittedFields(readFileSync(resolve(SRC, file), 'utf8'), name)).toEqual([]);
  });

  test('the check sees field declarations of every kind', () => {
    const src = 'class X extends Y {\n  a = 1;\n  #b: number;\n  protected readonly c!: string;\n  declare d: number;\n  abstract e: number;\n  static f = 2;\n  get g(): number {\n    return 1;\n  }\n}\n';
    expect(emittedFields(src, 'X')).toEqual(['a = 1;', '#b: number;', 'protected readonly c!: string;']);
  });
});
