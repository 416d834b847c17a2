/**
 * The OpenTelemetry sink end to end through the SDK users export from: a `MeterProvider`
 * from `@opentelemetry/sdk-metrics` with a `PeriodicExportingMetricReader` flushed by
 * hand into an `InMemoryMetricExporter`. A scenario that makes the pool emit every metric
 * in its catalog runs twice, once into `RecordingMetrics` and once into the OTel sink;
 * what the exporter receives must match what the pool reported, name by name, attribute
 * set by attribute set, plus the instrument kinds, descriptions and units.
 */
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, test } from 'vitest';
import { METRICS, Pool, type MetricsSink } from '../src/index.js';
import { METRIC_CATALOG } from '../src/base/metric-catalog.js';
import { otelSink } from '../src/otel/index.js';
import { FakeClock, RecordingMetrics } from '../src/testing/index.js';

const classify = (e: unknown) => ((e as Error).message === 'down' ? 'transient' : 'permanent') as 'transient' | 'permanent';

/**
 * Two calls at once: a fails both (its breaker, threshold 2, opens), b answers after
 * 30 ms but allows one call per second (the second call waits for it), a call fails permanently on b, and a
 * probe fails everywhere. Deterministic: fake clock, fixed random.
 */
async function scenario(metrics: MetricsSink): Promise<void> {
  const clock = new FakeClock();
  const pool = new Pool<string>({
    endpoints: [
      { name: 'a', conn: 'a' },
      { name: 'b', conn: 'b', rateLimit: { perSecond: 1, burst: 1 } },
    ],
    classify,
    clock,
    random: () => 0.5,
    breaker: { threshold: 2, cooldownMs: 60_000 },
    metrics,
  });
  const op = async (c: string): Promise<string> => {
    if (c === 'a') throw new Error('down');
    await new Promise<void>((res) => clock.setTimeout(res, 30));
    return c;
  };
  // Both calls fail on a; the first takes b's only token, the second waits a second for the next.
  const calls = [pool.execute(op), pool.execute(op)];
  await clock.advance(2_000);
  expect(await Promise.all(calls)).toEqual(['b', 'b']);
  const failing = pool.execute(async () => Promise.reject(new Error('bad request')), { retry: 'none' }).catch((e: unknown) => e);
  await clock.advance(2_000);
  await failing;
  await pool.probeHealth(async () => Promise.reject(new Error('down')));
  await pool.close();
}

type Recorded = { counters: Map<string, number>; histograms: Map<string, number[]> };
const key = (name: string, attrs: Record<string, unknown>) => `${name} ${JSON.stringify(Object.fromEntries(Object.entries(attrs).sort(([x], [y]) => x.localeCompare(y))))}`;

/** What the pool reported, summed per metric and attribute set (with the sink's extra attributes). */
function expected(recording: RecordingMetrics, extra: Record<string, string>): Recorded {
  const counters = new Map<string, number>();
  const histograms = new Map<string, number[]>();
  for (const r of recording.records) {
    const k = key(r.name, { ...r.labels, ...extra });
    if (r.kind === 'increment') counters.set(k, (counters.get(k) ?? 0) + r.value);
    else histograms.set(k, [...(histograms.get(k) ?? []), r.value]);
  }
  return { counters, histograms };
}

const providers: MeterProvider[] = [];
afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.shutdown()));
});

function sdk(temporality = AggregationTemporality.CUMULATIVE) {
  const exporter = new InMemoryMetricExporter(temporality);
  // The interval is never reached: the test flushes by hand.
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  providers.push(provider);
  /** Flushes and returns the metrics of the last export, by name. */
  const collect = async (): Promise<Map<string, MetricData>> => {
    await reader.forceFlush();
    const exports = exporter.getMetrics();
    const last = exports.at(-1);
    expect(last?.scopeMetrics.map((s) => s.scope.name)).toEqual(['endpoint-pool-test']);
    return new Map(last!.scopeMetrics[0]!.metrics.map((m) => [m.descriptor.name, m]));
  };
  return { provider, exporter, collect, meter: provider.getMeter('endpoint-pool-test', '1.2.3') };
}

