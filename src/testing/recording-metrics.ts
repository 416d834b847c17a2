/**
 * A metrics sink that remembers what it was given, for tests (the pool's own and yours).
 */
import type { Labels, MetricsSink } from '../base/metrics.js';

export interface RecordedMetric {
  readonly kind: 'increment' | 'observe';
  readonly name: string;
  readonly labels: Labels;
  readonly value: number;
}

export class RecordingMetrics implements MetricsSink {
  readonly records: RecordedMetric[] = [];

  increment(name: string, labels: Labels, value = 1): void {
    this.records.push({ kind: 'increment', name, labels: { ...labels }, value });
  }

  observe(name: string, labels: Labels, value: number): void {
    this.records.push({ kind: 'observe', name, labels: { ...labels }, value });
  }

  /**
   * The sum of a counter over every record whose labels include `labels`
   * (so `counter('endpoint_pool_attempts_total', { endpoint: 'a' })`).
   */
  counter(name: string, labels: Labels = {}): number {
    let sum = 0;
    for (const r of this.records) {
      if (r.kind === 'increment' && r.name === name && matches(r.labels, labels)) sum += r.value;
    }
    return sum;
  }

  /** Every observation of `name` matching `labels`. */
  observations(name: string, labels: Labels = {}): number[] {
    return this.records.filter((r) => r.kind === 'observe' && r.name === name && matches(r.labels, labels)).map((r) => r.value);
  }

  clear(): void {
    this.records.length = 0;
  }
}

function matches(actual: Labels, wanted: Labels): boolean {
  for (const key of Object.keys(wanted)) if (actual[key] !== wanted[key]) return false;
  return true;
}
