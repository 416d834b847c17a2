import v8 from 'node:v8';
import { contenders, pathContenders } from '../overhead/contenders.mjs';
const name = process.argv[2] ?? 'pool-full';
const parked = [];
const op = () => new Promise((r) => parked.push(r));
const c = await (contenders[name] ?? pathContenders[name])(op);
const N = 5000;
const ps = [];
for (let i = 0; i < N; i++) ps.push(c.call());
await new Promise((r) => setImmediate(r));
const file = v8.writeHeapSnapshot('/tmp/speed/h.heapsnapshot');
const snap = JSON.parse((await import('node:fs')).readFileSync(file, 'utf8'));
const f = snap.snapshot.meta.node_fields, nf = f.length, types = snap.snapshot.meta.node_types[0];
const byName = new Map();
for (let i = 0; i < snap.nodes.length; i += nf) {
  const type = types[snap.nodes[i]]; const nm = snap.strings[snap.nodes[i + 1]]; const size = snap.nodes[i + 3];
  const k = type + ':' + nm;
  const e = byName.get(k) ?? [0, 0]; e[0]++; e[1] += size; byName.set(k, e);
}
const rows = [...byName].filter(([, [n]]) => n >= N).sort((a, b) => b[1][1] - a[1][1]).slice(0, 25);
for (const [k, [n, s]] of rows) console.log((s / N).toFixed(0).padStart(6), 'B/call', (n / N).toFixed(2).padStart(6), 'per call', k.slice(0, 80));
process.exit(0);
