/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time per function, as a
 * share of all samples, heaviest first.
 *   node bench/lib/profile-top.mjs file.cpuprofile [rows]
 */
import fs from 'node:fs';

export function topFunctions(profile, rows = 25) {
  const timeById = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    timeById.set(id, (timeById.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const self = new Map();
  let total = 0;
  for (const node of profile.nodes) {
    const t = timeById.get(node.id) ?? 0;
    total += t;
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url ? f.url.split('/').slice(-2).join('/') : ''}${f.url ? ':' + (f.lineNumber + 1) : ''}`;
    self.set(key, (self.get(key) ?? 0) + t);
  }
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, rows)
    .map(([fn, t]) => ({ fn, selfPct: Math.round((1000 * t) / total) / 10 }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const profile = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  for (const r of topFunctions(profile, Number(process.argv[3] ?? 25))) console.log(`${String(r.selfPct).padStart(5)}%  ${r.fn}`);
}
