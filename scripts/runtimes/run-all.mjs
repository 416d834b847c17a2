#!/usr/bin/env node
/**
 * Runs the core's smoke on every runtime the README names: the Node running this script
 * (the system's, 20 here), the newest Node, Bun and Deno from npm (this folder's own
 * package.json, installed here on demand, never in the library's root install), workerd
 * (Cloudflare Workers' runtime, from npm too), and headless Chromium (page and module Worker);
 * and the adapters' smoke (smoke-adapters.mjs: viem, ethers and fetch) on the Nodes, Bun and
 * Deno (smoke-fetch.mjs), and bundled for browsers in workerd, with and without Node's APIs,
 * and on a Chromium page. Expects a built dist/ (`npm run build`).
 *
 * `node scripts/runtimes/run-all.mjs [node,node-npm,bun,deno,chromium,adapters-node,...]`; exits 1 if any
 * runtime fails, hangs (the smoke must exit on its own: no timer may keep it alive) or is
 * missing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const bin = (name) => `${here}node_modules/.bin/${name}`;
const HANG_MS = 90_000;
const OLDEST_NODE = 'node@20.0.0';

if (!existsSync(fileURLToPath(new URL('../../dist/index.js', import.meta.url)))) {
  console.error('FAIL: dist/ is missing: run `npm run build` first (or `npm run smoke:runtimes`)');
  process.exit(1);
}

/** Installs this folder's runtimes unless the pinned versions are there already. */
function ensureRuntimes() {
  const pinned = JSON.parse(readFileSync(`${here}package.json`, 'utf8')).devDependencies;
  const have = (name, flag, pattern) => {
    if (!existsSync(bin(name))) return false;
    const out = spawnSync(bin(name), [flag], { encoding: 'utf8' }).stdout ?? '';
    return pattern.test(out);
  };
  const ready =
    have('node', '--version', new RegExp(`^v${pinned.node.replaceAll('.', '\\.')}\\b`)) &&
    have('bun', '--version', new RegExp(`^${pinned.bun.replaceAll('.', '\\.')}\\b`)) &&
    have('deno', '--version', new RegExp(`^deno ${pinned.deno.replaceAll('.', '\\.')}\\b`)) &&
    existsSync(bin('workerd'));
  if (ready) return;
  console.log('== installing the runtimes (scripts/runtimes: npm ci)');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: here, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('FAIL: npm ci in scripts/runtimes failed');
    process.exit(1);
  }
}

