#!/usr/bin/env node
/**
 * The core's smoke on a server-side runtime: `node|bun smoke.mjs`, `deno run --allow-read smoke.mjs`.
 * Prints one line per check and a verdict; exits 1 if any check failed.
 */
import { formatSmoke, runSmoke } from './smoke-core.mjs';

function runtimeName() {
  if (globalThis.Deno !== undefined) return `Deno ${globalThis.Deno.version.deno}`;
  if (globalThis.Bun !== undefined) return `Bun ${globalThis.Bun.version}`;
  return `Node ${globalThis.process.version.slice(1)}`;
}

const outcome = await runSmoke();
console.log(formatSmoke(runtimeName(), outcome));
if (!outcome.ok) {
  if (globalThis.Deno !== undefined) globalThis.Deno.exit(1);
  globalThis.process.exitCode = 1;
}
