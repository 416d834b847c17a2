#!/usr/bin/env node
/**
 * The core's smoke in workerd, the runtime of Cloudflare Workers: bundles smoke-core.mjs and
 * a worker that runs it on a request (esbuild, one ES module, as `wrangler` would), writes a
 * workerd config serving it on a free 127.0.0.1 port, starts `workerd serve`, asks it once,
 * prints the report, and stops workerd. Exits 1 on failure.
 *
 * workerd differs where it matters to a pool: its clocks stand still while code runs and
 * move only between events (timers and I/O), and timers exist only within a request.
 *
 * `node workerd.mjs [--timeout-ms N]`; workerd is this folder's npm `workerd`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = fileURLToPath(new URL('.', import.meta.url));
const timeoutArg = process.argv.indexOf('--timeout-ms');
const timeoutMs = timeoutArg > 0 ? Number(process.argv[timeoutArg + 1]) : 60_000;

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const workerd = join(here, 'node_modules', '.bin', 'workerd');
const version = (spawnSync(workerd, ['--version'], { encoding: 'utf8' }).stdout ?? '').trim() || 'workerd';
const dir = mkdtempSync(join(tmpdir(), 'endpoint-pool-workerd-'));
let child;
let verdict = 1;
try {
  await build({
    stdin: {
      contents: `import { runSmoke, formatSmoke } from './smoke-core.mjs';
export default { async fetch() { const r = await runSmoke(); return new Response(formatSmoke(${JSON.stringify(version)}, r), { status: r.ok ? 200 : 500 }); } };`,
      resolveDir: here,
      sourcefile: 'worker.mjs',
    },
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    outfile: join(dir, 'worker.js'),
    logLevel: 'error',
  });
  const port = await freePort();
  writeFileSync(
    join(dir, 'config.capnp'),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .smoke) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const smoke :Workerd.Worker = (
  modules = [ (name = "worker", esModule = embed "worker.js") ],
  compatibilityDate = "2026-11-01",
);
`,
  );
  child = spawn(workerd, ['serve', join(dir, 'config.capnp')], { stdio: ['ignore', 'inherit', 'inherit'] });
  const deadline = Date.now() + timeoutMs;
  let text;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) });
      text = await res.text();
      verdict = res.status === 200 ? 0 : 1;
      break;
    } catch (error) {
      // Not listening yet: ask again shortly, until the deadline.
      if (Date.now() >= deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  console.log(text);
} catch (error) {
  console.error(`FAIL: workerd smoke: ${error instanceof Error ? error.message : String(error)}`);
  verdict = 1;
} finally {
  child?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
process.exit(verdict);
