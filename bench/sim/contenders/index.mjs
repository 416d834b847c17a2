/**
 * The simulation's contenders for one scenario: endpoint-pool as configured today, the
 * same with the features another change is adding (when the built pool accepts them),
 * and the three peers.
 */
import { Pool } from '../../../dist/index.js';
import { cockatielContender } from './cockatiel-like.mjs';
import { poolContender } from './pool.mjs';
import { roundRobinContender } from './round-robin.mjs';
import { viemFallbackContender } from './viem-fallback.mjs';

/** Extra pool options and endpoint settings from the environment, for experiments. */
function fromEnv(name) {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? {} : JSON.parse(raw);
}

export function contendersFor(scenario) {
  const p = scenario.pool;
  const options = { ...p.options, ...fromEnv('BENCH_POOL_OPTIONS') };
  const endpoint = { ...p.endpoint, ...fromEnv('BENCH_POOL_ENDPOINT') };
  const list = [poolContender('endpoint-pool', options, () => endpoint)];
  if (p.next !== undefined) {
    const nextOptions = { ...options, ...p.next.options };
    const nextEndpoint = { ...endpoint, ...p.next.endpoint };
    if (accepts(nextOptions, nextEndpoint)) list.push(poolContender('endpoint-pool-next', nextOptions, () => nextEndpoint));
  }
  const t = scenario.peers.attemptTimeoutMs;
  list.push(roundRobinContender({ tries: 3, attemptTimeoutMs: t }));
  list.push(viemFallbackContender({ timeoutMs: t }));
  list.push(cockatielContender({ timeoutMs: t }));
  return list;
}

/** Whether the built pool accepts these options (newer features are rejected as invalid until they land). */
export function accepts(options, endpoint) {
  try {
    // Groups name the scenario's endpoints, which the one-endpoint probe does not have.
    const { groups: _groups, ...rest } = options;
    const pool = new Pool({ ...rest, endpoints: [{ name: 'probe', conn: 0, ...endpoint }], classify: () => 'transient' });
    void pool.close();
    return true;
  } catch {
    return false;
  }
}
