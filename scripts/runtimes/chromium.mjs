#!/usr/bin/env node
/**
 * The core's smoke in headless Chromium: serves page/index.html from 127.0.0.1, opens it
 * in Chromium driven over the DevTools protocol on a pipe (no port, no dependency), waits
 * for the page to write its verdict into the DOM, prints it, and exits 1 on failure.
 *
 * `--adapters`: the adapters' smoke instead (smoke-adapters.mjs, bundled for browsers by
 * esbuild with viem and ethers from the project's install) on page/adapters.html, against a
 * hanging and an answering endpoint of the same origin; the server counts the sockets the
 * timed-out attempts closed.
 *
 * `node chromium.mjs [--adapters] [--timeout-ms N]`; the browser is `$CHROMIUM` or /usr/bin/chromium
 * (Debian's `chromium` package). Chromium runs in its own process group, with its own
 * temporary profile, and is stopped (Browser.close, then the group's SIGKILL) at the end.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { serve } from './serve.mjs';
import { answerFine, HANG_ATTEMPTS } from './smoke-adapters.mjs';

const executable = process.env.CHROMIUM ?? '/usr/bin/chromium';
const timeoutArg = process.argv.indexOf('--timeout-ms');
const timeoutMs = timeoutArg > 0 ? Number(process.argv[timeoutArg + 1]) : 60_000;
const adapters = process.argv.includes('--adapters');

/** A DevTools protocol client over Chromium's --remote-debugging-pipe (fd 3 in, fd 4 out, NUL-framed JSON). */
function pipeClient(child) {
  let seq = 0;
  let buffer = '';
  const pending = new Map();
  const listeners = [];
  child.stdio[4].setEncoding('utf8');
  child.stdio[4].on('data', (chunk) => {
    buffer += chunk;
    let end;
    while ((end = buffer.indexOf('\0')) >= 0) {
      const message = JSON.parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
      if (message.id !== undefined) {
        const p = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) p?.reject(new Error(`${p.method}: ${message.error.message}`));
        else p?.resolve(message.result);
      } else for (const l of listeners) l(message);
    }
  });
  child.stdio[3].on('error', () => {}); // the browser went away; pending sends fail by timeout
  return {
    send(method, params = {}, sessionId) {
      const id = ++seq;
      child.stdio[3].write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
    },
    onEvent(fn) {
      listeners.push(fn);
    },
  };
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer after ${ms} ms`)), ms);
    }),
  ]);
}

const profile = mkdtempSync(join(tmpdir(), 'endpoint-pool-chromium-'));
/** The adapters' smoke: its bundle, and its endpoints `/ep/hang` (never answers) and `/ep/fine`. */
let bundle;
let hangClosed = 0;
if (adapters) {
  const out = await build({
    stdin: { contents: `import { runAdapterSmoke } from './smoke-adapters.mjs'; globalThis.adapterChecks = runAdapterSmoke(location.origin + '/ep');`, resolveDir: fileURLToPath(new URL('.', import.meta.url)), sourcefile: 'adapters-page.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    logLevel: 'error',
  });
  bundle = out.outputFiles[0].contents;
}
const server = await serve((req, res) => {
  if (!adapters) return false;
  if (req.url === '/bundle/adapters.js') res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(bundle);
  else if (req.url.startsWith('/ep/hang')) req.socket.once('close', () => hangClosed++);
  else if (req.url.startsWith('/ep/fine')) answerFine(req, res);
  else return false;
  return true;
});
const child = spawn(
  executable,
  [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--no-default-browser-check',
    `--user-data-dir=${profile}`,
    '--remote-debugging-pipe',
    'about:blank',
  ],
  { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true },
);
let stderr = '';
child.stderr.setEncoding('utf8');
child.stderr.on('data', (s) => {
  stderr = (stderr + s).slice(-4000);
});
const exited = new Promise((resolve) => child.once('exit', resolve));
child.once('error', (err) => {
  console.error(`cannot start ${executable}: ${err.message} (Debian: apt-get install -y chromium)`);
});

const logs = [];
let ok = false;
try {
  const cdp = pipeClient(child);
  const started = Promise.race([
    cdp.send('Browser.getVersion'),
    exited.then(() => Promise.reject(new Error(`Chromium exited at start:\n${stderr}`))),
  ]);
  const { product } = await withTimeout(started, 30_000, 'Browser.getVersion');
  const { targetInfos } = await cdp.send('Target.getTargets');
  const page = targetInfos.find((t) => t.type === 'page');
  if (page === undefined) throw new Error('Chromium opened no page');
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId: page.targetId, flatten: true });
  cdp.onEvent((m) => {
    if (m.method === 'Runtime.consoleAPICalled') logs.push(`console.${m.params.type}: ${m.params.args.map((a) => a.value ?? a.description).join(' ')}`);
    if (m.method === 'Runtime.exceptionThrown') logs.push(`exception: ${m.params.exceptionDetails.exception?.description ?? m.params.exceptionDetails.text}`);
    if (m.method === 'Log.entryAdded') logs.push(`log.${m.params.entry.level}: ${m.params.entry.text} ${m.params.entry.url ?? ''}`);
  });
  await cdp.send('Runtime.enable', {}, sessionId);
  await cdp.send('Log.enable', {}, sessionId);
  await cdp.send('Page.enable', {}, sessionId);
  const url = `${server.origin}/scripts/runtimes/page/${adapters ? 'adapters' : 'index'}.html`;
  await cdp.send('Page.navigate', { url }, sessionId);
  // Waits, in the page, for the verdict in the DOM; retried if the evaluation lands in the
  // document being replaced by the navigation.
  const expression = `new Promise((resolve) => {
    const look = () => {
      const el = location.href === ${JSON.stringify(url)} ? document.getElementById('result') : null;
      if (el && el.dataset.done === 'true') resolve({ ok: el.dataset.ok === 'true', text: el.textContent });
      else setTimeout(look, 20);
    };
    look();
  })`;
  const deadline = Date.now() + timeoutMs;
  let verdict;
  while (verdict === undefined) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`the page wrote no verdict within ${timeoutMs} ms`);
    try {
      const { result, exceptionDetails } = await withTimeout(cdp.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true }, sessionId), left, 'the page');
      if (exceptionDetails) throw new Error(exceptionDetails.text);
      verdict = result.value;
    } catch (err) {
      if (!/context|navigat/i.test(String(err.message))) throw err;
    }
  }
  console.log(`Chromium: ${product}`);
  console.log(verdict.text);
  ok = verdict.ok;
  if (adapters) {
    for (const end = Date.now() + 3000; hangClosed < HANG_ATTEMPTS && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
    const closedOk = hangClosed >= HANG_ATTEMPTS;
    console.log(`  ${closedOk ? 'ok  ' : 'FAIL'} each timed-out attempt's socket closes on the server (${hangClosed} of ${HANG_ATTEMPTS} closed)`);
    ok &&= closedOk;
  }
  await withTimeout(cdp.send('Browser.close'), 5_000, 'Browser.close').catch(() => {});
} catch (err) {
  console.error(`FAIL: Chromium smoke: ${err.message}`);
} finally {
  if (!ok && logs.length > 0) console.error(`page log:\n  ${logs.join('\n  ')}`);
  // Chromium's helpers share its process group; end the group we started if it lingers.
  const gone = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 5_000))]);
  if (!gone && child.pid !== undefined) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
    await exited;
  }
  await server.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exitCode = ok ? 0 : 1;
