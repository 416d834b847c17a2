/**
 * Scripted in-process endpoints for pool tests on the fake clock.
 *
 * A `FakeEndpoint` is a connection value whose behaviour a test scripts: each attempt
 * takes the next behaviour from its queue (or the default) and settles after its delay on
 * the fake clock. Errors carry the class the test's classifier returns.
 */
import { Pool, isPoolError, type ClassifyResult, type PoolError, type PoolEvent, type PoolOptions } from '../src/index.js';
import { FakeClock, RecordingMetrics } from '../src/testing/index.js';
import type { AttemptContext } from '../src/index.js';

export type Behaviour =
  | { readonly ok: unknown; readonly delayMs?: number }
  | { readonly fail: ClassifyResult; readonly delayMs?: number }
  | { readonly hang: true; readonly honourSignal?: boolean };

export class TestError extends Error {
  constructor(readonly verdict: ClassifyResult, message = 'scripted failure') {
    super(message);
  }
}

export const classify = (err: unknown): ClassifyResult => (err instanceof TestError ? err.verdict : 'permanent');

export class FakeEndpoint {
  readonly queue: Behaviour[] = [];
  calls = 0;
  readonly contexts: AttemptContext[] = [];
  readonly startedAt: number[] = [];
  constructor(
    readonly name: string,
    public fallback: Behaviour = { ok: name },
  ) {}
  then(...behaviours: Behaviour[]): this {
    this.queue.push(...behaviours);
    return this;
  }
}

export const ok = (value?: unknown, delayMs = 0): Behaviour => ({ ok: value, delayMs });
export const fail = (verdict: ClassifyResult, delayMs = 0): Behaviour => ({ fail: verdict, delayMs });
export const hang = (honourSignal = false): Behaviour => ({ hang: true, honourSignal });

/** The operation every test uses: plays the endpoint's next behaviour on the fake clock. */
export function operation(clock: FakeClock) {
  return (ep: FakeEndpoint, ctx: AttemptContext): Promise<unknown> => {
    ep.calls++;
    ep.contexts.push(ctx);
    ep.startedAt.push(clock.now());
    const b = ep.queue.shift() ?? ep.fallback;
    return new Promise((resolve, reject) => {
      if ('hang' in b) {
        if (b.honourSignal === true) ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
        return;
      }
      const settle = (): void => ('ok' in b ? resolve(b.ok ?? ep.name) : reject(new TestError(b.fail)));
      if ((b.delayMs ?? 0) === 0) settle();
      else clock.setTimeout(settle, b.delayMs!);
    });
  };
}

export interface Harness {
  readonly clock: FakeClock;
  readonly pool: Pool<FakeEndpoint>;
  readonly eps: Record<string, FakeEndpoint>;
  readonly events: PoolEvent[];
  readonly metrics: RecordingMetrics;
  readonly op: (ep: FakeEndpoint, ctx: AttemptContext) => Promise<unknown>;
  /** Event types (with endpoint) in order, for compact assertions. */
  trace(filter?: (e: PoolEvent) => boolean): string[];
}

export type EndpointSpec = { name: string } & Partial<Omit<PoolOptions<FakeEndpoint>['endpoints'][number], 'conn' | 'name'>>;

export function harness(endpoints: (string | EndpointSpec)[], options: Partial<PoolOptions<FakeEndpoint>> = {}): Harness {
  const clock = new FakeClock(1_000_000);
  const events: PoolEvent[] = [];
  const metrics = new RecordingMetrics();
  const eps: Record<string, FakeEndpoint> = {};
  const configs = endpoints.map((e) => {
    const spec = typeof e === 'string' ? { name: e } : e;
    const conn = new FakeEndpoint(spec.name);
    eps[spec.name] = conn;
    return { ...spec, conn };
  });
  const pool = new Pool<FakeEndpoint>({
    classify,
    clock,
    metrics,
    random: () => 0.5,
    backoff: { initialMs: 100, maxMs: 10_000, jitter: 'none' },
    onEvent: (e) => events.push(e),
    ...options,
    endpoints: configs,
  });
  return {
    clock,
    pool,
    eps,
    events,
    metrics,
    op: operation(clock),
    trace: (filter) =>
      events.filter(filter ?? (() => true)).map((e) => ('endpoint' in e ? `${e.type}:${e.endpoint}` : e.type)),
  };
}

/** Starts a call and captures its outcome without an unhandled rejection. */
export function start<T>(p: Promise<T>): { readonly settled: boolean; readonly value: T | undefined; readonly error: unknown; readonly promise: Promise<void> } {
  const box = { settled: false, value: undefined as T | undefined, error: undefined as unknown, promise: undefined as unknown as Promise<void> };
  box.promise = p.then(
    (v) => {
      box.settled = true;
      box.value = v;
    },
    (e: unknown) => {
      box.settled = true;
      box.error = e;
    },
  );
  return box;
}

/** The `PoolError` a call rejected with (throws if it resolved or rejected with something else). */
export async function failure(p: Promise<unknown>): Promise<PoolError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!isPoolError(e)) throw new Error(`expected a PoolError, got ${String(e)}`);
  return e;
}
