/**
 * The two sinks fed what users name, not what we name: generated endpoint names (quotes,
 * backslashes, newlines, accents, emoji), counter names of their own for `pool.report`
 * (spaces, dots, dashes, slashes, colons, a leading digit), values (0, fractions, large,
 * negative, non-finite) and constant labels / attributes (good names, names Prometheus
 * refuses, the pool's own `endpoint`, `class` and `code`), each into the real prom-client
 * registry and the real OpenTelemetry SDK.
 *
 * Either the input is refused at once with `INVALID_OPTIONS` naming the option, or every
 * value reported reaches the scrape / the export, summed under the name the sink documents
 * (`prometheusName`), with its endpoint's own name and the constant labels. Before the
 * thirty-eighth session a negative value, a name Prometheus refuses and a constant label
 * named `endpoint` were each lost without a word (the last relabeled every series).
 *
 * Seeded: `FC_SEED` sets the first seed, `FC_SINK_RUNS` the runs (default 60).
 */
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import * as promClient from 'prom-client';
import { describe, expect, test } from 'vitest';
import { Pool, isPoolError, type MetricsSink } from '../src/index.js';
import { otelSink } from '../src/otel/index.js';
import { prometheusName, prometheusSink } from '../src/prometheus/index.js';
import { seeded } from './helpers/prng.js';

const RUNS = Number(process.env['FC_SINK_RUNS'] ?? 60);
const FIRST_SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 2026120638;