describe('otelSink through @opentelemetry/sdk-metrics', () => {
  test('every metric the pool reports reaches the exporter with its kind, description, unit, attributes and values', async () => {
    const recording = new RecordingMetrics();
    await scenario(recording);
    const want = expected(recording, { pool: 'p' });
    // The scenario covers the whole catalog.
    expect(new Set(recording.records.map((r) => r.name))).toEqual(new Set(Object.keys(METRIC_CATALOG)));

    const { meter, collect } = sdk();
    await scenario(otelSink(meter, { attributes: { pool: 'p' } }));
    const exported = await collect();
    expect([...exported.keys()].sort()).toEqual(Object.keys(METRIC_CATALOG).sort());

    const gotCounters = new Map<string, number>();
    const gotHistograms = new Map<string, Histogram>();
    for (const [name, m] of exported) {
      const info = METRIC_CATALOG[name]!;
      expect(m.descriptor.description, name).toBe(info.help);
      if (info.kind === 'counter') {
        // A monotonic sum is what an OTel Counter exports (an UpDownCounter's is not monotonic).
        expect(m.dataPointType, name).toBe(DataPointType.SUM);
        expect(m.dataPointType === DataPointType.SUM && m.isMonotonic, name).toBe(true);
        for (const p of m.dataPoints) gotCounters.set(key(name, p.attributes), p.value as number);
      } else {
        expect(m.descriptor.unit, name).toBe('ms');
        expect(m.dataPointType, name).toBe(DataPointType.HISTOGRAM);
        for (const p of m.dataPoints) gotHistograms.set(key(name, p.attributes), p.value as Histogram);
      }
      expect(m.aggregationTemporality).toBe(AggregationTemporality.CUMULATIVE);
    }
    expect(gotCounters).toEqual(want.counters);
    expect([...gotHistograms.keys()].sort()).toEqual([...want.histograms.keys()].sort());
    for (const [k, values] of want.histograms) {
      const h = gotHistograms.get(k)!;
      expect(h.count, k).toBe(values.length);
      expect(h.sum, k).toBe(values.reduce((s, v) => s + v, 0));
      expect(h.min, k).toBe(Math.min(...values));
      expect(h.max, k).toBe(Math.max(...values));
      // Each observation lands in the bucket whose upper bound is the first boundary >= it.
      const counts = h.buckets.boundaries.map(() => 0).concat(0);
      for (const v of values) {
        const i = h.buckets.boundaries.findIndex((b) => v <= b);
        counts[i < 0 ? counts.length - 1 : i]! += 1;
      }
      expect(h.buckets.counts, k).toEqual(counts);
    }

    // Pinned figures, so that a scenario that quietly stops emitting something is noticed.
    const c = (name: string, attrs: Record<string, string>) => gotCounters.get(key(name, { ...attrs, pool: 'p' }));
    expect(c(METRICS.attempts, { endpoint: 'a' })).toBe(2);
    expect(c(METRICS.failures, { endpoint: 'a', class: 'transient' })).toBe(2);
    expect(c(METRICS.breakerOpened, { endpoint: 'a' })).toBe(1);
    expect(c(METRICS.rateLimitWaits, { endpoint: 'b' })).toBeGreaterThanOrEqual(1);
    expect(c(METRICS.exhausted, { endpoint: 'b', code: 'PERMANENT' })).toBe(1);
    expect(c(METRICS.probeFailures, { endpoint: 'b' })).toBe(1);
    const b = gotHistograms.get(key(METRICS.attemptDuration, { endpoint: 'b', pool: 'p' }))!;
    expect(b.min).toBe(0);
    expect(b.max).toBe(30);
  });

  test('a cumulative reader keeps adding across collections; a delta reader reports only what is new', async () => {
    for (const temporality of [AggregationTemporality.CUMULATIVE, AggregationTemporality.DELTA]) {
      const { meter, collect } = sdk(temporality);
      const clock = new FakeClock();
      const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify, clock, metrics: otelSink(meter) });
      await pool.execute(async (c) => c);
      const first = (await collect()).get(METRICS.attempts)!;
      expect(first.dataPoints.map((p) => [p.attributes, p.value])).toEqual([[{ endpoint: 'a' }, 1]]);
      await pool.execute(async (c) => c);
      await pool.execute(async (c) => c);
      const second = (await collect()).get(METRICS.attempts)!;
      expect(second.aggregationTemporality).toBe(temporality);
      expect(second.dataPoints.map((p) => p.value)).toEqual([temporality === AggregationTemporality.CUMULATIVE ? 3 : 2]);
      await pool.close();
    }
  });

  test('a metric missing from the catalog is created on first use and exported under its own name', async () => {
    const { meter, collect } = sdk();
    const sink = otelSink(meter, { attributes: { pool: 'p' } });
    sink.increment('endpoint_pool_future_total', { endpoint: 'a' }, 3);
    sink.observe?.('endpoint_pool_future_ms', { endpoint: 'a' }, 12);
    const exported = await collect();
    const counter = exported.get('endpoint_pool_future_total')!;
    expect(counter.dataPointType === DataPointType.SUM && counter.isMonotonic).toBe(true);
    expect(counter.dataPoints.map((p) => [p.attributes, p.value])).toEqual([[{ endpoint: 'a', pool: 'p' }, 3]]);
    const histogram = exported.get('endpoint_pool_future_ms')!;
    expect(histogram.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(histogram.dataPoints.map((p) => [p.attributes, (p.value as Histogram).sum])).toEqual([[{ endpoint: 'a', pool: 'p' }, 12]]);
  });
});
