#!/usr/bin/env node
/**
 * The core's smoke in workerd, the runtime of Cloudflare Workers: bundles smoke-core.mjs and
 * a worker that runs it on a request (esbuild, one ES module, as `wrangler` would), writes a
 * workerd config serving it on a free 127.0.0.1 port, starts `workerd serve`, asks it once,
 * prints the report, and stops workerd. Exits 1 on failure.
 *
 * `--adapters`: the adapters' smoke instead (smoke-adapters.mjs: the viem transport over
 * viem's `http`, the ethers provider and the fetch adapter): this script serves a loopback
 * endpoint that hangs and one that answers JSON-RPC, the worker (allowed out to 127.0.0.1)
 * calls them through each adapter, and the server counts the sockets timed-out attempts
 * closed. The bundle is built for browsers with wrangler's conditions (`workerd`, `worker`,
 * `browser`), with viem and ethers from the project's own install.
 *
 * The adapters' smoke also keeps pools at module scope, as a Worker keeps one across requests,
 * and sends six concurrent requests through each (a pooled fetch with a hanging first
 * endpoint, a rate-limited pool, a pool of one permit): workerd drops a timer or a promise's
 * settling that outlives its request, so a call must never wait on another call's timer or
 * go on inside another call (src/base/request-bound.ts).
 *
 * `--no-nodejs-compat`: the worker runs without Node's APIs (the compatibility date
 * 2026-08-03, the day before `nodejs_compat` became the default): no `process`, whose
 * `getBuiltinModule` the viem adapter's loader of viem reads.
 *
 * `node workerd.mjs [--adapters] [--no-nodejs-compat] [--timeout-ms N]`; workerd is this folder's npm `workerd`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { answerFine, HANG_ATTEMPTS } from './smoke-adapters.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const timeoutArg = process.argv.indexOf('--timeout-ms');
const timeoutMs = timeoutArg > 0 ? Number(process.argv[timeoutArg + 1]) : 60_000;
const adapters = process.argv.includes('--adapters');
const noNodeCompat = process.argv.includes('--no-nodejs-compat');

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** The worker of the core's smoke. */
const coreWorker = (version) => `import { runSmoke, formatSmoke } from './smoke-core.mjs';
export default { async fetch() { const r = await runSmoke(); return new Response(formatSmoke(${JSON.stringify(version)}, r), { status: r.ok ? 200 : 500 }); } };`;

/**
 * The worker of the adapters' smoke: the checks' results as JSON at `/`; at `/shared/<kind>`
 * one call through a pool kept at module scope, as a Worker keeps one across requests (its
 * breakers and limits must outlive a request), which concurrent requests share: a pooled
 * fetch with a hanging first endpoint, a rate-limited pool, a pool of one permit.
 */
const adaptersWorker = `import { calibrate, runAdapterSmoke } from './smoke-adapters.mjs';
import { Pool } from '../../dist/index.js';
import { createPooledFetch } from '../../dist/fetch/index.js';
let shared;
const text = async (url, ctx) => (await fetch(url, { signal: ctx.signal })).text();
export default { async fetch(request, env) {
  const path = new URL(request.url).pathname;
  if (path.startsWith('/shared/')) {
    // Built once, by the first request; the others wait for it.
    shared ??= calibrate(env.BASE).then(({ attemptTimeoutMs }) => ({
      fetch: createPooledFetch({ endpoints: [env.BASE + '/hang', env.BASE + '/fine'], attemptTimeoutMs, deadlineMs: 5000 }),
      limited: new Pool({ endpoints: [{ name: 'a', conn: env.BASE + '/fine', rateLimit: { perSecond: 4, mode: 'paced' } }], classify: () => 'transient', deadlineMs: 8000, maxQueueWaitMs: 6000 }),
      permits: new Pool({ endpoints: [{ name: 'a', conn: env.BASE + '/slow' }], classify: () => 'transient', deadlineMs: 8000, maxConcurrentCalls: 1 }),
    }));
    const kind = path.slice('/shared/'.length);
    try {
      const pools = await shared;
      const out = kind === 'fetch' ? await (await pools.fetch('/x')).text() : await pools[kind].execute(text);
      return new Response(out);
    } catch (err) {
      return new Response((err?.code ?? '') + ' ' + (err?.message ?? err), { status: 500 });
    }
  }
  const nodeApis = typeof globalThis.process?.getBuiltinModule === 'function';
  return Response.json({ nodeApis, checks: await runAdapterSmoke(env.BASE) });
} };`;

