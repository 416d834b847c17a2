/**
 * `Pool<C>`: a resilient pool of named endpoints, with every optional feature.
 *
 * The user supplies the endpoints (each with a connection value the pool never inspects),
 * an operation per call and a `classify` for its failures; the pool supplies selection by
 * priority, per-endpoint circuit breakers, rate limits, retries by error class with
 * backoff, a whole-call deadline and per-attempt timeouts, a concurrency limit, health
 * probing, events and endpoint-labeled metrics. See ARCHITECTURE.md for one call, step by
 * step. The machinery is `PoolCore` (pool-core.ts); this class only hands it every
 * feature's code (features-all.ts).
 */
import { PoolCore } from './pool-core.js';
import { ALL_FEATURES } from './features-all.js';
import type { PoolOptions } from './options/options.js';

const EVERY_FEATURE = [ALL_FEATURES];

export class Pool<C> extends PoolCore<C> {
  constructor(options: PoolOptions<C>) {
    super(options, EVERY_FEATURE);
  }
}

export { PoolCore, defaultDeadlineMs, executeAs, executorAs, taggedExecutor, type EndpointStats, type EndpointStatus, type CloseOptions, type ProbeOptions } from './pool-core.js';
