/**
 * The metrics a pool records, held against what its events say (docs/metrics.md): a recording
 * sink that throws now and then (a broken sink must change nothing), and the tallies the same
 * run's events imply. Used by the mixed-options generator (mix.ts), where every option,
 * hedging, replaced endpoints, probes and `close()` meet.
 *
 * - `endpoint_pool_attempts_total{endpoint}`: one per `attempt-start`;
 * - `endpoint_pool_failures_total{endpoint,class}`: one per `attempt-failure`, by its class;
 * - `endpoint_pool_attempt_duration_ms{endpoint}`: each `attempt-success` and `attempt-failure`
 *   duration, the same values (a cancelled attempt records none);
 * - `endpoint_pool_breaker_opened_total{endpoint}`: one per `breaker-opened`;
 * - `endpoint_pool_rate_limit_waits_total{endpoint}`: one per `rate-limit-wait`;
 * - `endpoint_pool_exhausted_total{endpoint,code}`: one per `call-failed`, labeled with its
 *   error's `endpoint` (or `none`) and code; and that endpoint is the last the call started on;
 * - `endpoint_pool_probe_failures_total{endpoint}`: one per failed probe result;
 * - `pool.report(endpoint, name, value)`: `value` added to `name{endpoint}`, as its event says.
 */
import { METRICS, type Labels, type MetricsSink, type PoolEvent, type ProbeResult } from '../../src/index.js';

const key = (name: string, labels: Labels): string =>
  `${name}${JSON.stringify(
    Object.keys(labels)
      .sort()
      .map((k) => [k, labels[k]]),
  )}`;

export class MetricsTally {
  /** What the sink was given. */
  readonly #got = new Map<string, number>();
  readonly #gotDurations = new Map<string, number[]>();
  /** What the events imply. */
  readonly #want = new Map<string, number>();
  readonly #wantDurations = new Map<string, number[]>();
  /** The endpoint of each call's latest attempt-start. */
  readonly #lastStart = new Map<number, string>();
  #calls = 0;
  readonly sink: MetricsSink;

  constructor(readonly throwEvery: number) {
    this.sink = {
      increment: (name, labels, value = 1) => {
        const k = key(name, labels);
        this.#got.set(k, (this.#got.get(k) ?? 0) + value);
        this.#maybeThrow();
      },
      observe: (name, labels, value) => {
        const k = key(name, labels);
        let list = this.#gotDurations.get(k);
        if (list === undefined) this.#gotDurations.set(k, (list = []));
        list.push(value);
        this.#maybeThrow();
      },
    };
  }

  /** How many times the pool called the sink. */
  get calls(): number {
    return this.#calls;
  }

  #maybeThrow(): void {
    if (++this.#calls % this.throwEvery === 0) throw new Error('metrics backend down');
  }

  #add(name: string, labels: Labels, value = 1): void {
    const k = key(name, labels);
    this.#want.set(k, (this.#want.get(k) ?? 0) + value);
  }

  #duration(endpoint: string, ms: number): void {
    const k = key(METRICS.attemptDuration, { endpoint });
    let list = this.#wantDurations.get(k);
    if (list === undefined) this.#wantDurations.set(k, (list = []));
    list.push(ms);
  }

  /** Every event of the run, in order. `v` takes a violation. */
  onEvent(e: PoolEvent, v: (msg: string) => void): void {
    switch (e.type) {
      case 'attempt-start':
        this.#add(METRICS.attempts, { endpoint: e.endpoint });
        this.#lastStart.set(e.callId, e.endpoint);
        break;
      case 'attempt-failure':
        this.#add(METRICS.failures, { endpoint: e.endpoint, class: e.errorClass });
        this.#duration(e.endpoint, e.durationMs);
        break;
      case 'attempt-success':
        this.#duration(e.endpoint, e.durationMs);
        break;
      case 'breaker-opened':
        this.#add(METRICS.breakerOpened, { endpoint: e.endpoint });
        break;
      case 'rate-limit-wait':
        this.#add(METRICS.rateLimitWaits, { endpoint: e.endpoint });
        break;
      case 'call-failed': {
        const endpoint = e.error.endpoint ?? 'none';
        this.#add(METRICS.exhausted, { endpoint, code: e.error.code });
        const last = this.#lastStart.get(e.callId) ?? 'none';
        if (endpoint !== last) v(`call ${e.callId} failed ${e.error.code} labeled (and its error naming) endpoint ${endpoint}, but its last attempt started on ${last}`);
        break;
      }
      case 'report':
        this.#add(e.name, { endpoint: e.endpoint }, e.value);
        break;
      default:
        break;
    }
  }

  /** The results of one `probeHealth`. */
  onProbes(results: readonly ProbeResult[]): void {
    for (const r of results) if (!r.ok) this.#add(METRICS.probeFailures, { endpoint: r.endpoint });
  }

  /** Every series the events imply, as the sink got it, and nothing else. */
  check(v: (msg: string) => void): void {
    for (const k of new Set([...this.#got.keys(), ...this.#want.keys()])) {
      const got = this.#got.get(k) ?? 0;
      const want = this.#want.get(k) ?? 0;
      if (got !== want) v(`metric ${k}: ${got} recorded, the events say ${want}`);
    }
    for (const k of new Set([...this.#gotDurations.keys(), ...this.#wantDurations.keys()])) {
      const got = [...(this.#gotDurations.get(k) ?? [])].sort((a, b) => a - b).join(',');
      const want = [...(this.#wantDurations.get(k) ?? [])].sort((a, b) => a - b).join(',');
      if (got !== want) v(`metric ${k}: observed [${got.slice(0, 120)}], the events' durations [${want.slice(0, 120)}]`);
    }
  }
}
