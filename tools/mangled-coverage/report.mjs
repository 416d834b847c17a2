// Compares the src/ bytes covered by every test file of a MANGLED_COVERAGE run with those
// covered by the files kept when some are dropped:
//   node tools/mangled-coverage/report.mjs DIR test/a.test.ts test/b.test.ts ...
// (the files named are the dropped ones). Prints, per src/ file, the bytes only the dropped
// files reach, and the total.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, ...dropped] = process.argv.slice(2);
const drop = new Set(dropped.map((f) => f.replaceAll('/', '__') + '.json'));
const union = (files) => {
  const bytes = new Map();
  for (const f of files) {
    for (const [src, ranges] of Object.entries(JSON.parse(readFileSync(join(dir, f), 'utf8')))) {
      const set = bytes.get(src) ?? new Set();
      for (const [a, b] of ranges) for (let i = a; i < b; i++) set.add(i);
      bytes.set(src, set);
    }
  }
  return bytes;
};
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
const missing = [...drop].filter((f) => !files.includes(f));
if (missing.length) console.log('no coverage for:', missing.join(', '));
const all = union(files);
const kept = union(files.filter((f) => !drop.has(f)));
let total = 0, lost = 0;
for (const [src, set] of [...all].sort()) {
  const k = kept.get(src) ?? new Set();
  const only = [...set].filter((i) => !k.has(i));
  total += set.size;
  lost += only.length;
  if (only.length) console.log(`${src}: ${only.length} bytes reached only by the dropped files (${rangesOf(only)})`);
}
console.log(`${files.length} files, ${drop.size} dropped: ${total} src bytes covered by all, ${lost} only by the dropped`);
function rangesOf(xs) {
  const out = [];
  for (const x of xs.sort((a, b) => a - b)) {
    const last = out.at(-1);
    if (last && last[1] === x) last[1] = x + 1;
    else out.push([x, x + 1]);
  }
  return out.map(([a, b]) => `${a}-${b}`).join(' ');
}
