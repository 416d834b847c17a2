/**
 * Re-renders bench/results/summary.md from the JSON results already there, without
 * measuring anything: `node bench/summarize.mjs`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderBeyond } from './beyond/sims.mjs';
import { renderSummary } from './report.mjs';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
const read = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
const overhead = read('overhead.json');
const beyond = fs.existsSync(path.join(dir, 'beyond.json')) ? '\n' + renderBeyond(read('beyond.json')) : '';
fs.writeFileSync(path.join(dir, 'summary.md'), renderSummary({ environment: overhead.environment, overhead, scale: read('scale.json'), sim: read('sim.json') }) + beyond);
