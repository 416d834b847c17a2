#!/usr/bin/env node
/**
 * `npm run test:loaded`: the whole test suite beside a child process that keeps every
 * core busy (one spinning worker thread per CPU), as a CI runner or a laptop under load
 * would. Real-time tests must pass here too: their margins come from measured timer lag
 * (test/helpers/lag.ts), never from fixed milliseconds.
 *
 *   node scripts/test-loaded.mjs [vitest args...]
 */
import { spawn } from 'node:child_process';
import os from 'node:os';

const cores = Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
const burner = spawn(
  process.execPath,
  [
    '-e',
    `const { Worker } = require('node:worker_threads');
     for (let i = 0; i < ${cores}; i++) new Worker('for (;;) {}', { eval: true });
     setInterval(() => {}, 1 << 30);`,
  ],
  { stdio: 'ignore' },
);
console.log(`test:loaded: ${cores} spinning thread(s) in pid ${burner.pid}`);

const stop = () => {
  if (burner.exitCode === null) burner.kill('SIGKILL');
};
process.on('exit', stop);
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

const vitest = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
vitest.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal === null ? 1 : 128));
});