/** Six requests 50 ms apart, each one call through the module-scope pool `kind`: all answer 200 within the deadline. */
async function sharedAcrossRequests(port, kind) {
  const t0 = Date.now();
  const ask = async (i) => {
    await new Promise((r) => setTimeout(r, 50 * i));
    try {
      const res = await fetch(`http://127.0.0.1:${port}/shared/${kind}`, { signal: AbortSignal.timeout(12_000) });
      return `${res.status}${res.status === 200 ? '' : ` ${(await res.text()).slice(0, 120)}`}`;
    } catch (err) {
      return `no answer (${err?.name ?? err})`;
    }
  };
  const answers = await Promise.all([0, 1, 2, 3, 4, 5].map(ask));
  const ok = answers.every((a) => a === '200');
  return { name: `a module-scope ${kind === 'fetch' ? 'pooled fetch (hanging first endpoint)' : kind === 'limited' ? 'rate-limited pool (4/s)' : 'pool of one permit'} shared by 6 concurrent requests`, ok, detail: ok ? `all answered within ${Date.now() - t0} ms` : answers.join(', ') };
}

const dir = mkdtempSync(join(tmpdir(), 'endpoint-pool-workerd-'));
const workerd = join(here, 'node_modules', '.bin', 'workerd');
const version = (spawnSync(workerd, ['--version'], { encoding: 'utf8' }).stdout ?? '').trim() || 'workerd';
let child;
let server;
let verdict = 1;
try {
  // The adapters' endpoints: /hang never answers (its socket's close is counted), /fine answers.
  let hangClosed = 0;
  let base = '';
  if (adapters) {
    server = http.createServer((req, res) => {
      if (req.url.startsWith('/hang')) return void req.socket.once('close', () => hangClosed++);
      if (req.url.startsWith('/slow')) return void setTimeout(() => res.end('slow ok'), 400);
      answerFine(req, res);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${server.address().port}`;
  }
  await build({
    stdin: { contents: adapters ? adaptersWorker : coreWorker(version), resolveDir: here, sourcefile: 'worker.mjs' },
    // As wrangler bundles a worker: its conditions and main fields.
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    bundle: true,
    format: 'esm',
    // The adapters' smoke bundles ethers, whose files for browsers (no `node:` modules)
    // esbuild picks on its browser platform only.
    platform: adapters ? 'browser' : 'neutral',
    outfile: join(dir, 'worker.js'),
    logLevel: 'error',
  });
  const port = await freePort();
  writeFileSync(
    join(dir, 'config.capnp'),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .smoke), (name = "loopback", network = (allow = ["local", "private"])) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const smoke :Workerd.Worker = (
  modules = [ (name = "worker", esModule = embed "worker.js") ],
  compatibilityDate = "${noNodeCompat ? '2026-08-03' : '2026-11-01'}",
  bindings = [ (name = "BASE", text = "${base}") ],
  globalOutbound = "loopback",
);
`,
  );
  child = spawn(workerd, ['serve', join(dir, 'config.capnp')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const deadline = Date.now() + timeoutMs;
  let res;
  for (;;) {
    try {
      res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) });
      break;
    } catch (error) {
      // Not listening yet: ask again shortly, until the deadline.
      if (Date.now() >= deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (!adapters) {
    console.log(await res.text());
    verdict = res.status === 200 ? 0 : 1;
  } else {
    const { nodeApis, checks } = await res.json();
    const closed = async () => {
      for (const end = Date.now() + 3000; hangClosed < HANG_ATTEMPTS && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
      return hangClosed;
    };
    const n = await closed();
    checks.push({ name: "each timed-out attempt's socket closes on the server", ok: n >= HANG_ATTEMPTS, detail: `${n} of ${HANG_ATTEMPTS} closed` });
    // Then pools kept across requests (after the count above: their hanging attempts add closes).
    for (const kind of ['fetch', 'limited', 'permits']) checks.push(await sharedAcrossRequests(port, kind));
    const ok = checks.every((c) => c.ok);
    console.log(`adapters smoke on ${version}${noNodeCompat ? ' (compatibility date 2026-08-03)' : ''}`);
    console.log(`  Node's APIs (process.getBuiltinModule): ${nodeApis ? 'present' : 'absent'}`);
    for (const c of checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail ? ` (${c.detail})` : ''}`);
    console.log(ok ? 'PASS' : 'FAIL');
    verdict = ok ? 0 : 1;
  }
} catch (error) {
  console.error(`FAIL: workerd smoke: ${error instanceof Error ? error.message : String(error)}`);
  verdict = 1;
} finally {
  child?.kill('SIGKILL');
  server?.closeAllConnections();
  server?.close();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(verdict);
