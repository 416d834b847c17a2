/**
 * The prom-client and OpenTelemetry sinks against the real packages: prom-client's own
 * registry scraped as text; the OTel sink typed against `@opentelemetry/api`'s `Meter`
 * (no SDK is installed, so values are read through a recording `Meter`).
 */
import { metrics as otelMetrics, type Counter, type Histogram, type Meter, type Attributes } from '@opentelemetry/api';
import * as promClient from 'prom-client';
import { describe, expect, test } from 'vitest';
import { Pool } from '../src/index.js';
import { otelSink } from '../src/otel/index.js';
import { prometheusSink } from '../src/prometheus/index.js';
import { FakeClock } from '../src/testing/index.js';

/** a fails once (transient), b succeeds after 30 ms; then a call that fails everywhere. */
async function drive(pool: Pool<string>, clock: FakeClock): Promise<void> {
  const p = pool.execute(async (c) => {
    if (c === 'a') throw new Error('down');
    await new Promise<void>((res) => clock.setTimeout(res, 30));
    return c;
  });
  await clock.advance(30);
  await p;
  await pool.execute(async () => Promise.reject(new Error('bad request')), { retry: 'none' }).catch(() => undefined);
}

const classify = (e: unknown) => ((e as Error).message === 'down' ? 'transient' : 'permanent') as 'transient' | 'permanent';

describe('prometheusSink', () => {
  test('endpoint-labeled series appear in the scrape of the user registry', async () => {
    const registry = new promClient.Registry();
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], classify, clock, metrics: prometheusSink({ client: promClient, registry }) });
    const before = await registry.metrics();
    expect(before).toContain('# TYPE endpoint_pool_attempts_total counter');
    expect(before).toContain('# TYPE endpoint_pool_attempt_duration_seconds histogram');
    await drive(pool, clock);
    const text = await registry.metrics();
    expect(text).toContain('endpoint_pool_attempts_total{endpoint="a"} 2');
    expect(text).toContain('endpoint_pool_attempts_total{endpoint="b"} 1');
    expect(text).toContain('endpoint_pool_failures_total{endpoint="a",class="transient"} 1');
    expect(text).toContain('endpoint_pool_failures_total{endpoint="a",class="permanent"} 1');
    expect(text).toContain('endpoint_pool_exhausted_total{endpoint="a",code="PERMANENT"} 1');
    expect(text).toContain('endpoint_pool_attempt_duration_seconds_count{endpoint="b"} 1');
    expect(text).toContain('endpoint_pool_attempt_duration_seconds_sum{endpoint="b"} 0.03');
    expect(text).toMatch(/endpoint_pool_attempt_duration_seconds_bucket\{le="0.05",endpoint="b"\} 1/);
    expect(text).toMatch(/endpoint_pool_attempt_duration_seconds_bucket\{le="0.025",endpoint="b"\} 0/);
  });

  test('two pools share a registry, told apart by constant labels; nothing lands in the global registry', async () => {
    const registry = new promClient.Registry();
    const clock = new FakeClock();
    const mk = (pool: string) =>
      new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], classify, clock, metrics: prometheusSink({ client: promClient, registry, labels: { pool } }) });
    const one = mk('one');
    const two = mk('two');
    await drive(one, clock);
    await two.execute(async (c) => c);
    const text = await registry.metrics();
    expect(text).toContain('endpoint_pool_attempts_total{endpoint="a",pool="one"} 2');
    expect(text).toContain('endpoint_pool_attempts_total{endpoint="a",pool="two"} 1');
    expect(await promClient.register.metrics()).not.toContain('endpoint_pool');
  });
});

/** A Meter (the real API type) that records what it is given. */
function recordingMeter() {
  const counts = new Map<string, number>();
  const observations: { name: string; value: number; attrs: Attributes | undefined }[] = [];
  const units = new Map<string, string | undefined>();
  const key = (name: string, a?: Attributes) => `${name}${JSON.stringify(a ?? {})}`;
  const noop = otelMetrics.getMeterProvider().getMeter('noop');
  const meter: Meter = {
    ...noop,
    createCounter: (name, opts) => {
      units.set(name, opts?.unit);
      return { add: (v: number, a?: Attributes) => void counts.set(key(name, a), (counts.get(key(name, a)) ?? 0) + v) } as Counter;
    },
    createHistogram: (name, opts) => {
      units.set(name, opts?.unit);
      return { record: (value: number, attrs?: Attributes) => void observations.push({ name, value, attrs }) } as Histogram;
    },
  };
  return { meter, counts, observations, units, key };
}

describe('otelSink', () => {
  test('counters and a millisecond histogram with endpoint attributes', async () => {
    const m = recordingMeter();
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }, { name: 'b', conn: 'b' }], classify, clock, metrics: otelSink(m.meter, { attributes: { pool: 'p' } }) });
    await drive(pool, clock);
    expect(m.counts.get(m.key('endpoint_pool_attempts_total', { endpoint: 'a', pool: 'p' }))).toBe(2);
    expect(m.counts.get(m.key('endpoint_pool_failures_total', { endpoint: 'a', class: 'transient', pool: 'p' }))).toBe(1);
    expect(m.observations.filter((o) => o.name === 'endpoint_pool_attempt_duration_ms' && o.attrs?.['endpoint'] === 'b').map((o) => o.value)).toEqual([30]);
    expect(m.units.get('endpoint_pool_attempt_duration_ms')).toBe('ms');
  });

  test("works with the API's own (no-op) meter when no SDK is registered", async () => {
    const clock = new FakeClock();
    const pool = new Pool<string>({ endpoints: [{ name: 'a', conn: 'a' }], classify, clock, metrics: otelSink(otelMetrics.getMeter('endpoint-pool-test')) });
    expect(await pool.execute(async (c) => c)).toBe('a');
  });
});
