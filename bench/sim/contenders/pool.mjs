/**
 * endpoint-pool itself, on the simulation's FakeClock and seeded random source.
 *
 * `options` are the scenario's pool options; `endpointExtra(upstream)` adds per-endpoint
 * settings (a rate limit, a priority). Newer features (`strategy: 'health'`, paced rate
 * limits) are passed through untouched: when the built pool does not know them yet, its
 * constructor rejects them and the runner reports the variant as unavailable.
 */
import { Pool } from '../../../dist/index.js';
import { classify } from '../upstream.mjs';

export function poolContender(name, options, endpointExtra = () => ({})) {
  return {
    name,
    create({ clock, rng, upstreams }) {
      // Breaker openings, to tell which cooldown was in force when a fault ended.
      const openings = [];
      const pool = new Pool({
        ...options,
        endpoints: upstreams.map((u) => ({ name: u.name, conn: u, ...endpointExtra(u) })),
        classify,
        clock,
        random: rng.next,
        onEvent: (e) => {
          if (e.type === 'breaker-opened') openings.push({ t: clock.now(), endpoint: e.endpoint, cooldownMs: e.cooldownMs });
        },
      });
      const op = (u) => u.request();
      return { call: () => pool.execute(op), close: () => pool.close(), openings };
    },
  };
}
