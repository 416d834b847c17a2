/**
 * What each of the pool's metrics is, for sinks that must declare a metric before use
 * (prom-client, OpenTelemetry): its kind, help text and label names. Metrics not listed
 * here (added by a later version) are declared on first use from the labels they carry.
 */
import { invalidOption } from './errors.js';
import { METRICS } from './metrics.js';

export interface MetricInfo {
  readonly kind: 'counter' | 'histogram';
  readonly help: string;
  readonly labelNames: readonly string[];
}

export const METRIC_CATALOG: Readonly<Record<string, MetricInfo>> = {
  [METRICS.attempts]: { kind: 'counter', help: 'Attempts started, per endpoint.', labelNames: ['endpoint'] },
  [METRICS.failures]: { kind: 'counter', help: 'Failed attempts, per endpoint and error class.', labelNames: ['endpoint', 'class'] },
  [METRICS.breakerOpened]: { kind: 'counter', help: 'Circuit breaker openings, per endpoint.', labelNames: ['endpoint'] },
  [METRICS.rateLimitWaits]: { kind: 'counter', help: 'Calls that waited for a rate-limited endpoint.', labelNames: ['endpoint'] },
  [METRICS.exhausted]: { kind: 'counter', help: 'Failed calls, per last endpoint and error code.', labelNames: ['endpoint', 'code'] },
  [METRICS.probeFailures]: { kind: 'counter', help: 'Failed health probes, per endpoint.', labelNames: ['endpoint'] },
  [METRICS.attemptDuration]: { kind: 'histogram', help: 'Attempt duration, per endpoint.', labelNames: ['endpoint'] },
};

/** The label names the pool's own series carry: a sink's constant labels may not reuse them. */
export const POOL_LABEL_NAMES: readonly string[] = [...new Set(Object.values(METRIC_CATALOG).flatMap((m) => m.labelNames))];

/** Throws `INVALID_OPTIONS` on `field` if a constant label of a sink would overwrite one of the pool's. */
export function checkOwnLabels(field: string, labels: object | undefined): void {
  for (const k of Object.keys(labels ?? {})) if (POOL_LABEL_NAMES.includes(k)) throw invalidOption(field, `names other than the pool's own labels (${POOL_LABEL_NAMES.join(', ')})`, k);
}
