/**
 * Installs a tool folder's own dependencies (bench/, tools/mutation/) when they are missing
 * or older than that folder's package-lock.json, so that the root's `npm install` stays
 * small and the commands that need these tools still work on a fresh clone:
 *
 *   node scripts/ensure-deps.mjs bench
 *
 * "Older" compares npm's record of the last install (node_modules/.package-lock.json) with
 * the lockfile's modification time; `npm ci` then installs exactly what the lockfile holds.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const folders = process.argv.slice(2);
if (folders.length === 0) {
  console.error('usage: node scripts/ensure-deps.mjs <folder>...');
  process.exit(2);
}

for (const folder of folders) {
  const dir = join(root, folder);
  const lock = join(dir, 'package-lock.json');
  if (!existsSync(lock)) {
    console.error(`${folder}/package-lock.json is missing`);
    process.exit(1);
  }
  const installed = join(dir, 'node_modules', '.package-lock.json');
  if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) continue;
  console.error(`installing ${folder}/'s dependencies (npm ci --prefix ${folder})`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['ci', '--prefix', dir, '--no-audit', '--no-fund'], { stdio: 'inherit', shell: process.platform === 'win32' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
