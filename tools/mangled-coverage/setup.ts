/**
 * Per-test-file block coverage of src/ under the mangled config (vitest setup file, loaded
 * when MANGLED_COVERAGE names an output directory): V8's precise coverage starts before the
 * file's tests and, after them, the byte ranges of src/ scripts that ran at least once are
 * written to one JSON file per test file. `report.mjs` compares sets of test files with it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join, relative } from 'node:path';
import { afterAll, expect } from 'vitest';

const out = process.env['MANGLED_COVERAGE'] as string;
const session = new Session();

// Started at load, before the test file imports src/, so module bodies count too.
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });

afterAll(async () => {
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as { result: { url: string; functions: { ranges: { startOffset: number; endOffset: number; count: number }[] }[] }[] };
  await session.post('Profiler.stopPreciseCoverage');
  session.disconnect();
  const covered: Record<string, [number, number][]> = {};
  for (const script of result) {
    const m = /\/src\/.*\.ts/.exec(script.url);
    if (!m) continue;
    // Ranges nest (function, then its blocks): painting them in order leaves each byte the count of its innermost range.
    const spans: [number, number, number][] = [];
    for (const fn of script.functions) for (const r of fn.ranges) spans.push([r.startOffset, r.endOffset, r.count]);
    const ends = spans.flatMap(([s, e]) => [s, e]);
    const cuts = [...new Set(ends)].sort((a, b) => a - b);
    const ranges: [number, number][] = [];
    for (let i = 0; i + 1 < cuts.length; i++) {
      const [a, b] = [cuts[i]!, cuts[i + 1]!];
      // Innermost span containing [a, b): the smallest one that contains it.
      let best: [number, number, number] | undefined;
      for (const sp of spans) if (sp[0] <= a && sp[1] >= b && (!best || sp[1] - sp[0] < best[1] - best[0])) best = sp;
      if (best && best[2] > 0) ranges.push([a, b]);
    }
    const key = m[0].slice(1);
    covered[key] = [...(covered[key] ?? []), ...ranges];
  }
  const testPath = expect.getState().testPath ?? 'unknown';
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, relative(process.cwd(), testPath).replaceAll('/', '__') + '.json'), JSON.stringify(covered));
});
