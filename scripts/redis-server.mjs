#!/usr/bin/env node
/**
 * A throwaway redis-server for the Redis tests and the benchmark.
 *
 * Starts `redis-server` as a direct child, on 127.0.0.1 only, on a free port, with no
 * persistence (`--save '' --appendonly no`), and stops it by its own PID. Nothing is
 * written outside a temporary directory, and the server dies with its parent.
 *
 * As a module: `const r = await startRedis(); … r.kill(); await r.restart(); await r.stop()`.
 * As a script (for manual runs; the tests and the benchmark use the module API):
 * `node scripts/redis-server.mjs start [port]` starts a detached server, prints `port pid`
 * and writes `pid port` to `.redis-test.pid`; `node scripts/redis-server.mjs stop` stops that PID.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The server binary: `redis-server`, or another one that speaks the same protocol and flags
 * (`REDIS_SERVER_BIN=valkey-server npm test` runs every Redis test against Valkey).
 */
const BIN = process.env.REDIS_SERVER_BIN || 'redis-server';

/** True when a `redis-server` binary is on the PATH. */
export function redisServerAvailable() {
  const r = spawnSync(BIN, ['--version'], { stdio: 'ignore' });
  return r.status === 0;
}

/** A port the OS says is free now (a small race is possible; start retries once). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function waitForPort(port, timeoutMs) {
  const until = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const sock = connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.write('PING\r\n');
        sock.once('data', (d) => {
          sock.destroy();
          if (String(d).startsWith('+PONG')) resolve();
          else retry();
        });
      });
      sock.once('error', () => {
        sock.destroy();
        retry();
      });
    };
    const retry = () => (Date.now() > until ? reject(new Error(`redis-server did not answer on port ${port}`)) : setTimeout(attempt, 25));
    attempt();
  });
}

/**
 * Starts a redis-server. `port`: a fixed port (for a restart), else a free one.
 * Returns { port, pid, kill(signal), restart(), stop() }.
 */
export async function startRedis(options = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'endpoint-pool-redis-'));
  let port = options.port ?? (await freePort());
  let child;
  /** `fresh`: on a port just chosen as free (not a restart on the server's own port). */
  const launch = async (fresh = false) => {
    child = spawn(BIN, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--protected-mode', 'yes', '--loglevel', 'warning'], {
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.exited = exited;
    await Promise.race([waitForPort(port, 5000), exited.then(() => Promise.reject(new Error(`redis-server exited at start (port ${port})`)))]);
    // The port was free when chosen, but another process (a test file starting its own server
    // beside this one) may have taken it since: then this server exits, and the answer came from
    // the other one. Still running a moment later, it is ours. (Not on a restart: a test that
    // restarts Redis times what follows from the moment it answers.)
    if (!fresh) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`redis-server exited at start (port ${port})`);
  };
  // A free port chosen by this process can be taken before the server binds it (CI once saw
  // "exited at start" with several test processes starting servers): another port, up to 5 times.
  for (let tries = 1; ; tries++) {
    try {
      await launch(options.port === undefined);
      break;
    } catch (error) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await child.exited;
      }
      if (options.port !== undefined || tries >= 5) throw error;
      port = await freePort();
    }
  }
  const handle = {
    get port() {
      return port;
    },
    get pid() {
      return child.pid;
    },
    /** Kills the server abruptly (SIGKILL by default) and waits for it to be gone. */
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        await child.exited;
      }
    },
    /** Starts it again on the same port, empty. */
    async restart() {
      await handle.kill();
      await launch();
    },
    async stop() {
      await handle.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return handle;
}

const PID_FILE = '.redis-test.pid';

if (import.meta.url === `file://${process.argv[1]}`) {
  const cmd = process.argv[2];
  if (cmd === 'start') {
    if (!redisServerAvailable()) {
      console.error('redis-server is not installed (apt-get install -y redis-server)');
      process.exit(1);
    }
    const port = Number(process.argv[3] ?? 0) || (await freePort());
    const child = spawn(BIN, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], { stdio: 'ignore', detached: true });
    child.unref();
    await waitForPort(port, 5000);
    writeFileSync(PID_FILE, `${child.pid} ${port}\n`);
    console.log(`${port} ${child.pid}`);
  } else if (cmd === 'stop') {
    let text;
    try {
      text = readFileSync(PID_FILE, 'utf8');
    } catch {
      process.exit(0);
    }
    const pid = Number(text.split(' ')[0]);
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
    rmSync(PID_FILE, { force: true });
  } else {
    console.error('usage: node scripts/redis-server.mjs start [port] | stop');
    process.exit(2);
  }
}
