#!/usr/bin/env node
/**
 * Soak: many calls through one pool on the FakeClock, with faults mixed in, against the
 * built package (`dist/`). Prints one JSON line with the figures.
 *
 *   node --expose-gc test/soak/soak.mjs [calls=1000000] [batch=200]
 *
 * Checked on the way: after each batch the clock has no pending timer and the pool no
 * active call; at the end the shared abort signal has no listener left, every
 * attempt-start had one terminal event, and the heap (after forced GC) grew by less than
 * the bound between the warm-up sample and the end.
 */
import { getEventListeners, setMaxListeners } from 'node:events';
import { Pool } from '../../dist/index.js';
import { FakeClock } from '../../dist/testing/index.js';

const CALLS = Number(process.argv[2] ?? 1_000_000);
const BATCH = Number(process.argv[3] ?? 200);
/** Heap growth allowed between the warm-up sample and the end, after forced GC. */
const HEAP_BOUND_BYTES = 4 * 1024 * 1024;

if (typeof globalThis.gc !== 'function') {
  console.error('run with node --expose-gc');
  process.exit(2);
}
const gc = globalThis.gc;

class Scripted extends Error {
  constructor(verdict) {
    super('scripted');
    this.verdict = verdict;
  }
}

// A deterministic PRNG, so a soak run is reproducible.
let seed = 0x9e3779b9;
const rand = () => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const clock = new FakeClock(0);
let starts = 0;
let terminals = 0;
let probes = 0;
const onEvent = (e) => {
  if (e.type === 'attempt-start') {
    starts++;
    if (e.probe) probes++;
  } else if (e.type === 'attempt-success' || e.type === 'attempt-failure' || e.type === 'attempt-cancelled') terminals++;
};
let metricCalls = 0;
const metrics = { increment: () => void metricCalls++, observe: () => void metricCalls++ };

const pool = new Pool({
  endpoints: [
    { name: 'primary', conn: { flaky: 0.15 }, rateLimit: { perSecond: 2000, burst: 200 }, maxInFlight: 64 },
    { name: 'secondary', conn: { flaky: 0.3 }, maxInFlight: 32 },
    { name: 'backup', conn: { flaky: 0.02 }, priority: 'low' },
  ],
  classify: (err) => (err instanceof Scripted ? err.verdict : 'permanent'),
  clock,
  random: rand,
  onEvent,
  metrics,
  maxConcurrentCalls: 128,
  attemptTimeoutMs: 50,
  deadlineMs: 400,
  maxAttempts: 4,
  backoff: { initialMs: 2, maxMs: 40, jitter: 'full' },
  breaker: { threshold: 5, cooldownMs: 30, maxCooldownMs: 200 },
  rateLimitCooldownMs: 10,
});

/** One attempt: mostly fine, sometimes every kind of fault. */
const op = (conn, ctx) => {
  const r = rand();
  if (r < conn.flaky * 0.5) return Promise.reject(new Scripted('transient'));
  if (r < conn.flaky * 0.7) return Promise.reject(new Scripted({ class: 'rate-limited', retryAfterMs: 5 }));
  if (r < conn.flaky * 0.75) return Promise.reject(new Scripted('permanent'));
  if (r < conn.flaky * 0.8) return Promise.reject(new Scripted('unsupported'));
  if (r < conn.flaky * 0.85) {
    // hangs until the attempt is cut (timeout, deadline or abort)
    return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
  }
  if (r < conn.flaky * 0.9) throw new Scripted('transient'); // synchronous throw
  if (r < conn.flaky) return new Promise((resolve) => clock.setTimeout(() => resolve(1), 5)); // slow, fine
  return Promise.resolve(1);
};

// One long-lived signal shared by most calls: any listener the pool forgets piles up on it.
const shared = new AbortController();
setMaxListeners(0, shared.signal);
const outcomes = Object.create(null);
const count = (k) => (outcomes[k] = (outcomes[k] ?? 0) + 1);
const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const t0 = performance.now();
let done = 0;
let baseline = 0;
const samples = [];
const WARMUP = Math.min(50_000, Math.floor(CALLS / 10));
const SAMPLE_EVERY = Math.max(BATCH, Math.floor(CALLS / 10));
const problems = [];
while (done < CALLS) {
  const n = Math.min(BATCH, CALLS - done);
  const running = [];
  for (let i = 0; i < n; i++) {
    const r = rand();
    let p;
    if (r < 0.01) {
      // a caller that gives up a little later
      const ac = new AbortController();
      clock.setTimeout(() => ac.abort(), Math.floor(rand() * 60));
      p = pool.execute(op, { signal: ac.signal });
    } else if (r < 0.5) p = pool.execute(op, { signal: shared.signal });
    else p = pool.execute(op);
    running.push(p.then(() => count('ok'), (e) => count(e.code ?? 'non-pool-error')));
  }
  await clock.runAll(1_000_000);
  await Promise.all(running);
  if (clock.pendingForegroundTimers !== 0) problems.push(`batch at ${done}: ${clock.pendingForegroundTimers} timers pending`);
  if (pool.activeCalls !== 0) problems.push(`batch at ${done}: ${pool.activeCalls} calls active`);
  done += n;
  if (baseline === 0 && done >= WARMUP) baseline = heap();
  if (done % SAMPLE_EVERY < BATCH) samples.push([done, heap()]);
  if (problems.length > 10) break;
}
const final = heap();
const listeners = getEventListeners(shared.signal, 'abort').length;
const inFlight = pool.stats().reduce((s, e) => s + e.inFlight, 0);
await pool.close();
const result = {
  calls: done,
  seconds: Math.round((performance.now() - t0) / 100) / 10,
  attempts: starts,
  terminals,
  probes,
  metricCalls,
  outcomes,
  heap: { baselineBytes: baseline, finalBytes: final, growthBytes: final - baseline, boundBytes: HEAP_BOUND_BYTES, samples },
  pendingTimers: clock.pendingForegroundTimers,
  abortListeners: listeners,
  inFlight,
  problems,
};
if (starts !== terminals) problems.push(`${starts} attempt-start but ${terminals} terminal events`);
if (listeners !== 0) problems.push(`${listeners} abort listeners left on the shared signal`);
if (inFlight !== 0) problems.push(`${inFlight} attempts still counted in flight`);
if (final - baseline > HEAP_BOUND_BYTES) problems.push(`heap grew by ${final - baseline} bytes (bound ${HEAP_BOUND_BYTES})`);
console.log(JSON.stringify(result));
process.exitCode = problems.length === 0 ? 0 : 1;
