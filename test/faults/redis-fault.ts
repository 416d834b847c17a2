/**
 * One Redis fault during a fleet run (generated5's and fleet6's rate checks), and the
 * busiest window of the upstream's arrival log.
 */
import IORedis from 'ioredis';
import type Redis from 'ioredis';
import { createRedisStore, fromIoredis, type RedisStore } from '../../src/redis/index.js';
import { ready, type RedisServer } from '../redis/redis-env.js';
import { serveFaults, type ServerStats } from './gen.js';

export type RedisFault = { readonly k: 'none' } | { readonly k: 'kill' | 'stop' | 'pause'; readonly atMs: number; readonly forMs: number };

/**
 * Schedules `f` on server `h` (killed and restarted empty, SIGSTOP then SIGCONT, or `CLIENT
 * PAUSE` through `client`). `end()` cancels what is not due yet and leaves the server up:
 * resumed, or restarted when it was killed and every caller finished before the restart was due.
 */
export function scheduleRedisFault(h: RedisServer, f: RedisFault, client: Redis): { end(): Promise<void> } {
  const timers: ReturnType<typeof setTimeout>[] = [];
  let killed = false;
  let back: Promise<void> | undefined;
  if (f.k === 'kill') {
    timers.push(setTimeout(() => ((killed = true), void h.kill()), f.atMs));
    timers.push(setTimeout(() => (back = h.restart()), f.atMs + f.forMs));
  }
  if (f.k === 'stop') {
    timers.push(setTimeout(() => process.kill(h.pid, 'SIGSTOP'), f.atMs));
    timers.push(setTimeout(() => process.kill(h.pid, 'SIGCONT'), f.atMs + f.forMs));
  }
  if (f.k === 'pause') timers.push(setTimeout(() => void client.call('CLIENT', 'PAUSE', String(f.forMs), 'ALL').catch(() => undefined), f.atMs));
  return {
    async end() {
      for (const t of timers) clearTimeout(t);
      if (f.k === 'stop') {
        try {
          process.kill(h.pid, 'SIGCONT');
        } catch {
          // gone
        }
      }
      if (killed && back === undefined) back = h.restart();
      await back;
    },
  };
}

/** The most arrivals in any window of `windowMs`, and when (from `t0`) that window ended. */
export function busiestWindow(arrivals: readonly number[], windowMs: number, t0: number): { worst: number; at: number } {
  let worst = 0;
  let at = 0;
  for (let i = 0, j = 0; i < arrivals.length; i++) {
    while (arrivals[j]! < arrivals[i]! - windowMs) j++;
    if (i - j + 1 > worst) (worst = i - j + 1), (at = arrivals[i]! - t0);
  }
  return { worst, at };
}

/** Closes the pools, ends the fault, disconnects the clients and the upstream; a pool timer left is a violation. */
export async function endFleetRun(
  pools: readonly { readonly pool: { close(): Promise<void> } }[],
  fault: { end(): Promise<void> },
  clients: readonly Redis[],
  up: { close(): Promise<void> },
  pendingTimers: () => number,
  violations: string[],
): Promise<void> {
  await Promise.all(pools.map((p) => p.pool.close()));
  await fault.end();
  for (const c of clients) c.disconnect();
  await up.close();
  if (pendingTimers() > 0) violations.push(`${pendingTimers()} pool timer(s) pending after close()`);
}

/**
 * The busiest window of one second less `guardMs` (the store counts a start when it admits
 * it; the upstream logs its arrival a request's latency later: the guard absorbs that
 * jitter), checked against `bound` when the window is over half a second.
 */
export function checkRate(arrivals: readonly number[], t0: number, guardMs: number, bound: number, what: string, violations: string[]): { worst: number; judged: boolean } {
  const windowMs = 1000 - guardMs;
  const { worst, at } = busiestWindow(arrivals, windowMs, t0);
  const judged = windowMs > 500;
  if (judged && worst > bound) violations.push(`${worst} arrivals in ${windowMs} ms ending at ${Math.round(at)} ms, bound ${bound} ${what}`);
  return { worst, judged };
}

/** An upstream that answers every request 200 and logs each arrival's time. */
export async function loggingUpstream(): Promise<{ arrivals: number[]; up: ServerStats }> {
  const arrivals: number[] = [];
  const up = await serveFaults([{ k: 'ok', f: 0 }], { closeConnections: false, unitMs: 1, rpc: false, answer: () => (arrivals.push(performance.now()), { status: 200, body: '{"ok":true}' }) });
  return { arrivals, up };
}

/** A connected client on `h` (errors silenced: the faults make them) and a store on it under `prefix`; `hold: 'none'` sets `degradedHoldMs: 0`. */
export async function fleetStore(h: RedisServer, prefix: string, hold: 'none' | 'default'): Promise<{ client: Redis; store: RedisStore }> {
  const client = await ready(new IORedis({ host: '127.0.0.1', port: h.port, enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 100 }));
  client.on('error', () => undefined);
  return { client, store: createRedisStore(fromIoredis(client), { prefix, ...(hold === 'none' ? { degradedHoldMs: 0 } : {}) }) };
}
