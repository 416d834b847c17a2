#!/usr/bin/env node
/**
 * The adapters' smoke on a server-side runtime (`node|bun smoke-fetch.mjs`,
 * `deno run --allow-net=127.0.0.1 … smoke-fetch.mjs`): smoke-adapters.mjs (the viem transport
 * over viem's `http`, the ethers provider and the fetch adapter) against a loopback server
 * started here with node:http (which Bun and Deno provide too). It checks what differs
 * between runtimes: how an attempt's request is closed (on Node an undici dispatcher,
 * elsewhere the signal; src/fetch/dispatcher.ts), and how each adapter calls the runtime's
 * `fetch`. Each adapter's requests with a hanging first endpoint are answered by the second
 * after the attempt timeout, one to the hanging endpoint alone fails by its timeout, and the
 * server sees every timed-out request's socket close. Prints one line per check and a
 * verdict; exits 1 if any check failed.
 */
import http from 'node:http';
import { answerFine, HANG_ATTEMPTS, runAdapterSmoke } from './smoke-adapters.mjs';

function runtimeName() {
  if (globalThis.Deno !== undefined) return `Deno ${globalThis.Deno.version.deno}`;
  if (globalThis.Bun !== undefined) return `Bun ${globalThis.Bun.version}`;
  return `Node ${globalThis.process.version.slice(1)}`;
}

let hangClosed = 0;
const server = http.createServer((req, res) => {
  if (req.url.startsWith('/hang')) {
    req.socket.once('close', () => hangClosed++);
    return; // never answers
  }
  answerFine(req, res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const checks = await runAdapterSmoke(`http://127.0.0.1:${server.address().port}`);
for (const end = Date.now() + 3000; hangClosed < HANG_ATTEMPTS && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
checks.push({ name: "each timed-out attempt's socket closes on the server", ok: hangClosed >= HANG_ATTEMPTS, detail: `${hangClosed} of ${HANG_ATTEMPTS} closed` });
server.close();
server.closeAllConnections?.();

const ok = checks.every((c) => c.ok);
console.log(`adapters smoke on ${runtimeName()}`);
for (const c of checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail ? ` (${c.detail})` : ''}`);
console.log(ok ? 'PASS' : 'FAIL');
if (!ok) {
  if (globalThis.Deno !== undefined) globalThis.Deno.exit(1);
  globalThis.process.exitCode = 1;
}
