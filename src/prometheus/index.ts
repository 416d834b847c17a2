/**
 * `endpoint-pool/prometheus`: a `MetricsSink` that records into prom-client metrics on
 * your registry. prom-client is not imported: pass the module (`import * as client from
 * 'prom-client'`) and the registry.
 *
 * Every metric of the pool is declared up front (so a scrape shows them before the first
 * call), with the endpoint name as a label. The attempt duration becomes a histogram in
 * seconds, `endpoint_pool_attempt_duration_seconds`, as Prometheus conventions ask.
 * Two pools may share a registry: a metric already registered under the same name is
 * reused, and `labels` (say `{ pool: 'mainnet' }`) tells their series apart.
 */
import { PoolError, invalidOption } from '../base/errors.js';
import { stringRecord, withMethods } from '../options/validate.js';
import { METRIC_CATALOG, checkOwnLabels } from '../base/metric-catalog.js';
import { METRICS, mergeLabels, type Labels, type MetricsSink } from '../base/metrics.js';

interface MetricConfig<R> {
  name: string;
  help: string;
  labelNames: string[];
  registers: R[];
  buckets?: number[];
}

export interface PromCounterLike {
  inc(labels: Record<string, string>, value?: number): void;
}
export interface PromHistogramLike {
  observe(labels: Record<string, string>, value: number): void;
}

/** The parts of the prom-client module this sink uses. */
export interface PromClientLike<R> {
  readonly Counter: new (config: MetricConfig<R>) => PromCounterLike;
  readonly Histogram: new (config: MetricConfig<R>) => PromHistogramLike;
}

/** The parts of a prom-client `Registry` this sink uses. */
export interface PromRegistryLike {
  getSingleMetric(name: string): unknown;
}

export interface PrometheusSinkOptions<R extends PromRegistryLike> {
  /** The prom-client module. */
  readonly client: PromClientLike<R>;
  /** Where the metrics are registered. */
  readonly registry: R;
  /** Labels added to every series (they become label names too). @default none */
  readonly labels?: Labels;
  /** Histogram buckets, in seconds. @default [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] */
  readonly buckets?: readonly number[];
}

const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Pool metric name → Prometheus metric name: durations in seconds, and a name of your own
 * (`pool.report`) made one Prometheus accepts, as OpenTelemetry's Prometheus exporter does:
 * each character outside `[a-zA-Z0-9_:]` becomes `_`, and a leading digit gets a `_` before it
 * (`'rows parsed'` → `rows_parsed`, `'2xx'` → `_2xx`), as does a name that would otherwise
 * become one of the pool's own (`'endpoint-pool_attempts_total'`). Unchanged, prom-client
 * would refuse such a name on every record, and a pool ignores a sink that throws.
 */
export function prometheusName(name: string): string {
  if (name === METRICS.attemptDuration) return 'endpoint_pool_attempt_duration_seconds';
  const clean = name.replace(/[^\w:]/g, '_');
  // A leading digit, or a name of your own that would land among the pool's series once cleaned
  // (`'endpoint-pool_attempts_total'`): a `_` before it.
  return /^\d/.test(clean) || (clean !== name && clean.startsWith('endpoint_pool_')) ? `_${clean}` : clean;
}

export function prometheusSink<R extends PromRegistryLike>(options: PrometheusSinkOptions<R>): MetricsSink {
  checkOptions(options);
  const { client, registry, labels: constLabels = {}, buckets = DEFAULT_BUCKETS } = options;
  const constNames = Object.keys(constLabels);
  const counters = new Map<string, PromCounterLike>();
  const histograms = new Map<string, PromHistogramLike>();

  const declare = (name: string, kind: 'counter' | 'histogram', labelNames: readonly string[], help: string): void => {
    const promName = prometheusName(name);
    const existing = registry.getSingleMetric(promName) as (PromCounterLike & PromHistogramLike & { labelNames?: unknown }) | undefined;
    const config: MetricConfig<R> = { name: promName, help, labelNames: [...labelNames, ...constNames], registers: [registry] };
    // A metric another sink registered without one of our label names would throw on every
    // record, and a pool ignores a sink that throws: all of this pool's series would be lost.
    const known = existing?.labelNames;
    if (Array.isArray(known)) {
      const missing = config.labelNames.filter((l) => !known.includes(l));
      if (missing.length > 0) {
        throw new PoolError(
          'INVALID_OPTIONS',
          `labels: ${missing.map((l) => `'${l}'`).join(', ')} is not a label of ${promName}, which another sink already registered on this registry with ${(known as unknown[]).map((l) => `'${String(l)}'`).join(', ')}: pools sharing a registry need the same label names`,
          { field: 'labels' },
        );
      }
    }
    if (kind === 'counter') counters.set(name, existing ?? new client.Counter(config));
    else histograms.set(name, existing ?? new client.Histogram({ ...config, buckets: [...buckets] }));
  };
  for (const [name, info] of Object.entries(METRIC_CATALOG)) declare(name, info.kind, info.labelNames, info.help);

  const withConst = (labels: Labels): Record<string, string> => (constNames.length === 0 ? (labels as Record<string, string>) : mergeLabels(labels, constLabels));

  return {
    increment(name, labels, value = 1) {
      if (!counters.has(name)) declare(name, 'counter', Object.keys(labels), `endpoint-pool metric ${name}`);
      counters.get(name)!.inc(withConst(labels), value);
    },
    observe(name, labels, value) {
      if (!histograms.has(name)) declare(name, 'histogram', Object.keys(labels), `endpoint-pool metric ${name}`);
      histograms.get(name)!.observe(withConst(labels), name === METRICS.attemptDuration ? value / 1000 : value);
    },
  };
}

/** Wrong options fail here, naming the field, rather than as a TypeError on the first metric. */
function checkOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null) throw invalidOption('options', '{ client, registry, labels?, buckets? }', options);
  const o = options as Record<string, unknown>;
  withMethods('client', o['client'], ['Counter', 'Histogram'], 'the prom-client module itself (its Counter and Histogram classes)');
  withMethods('registry', o['registry'], ['getSingleMetric'], 'a prom-client Registry (client.register, or new client.Registry())');
  stringRecord('labels', o['labels'], 'an object of label names to string values');
  checkOwnLabels('labels', o['labels'] as object | undefined);
  // prom-client's own check throws a bare Error naming neither the option nor the rule.
  for (const k of Object.keys(o['labels'] ?? {})) if (!/^[a-zA-Z_]\w*$/.test(k) || k.startsWith('__')) throw invalidOption('labels', 'label names Prometheus accepts ([a-zA-Z_][a-zA-Z0-9_]*, not starting __)', k);
  const buckets = o['buckets'];
  if (buckets !== undefined && (!Array.isArray(buckets) || buckets.length === 0 || buckets.some((b, i) => typeof b !== 'number' || !Number.isFinite(b) || (i > 0 && b <= (buckets[i - 1] as number))))) {
    throw invalidOption('buckets', 'a non-empty array of finite numbers in increasing order (seconds)', buckets);
  }
}
