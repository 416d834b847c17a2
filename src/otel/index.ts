/**
 * `endpoint-pool/otel`: a `MetricsSink` over an OpenTelemetry `Meter`. Nothing from
 * `@opentelemetry/api` is imported: pass `metrics.getMeter('my-service')`.
 *
 * Counters become OTel counters with the same names and the labels as attributes; the
 * attempt duration becomes a histogram in milliseconds (unit `ms`). Instruments are
 * created up front, once per sink.
 */
import { invalidOption } from '../base/errors.js';
import { stringRecord, withMethods } from '../options/validate.js';
import { METRIC_CATALOG, checkOwnLabels } from '../base/metric-catalog.js';
import { mergeLabels, type Labels, type MetricsSink } from '../base/metrics.js';

type Attributes = Record<string, string>;

export interface OtelCounterLike {
  add(value: number, attributes?: Attributes): void;
}
export interface OtelHistogramLike {
  record(value: number, attributes?: Attributes): void;
}
interface InstrumentOptions {
  description?: string;
  unit?: string;
}

/** The parts of an OpenTelemetry `Meter` this sink uses. */
export interface MeterLike {
  createCounter(name: string, options?: InstrumentOptions): OtelCounterLike;
  createHistogram(name: string, options?: InstrumentOptions): OtelHistogramLike;
}

export interface OtelSinkOptions {
  /** Attributes added to every measurement. @default none */
  readonly attributes?: Labels;
}

export function otelSink(meter: MeterLike, options: OtelSinkOptions = {}): MetricsSink {
  // Wrong arguments fail here, naming the field, rather than as a TypeError on the first metric.
  withMethods('meter', meter, ['createCounter', 'createHistogram'], "an OpenTelemetry Meter (metrics.getMeter('endpoint-pool'))");
  if (typeof options !== 'object' || options === null) throw invalidOption('options', '{ attributes? }', options);
  const extra = options.attributes;
  stringRecord('attributes', extra, 'an object of attribute names to string values');
  checkOwnLabels('attributes', extra);
  const counters = new Map<string, OtelCounterLike>();
  const histograms = new Map<string, OtelHistogramLike>();
  for (const [name, info] of Object.entries(METRIC_CATALOG)) {
    if (info.kind === 'counter') counters.set(name, meter.createCounter(name, { description: info.help }));
    else histograms.set(name, meter.createHistogram(name, { description: info.help, unit: 'ms' }));
  }
  const attrs = (labels: Labels): Attributes => (extra === undefined ? (labels as Attributes) : mergeLabels(labels, extra));
  return {
    increment(name, labels, value = 1) {
      let c = counters.get(name);
      if (c === undefined) counters.set(name, (c = meter.createCounter(name)));
      c.add(value, attrs(labels));
    },
    observe(name, labels, value) {
      let h = histograms.get(name);
      if (h === undefined) histograms.set(name, (h = meter.createHistogram(name)));
      h.record(value, attrs(labels));
    },
  };
}