type Rnd = () => number;
const pick = <T,>(r: Rnd, a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
const word = (r: Rnd, chars: string, min: number, max: number): string => {
  let s = '';
  const n = min + Math.floor(r() * (max - min + 1));
  for (let k = 0; k < n; k++) s += pick(r, [...chars]);
  return s;
};

const NAME_CHARS = 'abcxyz_019 .-/:é';
const ENDPOINT_CHARS = 'ab"\\\n ,={}é🙂';
const LABEL_CHARS = 'abz_09-.';

interface Case {
  endpoints: string[];
  labels: Record<string, string>;
  reports: { ep: number; name: string; value: number }[];
}

function draw(r: Rnd): Case {
  const endpoints = [...new Set(Array.from({ length: 1 + Math.floor(r() * 3) }, () => word(r, ENDPOINT_CHARS, 1, 6)))];
  const labels: Record<string, string> = {};
  const nLabels = Math.floor(r() * 3);
  for (let k = 0; k < nLabels; k++) {
    const name = r() < 0.15 ? pick(r, ['endpoint', 'class', 'code', '__x']) : word(r, LABEL_CHARS, 1, 5);
    labels[name] = word(r, ENDPOINT_CHARS, 0, 4);
  }
  const reports = Array.from({ length: 1 + Math.floor(r() * 6) }, () => ({
    ep: Math.floor(r() * endpoints.length),
    name: r() < 0.08 ? pick(r, ['endpoint_pool_attempts_total', '', 'endpoint-pool_attempts_total', 'endpoint pool failures total']) : word(r, NAME_CHARS, 1, 8),
    value: r() < 0.1 ? pick(r, [-1, -0.5, Number.NaN, Number.POSITIVE_INFINITY]) : pick(r, [0, 1, 2.5, 1e6, 0.001]),
  }));
  return { endpoints, labels, reports };
}

const labelsOk = (labels: Record<string, string>): boolean => Object.keys(labels).every((k) => /^[a-zA-Z_]\w*$/.test(k) && !k.startsWith('__') && !['endpoint', 'class', 'code'].includes(k));
const reportOk = (x: { name: string; value: number }): boolean => x.name.length > 0 && !x.name.startsWith('endpoint_pool_') && x.value >= 0 && x.value < Infinity;
const k2 = (name: string, labels: Record<string, unknown>): string => `${name} ${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))}`;

/** Builds the pool on `sink`, reports every case's values; returns what should be recorded (name and labels → sum). */
function feed(c: Case, sink: MetricsSink, sinkName: (n: string) => string, constLabels: Record<string, string>): Map<string, number> {
  const pool = new Pool<string>({ endpoints: c.endpoints.map((name) => ({ name, conn: 'x' })), classify: () => 'transient', metrics: sink });
  const want = new Map<string, number>();
  for (const x of c.reports) {
    const endpoint = c.endpoints[x.ep]!;
    try {
      pool.report(endpoint, x.name, x.value);
      expect(reportOk(x), `report(${JSON.stringify(x)}) was taken`).toBe(true);
      const k = k2(sinkName(x.name), { ...constLabels, endpoint });
      want.set(k, (want.get(k) ?? 0) + x.value);
    } catch (error) {
      expect(reportOk(x), `report(${JSON.stringify(x)}) threw ${String(error)}`).toBe(false);
      expect(isPoolError(error) && error.code === 'INVALID_OPTIONS' && (error.field === 'name' || error.field === 'value')).toBe(true);
    }
  }
  return want;
}

describe('metrics sinks on generated names, values and labels', () => {
  test(`prometheusSink into a prom-client registry (${RUNS} runs)`, async () => {
    let taken = 0;
    for (let run = 0; run < RUNS; run++) {
      const seed = FIRST_SEED + run;
      const c = draw(seeded(seed));
      const registry = new promClient.Registry();
      let sink: MetricsSink;
      try {
        sink = prometheusSink({ client: promClient, registry, labels: c.labels });
      } catch (error) {
        expect(labelsOk(c.labels), `seed ${seed}: labels ${JSON.stringify(c.labels)} refused: ${String(error)}`).toBe(false);
        expect(isPoolError(error) && error.code === 'INVALID_OPTIONS' && error.field === 'labels', `seed ${seed}: ${String(error)}`).toBe(true);
        continue;
      }
      expect(labelsOk(c.labels), `seed ${seed}: labels ${JSON.stringify(c.labels)} taken`).toBe(true);
      const want = feed(c, sink, prometheusName, c.labels);
      const got = new Map<string, number>();
      for (const m of await registry.getMetricsAsJSON()) {
        if (m.name.startsWith('endpoint_pool_')) continue;
        for (const v of m.values) got.set(k2(m.name, v.labels), ((got.get(k2(m.name, v.labels)) ?? 0) + v.value));
      }
      expect(got, `seed ${seed}: ${JSON.stringify(c)}`).toEqual(want);
      // The pool's own series exist and carry nothing but the endpoint's name and the constant labels.
      const attempts = (await registry.getSingleMetricAsString('endpoint_pool_attempts_total')).trim();
      expect(attempts.startsWith('# HELP'), `seed ${seed}`).toBe(true);
      taken += want.size;
    }
    expect(taken).toBeGreaterThan(RUNS / 2);
  });

  test(`otelSink into the OpenTelemetry SDK (${RUNS} runs)`, async () => {
    let taken = 0;
    for (let run = 0; run < RUNS; run++) {
      const seed = FIRST_SEED + run;
      const c = draw(seeded(seed));
      const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
      const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
      const provider = new MeterProvider({ readers: [reader] });
      const meter = provider.getMeter('generated');
      const reserved = Object.keys(c.labels).some((k) => ['endpoint', 'class', 'code'].includes(k));
      let sink: MetricsSink;
      try {
        sink = otelSink(meter, { attributes: c.labels });
      } catch (error) {
        expect(reserved, `seed ${seed}: attributes ${JSON.stringify(c.labels)} refused: ${String(error)}`).toBe(true);
        expect(isPoolError(error) && error.code === 'INVALID_OPTIONS' && error.field === 'attributes', `seed ${seed}: ${String(error)}`).toBe(true);
        await provider.shutdown();
        continue;
      }
      expect(reserved, `seed ${seed}: attributes ${JSON.stringify(c.labels)} taken`).toBe(false);
      const want = feed(c, sink, (n) => n, c.labels);
      await reader.forceFlush();
      const got = new Map<string, number>();
      for (const rm of exporter.getMetrics().slice(-1)) {
        for (const sm of rm.scopeMetrics) {
          for (const m of sm.metrics) {
            if (m.descriptor.name.startsWith('endpoint_pool_')) continue;
            for (const p of m.dataPoints) got.set(k2(m.descriptor.name, p.attributes), (got.get(k2(m.descriptor.name, p.attributes)) ?? 0) + (p.value as number));
          }
        }
      }
      // A counter reported only zeros is exported at 0, as prom-client shows it: both sides say so.
      expect(got, `seed ${seed}: ${JSON.stringify(c)}`).toEqual(want);
      await provider.shutdown();
      taken += want.size;
    }
    expect(taken).toBeGreaterThan(RUNS / 2);
  });

  test('prometheusName: a name Prometheus accepts, the pool\'s own unchanged but the duration', () => {
    expect(prometheusName('rows parsed')).toBe('rows_parsed');
    expect(prometheusName('2xx')).toBe('_2xx');
    expect(prometheusName('http.requests-total/ok:x')).toBe('http_requests_total_ok:x');
    expect(prometheusName('endpoint_pool_attempts_total')).toBe('endpoint_pool_attempts_total');
    // Cleaned, a name of your own never lands among the pool's series.
    expect(prometheusName('endpoint-pool_attempts_total')).toBe('_endpoint_pool_attempts_total');
    expect(prometheusName('endpoint_pool_attempt_duration_ms')).toBe('endpoint_pool_attempt_duration_seconds');
    for (let k = 0; k < 200; k++) expect(prometheusName(word(seeded(k), NAME_CHARS, 1, 10))).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/);
  });
});
