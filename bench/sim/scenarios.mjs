/**
 * The simulated situations. Each scenario says how long it runs, its offered load, how
 * to build its endpoints (with their scripts), which windows count as a fault for the
 * traffic-shift measurement, and the options every contender runs with. All contenders
 * get the same per-attempt timeout so that the comparison is about selection, retries
 * and breakers, not about one default timeout against another.
 */
import { Ceiling, Upstream } from './upstream.mjs';

const S = 1000;

/** Options for endpoint-pool in the three-endpoint scenarios: ordered failover. */
const FAILOVER_POOL = {
  strategy: 'ordered',
  attemptTimeoutMs: 1000,
  deadlineMs: 5000,
  maxAttempts: 3,
  backoff: { initialMs: 50, maxMs: 1000, jitter: 'full' },
  breaker: { threshold: 5, cooldownMs: 5000, maxCooldownMs: 20_000 },
};

/** Three endpoints; endpoint 0 (the primary) follows `script`. */
function threeEndpoints(script) {
  return ({ sched, rng, recorder }) =>
    ['primary', 'second', 'third'].map(
      (name, index) => new Upstream({ name, index, sched, rng: rng.fork(name), recorder, medianMs: 40, sigma: 0.5, transitMs: [1, 5], script: index === 0 ? script : undefined }),
    );
}

function failover(name, description, script, faults) {
  return {
    name,
    description,
    seed: hash(name),
    durationMs: 240 * S,
    ratePerSec: 500,
    deadlineMs: 5000,
    endpoints: threeEndpoints(script),
    faults,
    faultEndpoint: 0,
    faultEndpointName: 'primary',
    pool: { options: FAILOVER_POOL, next: { options: { strategy: 'health' } } },
    peers: { attemptTimeoutMs: 1000 },
  };
}

const inWindow = (t, from, to) => t >= from && t < to;

const outage = failover('outage', 'primary refuses connections from 60 s to 120 s, then recovers', (t) => (inWindow(t, 60 * S, 120 * S) ? DOWN : UP), [[60 * S, 120 * S]]);
const blackhole = failover('blackhole', 'primary accepts requests and never answers from 60 s to 120 s', (t) => (inWindow(t, 60 * S, 120 * S) ? HANG : UP), [[60 * S, 120 * S]]);
const slow = failover('slow', 'primary answers 10x slower from 60 s to 180 s', (t) => (inWindow(t, 60 * S, 180 * S) ? SLOW : UP), [[60 * S, 180 * S]]);
const flapWindows = Array.from({ length: 6 }, (_, k) => [(60 + 20 * k) * S, (70 + 20 * k) * S]);
const flapping = failover('flapping', 'primary alternates 10 s down / 10 s up from 60 s to 180 s', (t) => (flapWindows.some(([a, b]) => inWindow(t, a, b)) ? DOWN : UP), flapWindows);

const UP = Object.freeze({ mode: 'up' });
const DOWN = Object.freeze({ mode: 'down' });
const HANG = Object.freeze({ mode: 'hang' });
const SLOW = Object.freeze({ mode: 'up', slow: 10 });

/**
 * The API-key pool: 9 keys advertised at 3 calls/s. Hidden per key: a rejection rate
 * (other users of the account) that drifts between a "morning" and an "afternoon" value
 * in the middle of the run; keys 7-9 belong to one account and share a single ceiling.
 */
const KEYS = [
  { name: 'k1', morning: 0, afternoon: 0.5 },
  { name: 'k2', morning: 0, afternoon: 0 },
  { name: 'k3', morning: 0, afternoon: 0.152 },
  { name: 'k4', morning: 0.495, afternoon: 0.128 },
  { name: 'k5', morning: 0.445, afternoon: 1 },
  { name: 'k6', morning: 1, afternoon: 0.45 },
  { name: 'k7', morning: 0, afternoon: 0, group: 'acct' },
  { name: 'k8', morning: 0, afternoon: 0, group: 'acct' },
  { name: 'k9', morning: 0, afternoon: 0, group: 'acct' },
];
const ADVERTISED = 3;
const KEYS_DURATION = 20 * 60 * S;