const RUNTIMES = {
  node: { label: 'Node (system)', cmd: () => [process.execPath, ['smoke.mjs']] },
  'node-npm': { label: 'Node (npm `node`)', cmd: () => [bin('node'), ['smoke.mjs']] },
  // The oldest Node that package.json's `engines` admits (>= 20), fetched by npx.
  'node-oldest': { label: 'Node 20.0.0 (npx node@20.0.0)', cmd: () => ['npx', ['-y', OLDEST_NODE, 'smoke.mjs']] },
  bun: { label: 'Bun (npm `bun`)', cmd: () => [bin('bun'), ['smoke.mjs']] },
  // No permission flag: the core needs none (no file, network or env access).
  deno: { label: 'Deno (npm `deno`)', cmd: () => [bin('deno'), ['run', '--no-prompt', '--no-config', '--no-lock', 'smoke.mjs']] },
  chromium: { label: 'Chromium (Debian, page + Worker)', cmd: () => [process.execPath, ['chromium.mjs']] },
  'adapters-chromium': { label: 'viem, ethers, fetch: Chromium (page)', cmd: () => [process.execPath, ['chromium.mjs', '--adapters']] },
  // Cloudflare Workers' runtime: clocks that stand still while code runs, timers only within a request.
  workerd: { label: 'workerd (npm `workerd`)', cmd: () => [process.execPath, ['workerd.mjs']] },
  // The adapters (smoke-adapters.mjs: viem, ethers, fetch) on the server-side runtimes: the
  // fetch adapter closes a timed-out request differently on Node (an undici dispatcher) and
  // elsewhere (the signal), and each adapter calls the runtime's own `fetch`.
  'adapters-node': { label: 'viem, ethers, fetch: Node (system)', cmd: () => [process.execPath, ['smoke-fetch.mjs']] },
  'adapters-node-npm': { label: 'viem, ethers, fetch: Node (npm)', cmd: () => [bin('node'), ['smoke-fetch.mjs']] },
  'adapters-node-oldest': { label: 'viem, ethers, fetch: Node 20.0.0', cmd: () => ['npx', ['-y', OLDEST_NODE, 'smoke-fetch.mjs']] },
  'adapters-bun': { label: 'viem, ethers, fetch: Bun (npm)', cmd: () => [bin('bun'), ['smoke-fetch.mjs']] },
  // viem and ethers from the project's node_modules (read access); ethers' `ws` reads the environment.
  'adapters-deno': {
    label: 'viem, ethers, fetch: Deno (npm)',
    cmd: () => [bin('deno'), ['run', '--no-prompt', '--no-lock', '--node-modules-dir=manual', '--allow-net=127.0.0.1', '--allow-read', '--allow-env', 'smoke-fetch.mjs']],
  },
  // The viem transport, the ethers provider and the fetch adapter, bundled for browsers as
  // wrangler bundles a worker (smoke-adapters.mjs), with and without Node's APIs.
  'adapters-workerd': { label: 'viem, ethers, fetch: workerd (npm)', cmd: () => [process.execPath, ['workerd.mjs', '--adapters']] },
  'adapters-workerd-bare': { label: 'viem, ethers, fetch: workerd, no Node APIs', cmd: () => [process.execPath, ['workerd.mjs', '--adapters', '--no-nodejs-compat']] },
};

function run(name) {
  const [cmd, args] = RUNTIMES[name].cmd();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: here, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const hang = setTimeout(() => {
      out += `\nFAIL: still running after ${HANG_MS} ms (hung, or a timer keeps it alive); stopped`;
      child.kill('SIGKILL');
    }, HANG_MS);
    child.once('error', (err) => {
      out += `\nFAIL: cannot start ${cmd}: ${err.message}`;
    });
    child.once('close', (code) => {
      clearTimeout(hang);
      resolve({ name, code, out: out.trimEnd() });
    });
  });
}

const wanted = (process.argv[2] ?? Object.keys(RUNTIMES).join(',')).split(',');
for (const w of wanted) {
  if (!(w in RUNTIMES)) {
    console.error(`unknown runtime ${w}; known: ${Object.keys(RUNTIMES).join(', ')}`);
    process.exit(2);
  }
}
if (wanted.some((w) => ['node-npm', 'bun', 'deno', 'workerd', 'adapters-node-npm', 'adapters-bun', 'adapters-deno', 'adapters-workerd', 'adapters-workerd-bare'].includes(w))) ensureRuntimes();

const summary = [];
for (const name of wanted) {
  const { code, out } = await run(name);
  console.log(`== ${RUNTIMES[name].label}\n${out}`);
  // Chromium's user agent shows only the major version; the browser's product string is exact.
  const version = out.match(/^Chromium: (.+)$/m)?.[1] ?? out.match(/^(?:adapters )?smoke on (.+)$/m)?.[1] ?? '?';
  summary.push({ label: RUNTIMES[name].label, ok: code === 0, version });
}
console.log('== core and adapters smoke, by runtime');
for (const s of summary) console.log(`  ${s.ok ? 'pass' : 'FAIL'}  ${s.label.padEnd(42)} ${s.version}`);
const failed = summary.filter((s) => !s.ok).length;
console.log(`runtimes: ${summary.length - failed} of ${summary.length} passed`);
process.exitCode = failed === 0 ? 0 : 1;
