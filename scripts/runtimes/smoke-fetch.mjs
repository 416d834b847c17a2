#!/usr/bin/env node
/**
 * The fetch adapter's smoke on a server-side runtime (`node|bun smoke-fetch.mjs`,
 * `deno run --allow-net=127.0.0.1 smoke-fetch.mjs`), against a loopback server started here
 * with node:http (which Bun and Deno provide too). It checks what differs between runtimes:
 * how an attempt's request is closed (on Node an undici dispatcher, elsewhere the signal;
 * src/fetch/dispatcher.ts). A call whose first endpoint hangs is answered by the second
 * after the attempt timeout; a call to a hanging endpoint alone fails within its deadline,
 * and the server sees that request's socket close. Prints one line per check and a verdict;
 * exits 1 if any check failed.
 */
import http from 'node:http';
import { createPooledFetch } from '../../dist/fetch/index.js';

function runtimeName() {
  if (globalThis.Deno !== undefined) return `Deno ${globalThis.Deno.version.deno}`;
  if (globalThis.Bun !== undefined) return `Bun ${globalThis.Bun.version}`;
  return `Node ${globalThis.process.version.slice(1)}`;
}

const checks = [];
const check = (name, ok, detail = '') => checks.push({ name, ok, detail });
let hangClosed = 0;
const server = http.createServer((req, res) => {
  if (req.url.startsWith('/hang')) {
    req.socket.once('close', () => hangClosed++);
    return; // never answers
  }
  res.end('ok');
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;
const waitFor = async (cond, ms) => {
  for (const end = Date.now() + ms; !cond() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
  return cond();
};

const pooled = createPooledFetch({ endpoints: [`${base}/hang`, `${base}/fine`], attemptTimeoutMs: 300, deadlineMs: 5000 });
try {
  for (let i = 0; i < 3; i++) {
    const res = await pooled('/x');
    check(`call ${i + 1}: a hanging first endpoint, answered by the second`, res.ok && (await res.text()) === 'ok');
  }
} catch (err) {
  check('calls with a hanging first endpoint', false, String(err));
}
const alone = createPooledFetch({ endpoints: [`${base}/hang`], attemptTimeoutMs: 300, deadlineMs: 2000, maxAttempts: 1 });
const before = hangClosed;
const t0 = Date.now();
try {
  await alone('/x');
  check('a call to a hanging endpoint alone fails', false, 'it resolved');
} catch (err) {
  check('a call to a hanging endpoint alone fails within its deadline', Date.now() - t0 < 2000, `${err?.code ?? err} after ${Date.now() - t0} ms`);
}
check("the timed-out attempt's socket closes on the server", await waitFor(() => hangClosed > before, 3000), `${hangClosed - before} closed`);
await pooled.pool.close();
await alone.pool.close();
server.close();
server.closeAllConnections?.();

const ok = checks.every((c) => c.ok);
console.log(`fetch smoke on ${runtimeName()}`);
for (const c of checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail ? ` (${c.detail})` : ''}`);
console.log(ok ? 'PASS' : 'FAIL');
if (!ok) {
  if (globalThis.Deno !== undefined) globalThis.Deno.exit(1);
  globalThis.process.exitCode = 1;
}