/** The hidden rejection rate of `key` at `t`: morning value, a linear drift over the middle fifth, afternoon value. */
function rejectAt(key, t, durationMs) {
  const a = 0.4 * durationMs;
  const b = 0.6 * durationMs;
  if (t <= a) return key.morning;
  if (t >= b) return key.afternoon;
  return key.morning + ((t - a) / (b - a)) * (key.afternoon - key.morning);
}

/** Successful calls per second the keys can really serve at `t`: each account's ceiling times its acceptance. */
function capacityAt(t, durationMs) {
  let total = 0;
  const groups = new Set();
  for (const k of KEYS) {
    if (k.group !== undefined) {
      if (!groups.has(k.group)) groups.add(k.group);
      else continue;
    }
    total += ADVERTISED * (1 - rejectAt(k, t, durationMs));
  }
  return total;
}

/** The lowest capacity over the run, sampled every second: the load fraction is taken of this. */
export function keysCapacity(durationMs = KEYS_DURATION) {
  let min = Number.POSITIVE_INFINITY;
  for (let t = 0; t <= durationMs; t += S) min = Math.min(min, capacityAt(t, durationMs));
  return min;
}

function keys(loadFraction) {
  return {
    name: `keys-${Math.round(loadFraction * 100)}`,
    description: `9 API keys at ${Math.round(loadFraction * 100)} % of their true capacity (hidden, drifting acceptance; 3 keys share one ceiling)`,
    seed: hash(`keys-${loadFraction}`),
    durationMs: KEYS_DURATION,
    loadFraction,
    ratePerSec: (durationMs) => loadFraction * keysCapacity(durationMs),
    deadlineMs: 10_000,
    endpoints: ({ sched, rng, recorder, durationMs }) => {
      const shared = new Map();
      return KEYS.map((k, index) => {
        let ceiling;
        if (k.group === undefined) ceiling = new Ceiling(ADVERTISED, S);
        else {
          if (!shared.has(k.group)) shared.set(k.group, new Ceiling(ADVERTISED, S));
          ceiling = shared.get(k.group);
        }
        const state = { mode: 'up', reject: 0 };
        const script = (t) => {
          state.reject = rejectAt(k, t, durationMs);
          return state;
        };
        return new Upstream({ name: k.name, index, sched, rng: rng.fork(k.name), recorder, medianMs: 150, sigma: 0.4, transitMs: [20, 80], script, ceiling, retryAfterMs: 1000 });
      });
    },
    faults: [],
    pool: {
      options: {
        strategy: 'round-robin',
        attemptTimeoutMs: 5000,
        deadlineMs: 10_000,
        maxAttempts: 6,
        backoff: { initialMs: 100, maxMs: 2000, jitter: 'full' },
        // A rejection without Retry-After means "one slot too early": skip the key for one slot.
        rateLimitCooldownMs: Math.ceil(S / ADVERTISED),
      },
      // 10 % under the advertised rate, no bursts: the server's window is not aligned with ours.
      endpoint: { rateLimit: { perSecond: 0.9 * ADVERTISED, burst: 1 } },
      /** The same with paced limits, the account's keys grouped, and health-weighted selection. */
      // Paced at the advertised rate with the margin docs/quotas.md recommends here (60 ms: the spread of the 20-80 ms transit), the account's keys as one group, health-weighted.
      next: { options: { strategy: 'health', groups: [KEYS.filter((k) => k.group === 'acct').map((k) => k.name)] }, endpoint: { rateLimit: { perSecond: ADVERTISED, mode: 'paced', marginMs: 60 } } },
    },
    peers: { attemptTimeoutMs: 5000 },
  };
}

function hash(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

export const SCENARIOS = [keys(0.5), keys(0.9), outage, blackhole, slow, flapping];
