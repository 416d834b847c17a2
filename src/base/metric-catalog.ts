/**
 * What each of the pool's metrics is, for sinks that must declare a metric before use
 * (prom-client, OpenTelemetry): its kind, help text and label names. Metrics not listed
 * here (added by a later version) are declared on first use from the labels they carry.
 */
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
