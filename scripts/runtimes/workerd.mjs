#!/usr/bin/env node
/**
 * The core's smoke in workerd, the runtime of Cloudflare Workers: bundles smoke-core.mjs and
 * a worker that runs it on a request (esbuild, one ES module, as `wrangler` would), writes a
 * workerd config serving it on a free 127.0.0.1 port, starts `workerd serve`, asks it once,
 * prints the report, and stops workerd. Exits 1 on failure.
 *
 * `--fetch`: the fetch adapter's smoke instead (smoke-fetch.mjs's checks): this script serves
 * a loopback endpoint that hangs and one that answers, the worker (allowed out to 127.0.0.1)
 * calls them through a pooled fetch, and the server counts the sockets a timed-out attempt
 * closed.
 *
 * workerd differs where it matters to a pool: its clocks stand still while code runs and
 * move only between events (timers and I/O), and timers exist only within a request.
 *
 * `--rpc`: the viem transport's and the ethers provider's smoke: the same two loopback
 * endpoints speaking JSON-RPC, `client.getBlockNumber()` through `poolTransport` over viem's
 * `http` and `provider.send('eth_blockNumber')` through `PooledJsonRpcProvider`, each with
 * a hanging first endpoint; the bundle is built for browsers with wrangler's conditions
 * (`workerd`, `worker`, `browser`), with viem and ethers from the project's own install.
 *
 * `--nodejs-compat`: the worker runs with Cloudflare's `nodejs_compat` flag (a `process`
 * with Node's `getBuiltinModule`, which the viem adapter's loader of viem reads).
 *
 * `node workerd.mjs [--fetch | --rpc] [--nodejs-compat] [--timeout-ms N]`; workerd is this folder's npm `workerd`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = fileURLToPath(new URL('.', import.meta.url));
const timeoutArg = process.argv.indexOf('--timeout-ms');
const timeoutMs = timeoutArg > 0 ? Number(process.argv[timeoutArg + 1]) : 60_000;
const rpcSmoke = process.argv.includes('--rpc');
const nodeCompat = process.argv.includes('--nodejs-compat');
const fetchSmoke = rpcSmoke || process.argv.includes('--fetch');

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

/** The worker of the fetch adapter's smoke: the checks' results as JSON. */
const fetchWorker = `import { createPooledFetch } from '../../dist/fetch/index.js';
export default { async fetch(_request, env) {
  const checks = [];
  const check = (name, ok, detail = '') => checks.push({ name, ok, detail });
  const pooled = createPooledFetch({ endpoints: [env.BASE + '/hang', env.BASE + '/fine'], attemptTimeoutMs: 300, deadlineMs: 5000 });
  try {
    for (let i = 0; i < 3; i++) {
      const res = await pooled('/x');
      check('call ' + (i + 1) + ': a hanging first endpoint, answered by the second', res.ok && (await res.text()) === 'ok');
    }
  } catch (err) {
    check('calls with a hanging first endpoint', false, String(err));
  }
  const alone = createPooledFetch({ endpoints: [env.BASE + '/hang'], attemptTimeoutMs: 300, deadlineMs: 2000, maxAttempts: 1 });
  const t0 = Date.now();
  try {
    await alone('/x');
    check('a call to a hanging endpoint alone fails', false, 'it resolved');
  } catch (err) {
    check('a call to a hanging endpoint alone fails within its deadline', Date.now() - t0 < 2000, (err?.code ?? err) + ' after ' + (Date.now() - t0) + ' ms');
  }
  await pooled.pool.close();
  await alone.pool.close();
  return Response.json(checks);
} };`;

/**
 * The viem transport's and the ethers provider's smoke. Each adapter makes three requests with
 * a hanging first endpoint (each attempt there times out and closes its request: six sockets
 * closed on the server) and then a request to the hanging endpoint alone, which must fail
 * within its deadline.
 */
const rpcWorker = `import { createPublicClient, http } from 'viem';
import { poolTransport } from '../../dist/viem/index.js';
import { PooledJsonRpcProvider } from '../../dist/ethers/index.js';
export default { async fetch(_request, env) {
  const checks = [];
  const check = (name, ok, detail = '') => checks.push({ name, ok, detail });
  const endpoints = [{ name: 'hang', url: env.BASE + '/hang' }, { name: 'fine', url: env.BASE + '/fine' }];
  const transport = poolTransport({ endpoints, http, attemptTimeoutMs: 300, deadlineMs: 5000 });
  const client = createPublicClient({ transport, cacheTime: 0 });
  try {
    for (let i = 0; i < 3; i++) {
      const n = await client.getBlockNumber({ cacheTime: 0 });
      check('viem request ' + (i + 1) + ': a hanging first endpoint, answered by the second', n === 16n, String(n));
    }
  } catch (err) {
    check('viem requests with a hanging first endpoint', false, String(err?.shortMessage ?? err));
  }
  const provider = new PooledJsonRpcProvider({ endpoints, network: 1, attemptTimeoutMs: 300, deadlineMs: 5000 });
  try {
    for (let i = 0; i < 3; i++) {
      const n = await provider.send('eth_blockNumber', []);
      check('ethers request ' + (i + 1) + ': a hanging first endpoint, answered by the second', n === '0x10', String(n));
    }
  } catch (err) {
    check('ethers requests with a hanging first endpoint', false, String(err?.shortMessage ?? err) + ' / cause: ' + String(err?.cause?.stack ?? err?.cause) + ' / attempts: ' + JSON.stringify(err?.attempts?.map?.((a) => String(a.error?.stack ?? a.error))));
  }
  const alone = poolTransport({ endpoints: [endpoints[0]], http, attemptTimeoutMs: 300, deadlineMs: 1500, maxAttempts: 1 });
  const t0 = Date.now();
  try {
    await createPublicClient({ transport: alone }).getBlockNumber({ cacheTime: 0 });
    check('a viem request to a hanging endpoint alone fails', false, 'it resolved');
  } catch (err) {
    check('a viem request to a hanging endpoint alone fails within its deadline', Date.now() - t0 < 1500, (err?.code ?? err?.name) + ' after ' + (Date.now() - t0) + ' ms');
  }
  await transport.pool.close();
  await alone.pool.close();
  await provider.close();
  return Response.json(checks);
} };`;

const dir = mkdtempSync(join(tmpdir(), 'endpoint-pool-workerd-'));
const workerd = join(here, 'node_modules', '.bin', 'workerd');
const version = (spawnSync(workerd, ['--version'], { encoding: 'utf8' }).stdout ?? '').trim() || 'workerd';
let child;
let server;
let verdict = 1;
try {
  // The fetch smoke's endpoints: /hang never answers (its socket's close is counted), the rest answer "ok".
  let hangClosed = 0;
  let base = '';
  if (fetchSmoke) {
    server = http.createServer((req, res) => {
      if (req.url.startsWith('/hang')) return void req.socket.once('close', () => hangClosed++);
      if (!rpcSmoke) return void res.end('ok');
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const answer = (m) => ({ jsonrpc: '2.0', id: m.id, result: m.method === 'eth_blockNumber' ? '0x10' : m.method === 'net_version' ? '1' : '0x1' });
        const msg = JSON.parse(body);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(Array.isArray(msg) ? msg.map(answer) : answer(msg)));
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${server.address().port}`;
  }
  await build({
    stdin: { contents: rpcSmoke ? rpcWorker : fetchSmoke ? fetchWorker : coreWorker(version), resolveDir: here, sourcefile: 'worker.mjs' },
    // As wrangler bundles a worker: its conditions and main fields.
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    bundle: true,
    format: 'esm',
    // The rpc smoke bundles ethers, whose files for browsers (no `node:` modules) esbuild
    // picks on its browser platform only.
    platform: rpcSmoke ? 'browser' : 'neutral',
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
  compatibilityDate = "2026-11-01",${nodeCompat ? ' compatibilityFlags = ["nodejs_compat"],' : ''}
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
  if (!fetchSmoke) {
    console.log(await res.text());
    verdict = res.status === 200 ? 0 : 1;
  } else {
    const checks = await res.json();
    const closed = async () => {
      for (const end = Date.now() + 3000; hangClosed < expected && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
      return hangClosed;
    };
    const expected = rpcSmoke ? 7 : 4;
    const n = await closed();
    checks.push({ name: "each timed-out attempt's socket closes on the server", ok: n >= expected, detail: `${n} of ${expected} closed` });
    const ok = checks.every((c) => c.ok);
    console.log(`${rpcSmoke ? 'viem and ethers' : 'fetch'} smoke on ${version}${nodeCompat ? ' (nodejs_compat)' : ''}`);
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
