/**
 * The Redis parts bound every command (`commandTimeoutMs`, 10 s by default).
 *
 * They keep one command at a time for some things: one admission run per limit key (callers
 * arriving meanwhile wait for it), one `SCRIPT LOAD` that every run waits on, one fetch of the
 * health view, and the reports on a key still unanswered (while one is out, admission answers
 * are not published). A client that lost one reply (a connection that died without a reset, a
 * hand-written client that dropped it) held that thing for good before the forty-second session:
 * the key's callers never reached Redis again (each waited out `sharedQuota.timeoutMs` and went
 * on degraded, and past `maxPending` every key of the store was refused at once), the script was
 * never loaded, the fleet's health marks were never read again, a key's state never published.
 *
 * On a real redis-server, with a client in front of it whose replies are dropped, held, failed
 * or thrown on a drawn schedule; the store's clock is a FakeClock, so a timeout is an `advance`.
 */
import fc from 'fast-check';
import { afterEach, beforeAll, expect, test } from 'vitest';
import type { SharedLimit } from '../../src/index.js';
import { createRedisHealth, createRedisStore, fromIoredis, RedisStoreError, type RedisCommander } from '../../src/redis/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { client, describeRedis, ready } from './redis-env.js';
import { timerLag, withLag } from '../helpers/lag.js';

const RUNS = Number(process.env['FC_REDIS_TIMEOUT_RUNS'] ?? 40);
const SEED = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : 2026120742;
const TIMEOUT_MS = 10_000;

const limitOf = (key: string): SharedLimit => ({ key, perSecond: 1000, burst: undefined, mode: 'bucket', marginMs: 0, perDay: undefined, dailyStopFraction: 1, dailyResetUtcHour: 0 });
const limit = limitOf('endpoint:k');

/** What becomes of one command's reply. */
type Fate = { kind: 'ok' } | { kind: 'drop' } | { kind: 'reject' } | { kind: 'throw' } | { kind: 'late'; ms: number };

/** What a command is, from its words: the admission script has four keys, the report one. */
function what(args: readonly string[]): 'load' | 'admit' | 'report' | 'other' {
  if (args[0] === 'SCRIPT') return 'load';
  if (args[0] === 'EVALSHA' || args[0] === 'EVAL') return args[2] === '4' ? 'admit' : 'report';
  return 'other';
}

/**
 * A client in front of `inner`: each command takes the next fate of `fates` (then `ok`), or,
 * when `only` is given, only the commands it names do. Redis runs every command it is sent;
 * only the reply is dropped, held until the fake clock has moved `ms`, failed or thrown.
 */
function faulty(inner: RedisCommander, clock: FakeClock, fates: Fate[], only?: (args: readonly string[]) => boolean) {
  const log: string[] = [];
  const commander: RedisCommander = {
    send(args) {
      const fate = only === undefined || only(args) ? (fates.shift() ?? { kind: 'ok' }) : { kind: 'ok' as const };
      log.push(`${what(args)}:${fate.kind}`);
      if (fate.kind === 'throw') throw new Error('client threw');
      const reply = inner.send(args);
      switch (fate.kind) {
        case 'ok':
          return reply;
        case 'reject':
          return reply.then(() => Promise.reject(new Error('reply lost')));
        case 'drop':
          void reply.catch(() => undefined);
          return new Promise<never>(() => undefined);
        case 'late':
          return new Promise((resolve, reject) => clock.setTimeout(() => void reply.then(resolve, reject), fate.ms));
      }
    },
  };
  return { commander, log };
}

/** Real time for Redis to answer what was sent (the store's own clock stands still meanwhile). */
const io = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

/** Real time Redis has to answer (a budget that must not run out: grows with the machine's timer lag). */
let budget = 2000;
beforeAll(async () => {
  budget = withLag(1000, await timerLag(), 40);
});

/** `p`'s outcome, or `'pending'` once Redis has had real time to answer. */
async function outcome<T>(p: Promise<T>, ms = budget): Promise<{ value: T } | { error: unknown } | 'pending'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'pending'>((r) => (timer = setTimeout(() => r('pending'), ms)));
  try {
    return await Promise.race([p.then((value) => ({ value }), (error: unknown) => ({ error })), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Replies come again: the client passes every command on, and the clock moves past every bound and every held reply. */
async function heal(f: ReturnType<typeof faulty>, inner: RedisCommander, clock: FakeClock, timeoutMs: number | undefined): Promise<void> {
  f.commander.send = (args) => inner.send(args);
  f.log.push('healed');
  await clock.advance((timeoutMs ?? TIMEOUT_MS) + 25_000);
  await io();
}

/** Runs a property on its seed (`SEED + offset`); a failure names the seed, the path and what the shrunk run found. */
async function checkProperty<T>(name: string, arb: fc.Arbitrary<T>, offset: number, run: (sc: T) => Promise<void>): Promise<void> {
  const result = await fc.check(fc.asyncProperty(arb, run), {
    seed: SEED + offset,
    numRuns: RUNS,
    // A part that stays stuck fails each run by waiting out its bounds: stop shrinking after a minute.
    interruptAfterTimeLimit: 60_000,
    markInterruptAsFailure: true,
    ...(process.env['FC_PATH'] !== undefined ? { path: process.env['FC_PATH'] } : {}),
  });
  if (result.failed) {
    expect.fail(`${name} property failed (seed ${result.seed}); replay: FC_SEED=${result.seed - offset} FC_PATH=${result.counterexamplePath ?? ''} npx vitest run test/redis/command-timeout.test.ts\n${String((result.errorInstance as Error | undefined)?.message)}\n${JSON.stringify(result.counterexample)}`);
  }
}

describeRedis('Redis parts: a command unanswered for commandTimeoutMs', (server) => {
  const clients: { disconnect(): void }[] = [];
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect();
  });
  const connect = async () => {
    const c = await ready(client(server().port));
    clients.push(c);
    return fromIoredis(c);
  };
  let n = 0;
  const prefix = () => `cto${Date.now()}-${n++}:`;

  test("an admission whose reply never comes fails with STORE_TIMEOUT, and the key's next caller is admitted by Redis", async () => {
    const clock = new FakeClock();
    const f = faulty(await connect(), clock, [{ kind: 'drop' }], (args) => what(args) === 'admit');
    const store = createRedisStore(f.commander, { prefix: prefix(), clock });
    const first = store.acquire(limit);
    await io();
    const meanwhile = store.acquire(limit);
    expect(await outcome(first, 50)).toBe('pending');
    await clock.advance(TIMEOUT_MS);
    const failed = await outcome(first);
    expect(failed).toHaveProperty('error');
    expect(((failed as { error: unknown }).error as RedisStoreError).code).toBe('STORE_TIMEOUT');
    // The caller that waited behind the lost run is asked for in the next one.
    expect(await outcome(meanwhile)).toEqual({ value: 0 });
    expect(await outcome(store.acquire(limit))).toEqual({ value: 0 });
    expect(store.pending).toBe(0);
    // Each command's guard goes with its answer: none is left to fire.
    expect(clock.pendingTimers).toBe(0);
  });

  test('a SCRIPT LOAD whose reply never comes: the next run loads the script again', async () => {
    const clock = new FakeClock();
    const f = faulty(await connect(), clock, [{ kind: 'drop' }], (args) => what(args) === 'load');
    const store = createRedisStore(f.commander, { prefix: prefix(), clock, commandTimeoutMs: 500 });
    const first = store.acquire(limit);
    await io();
    await clock.advance(500);
    expect(((await outcome(first)) as { error: RedisStoreError }).error.code).toBe('STORE_TIMEOUT');
    expect(await outcome(store.acquire(limit))).toEqual({ value: 0 });
    expect(f.log.filter((x) => x.startsWith('load'))).toEqual(['load:drop', 'load:ok']);
  });

  test("a report whose reply never comes stops holding back the key's state: the next admission publishes it", async () => {
    const clock = new FakeClock();
    const f = faulty(await connect(), clock, [{ kind: 'drop' }], (args) => what(args) === 'report');
    const store = createRedisStore(f.commander, { prefix: prefix(), clock });
    const heard: string[][] = [];
    store.subscribe((_key, state) => heard.push([...state.disabled.keys()]));
    await store.acquire(limit);
    const lost = store.report(limit, { type: 'disabled', endpoint: 'a' });
    await io();
    await store.acquire(limit);
    expect(heard).not.toContainEqual(['a']);
    await clock.advance(TIMEOUT_MS);
    expect(await outcome(lost)).toEqual({ value: undefined });
    await store.acquire(limit);
    expect(heard).toContainEqual(['a']);
    expect(store.stateOf(limit.key)?.disabled.has('a')).toBe(true);
  });

  test("the health view's fetch whose reply never comes: a later exclude() fetches the fleet's marks again", async () => {
    const clock = new FakeClock();
    const reader = await connect();
    const f = faulty(reader, clock, [{ kind: 'drop' }], (args) => what(args) === 'report');
    const p = prefix();
    const errors: unknown[] = [];
    const health = createRedisHealth(f.commander, { prefix: p, clock, maxAgeMs: 100, onError: (e) => errors.push(e) });
    const other = createRedisHealth(reader, { prefix: p, clock });
    await other.mark('a', 'open', 3_600_000);
    expect(health.exclude(['a', 'b'])).toEqual([]);
    await io();
    await clock.advance(TIMEOUT_MS);
    expect(await outcome(health.refresh())).toEqual({ value: undefined });
    expect((errors[0] as RedisStoreError).code).toBe('STORE_TIMEOUT');
    expect(health.exclude(['a', 'b'])).toEqual(['a']);
  });

  test('commandTimeoutMs is checked', async () => {
    const c = await connect();
    for (const bad of [0, -1, Number.NaN, '5' as unknown as number]) {
      expect(() => createRedisStore(c, { commandTimeoutMs: bad })).toThrow(/commandTimeoutMs: expected a number > 0/);
      expect(() => createRedisHealth(c, { commandTimeoutMs: bad })).toThrow(/commandTimeoutMs: expected a number > 0/);
    }
    expect(() => createRedisStore(c, { commandTimeoutMs: Number.POSITIVE_INFINITY })).not.toThrow();
  });

  const fateArb: fc.Arbitrary<Fate> = fc.oneof(
    { weight: 4, arbitrary: fc.constant({ kind: 'ok' as const }) },
    { weight: 2, arbitrary: fc.constant({ kind: 'drop' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'reject' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'throw' as const }) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 25_000 }).map((ms) => ({ kind: 'late' as const, ms })) },
  );
  type Step = { do: 'acquire'; key: number } | { do: 'report'; key: number; endpoint: 'a' | 'b'; disabled: boolean } | { do: 'advance'; ms: number };
  const stepArb: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ do: fc.constant('acquire' as const), key: fc.integer({ min: 0, max: 1 }) }),
    fc.record({ do: fc.constant('report' as const), key: fc.integer({ min: 0, max: 1 }), endpoint: fc.constantFrom('a' as const, 'b' as const), disabled: fc.boolean() }),
    fc.record({ do: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 12_000 }) }),
  );
  /** A run: the replies' fates, what is done meanwhile, and the parts' own bounds (or their defaults). */
  const runOf = <S>(step: fc.Arbitrary<S>) =>
    fc.record({
      fates: fc.array(fateArb, { maxLength: 12 }),
      steps: fc.array(step, { minLength: 1, maxLength: 12 }),
      timeoutMs: fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 20_000 })),
      maxPending: fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 4 })),
    });
  const runArb = runOf(stepArb);

  test(`after any schedule of lost, late, failed and thrown replies, once replies come again: every acquire has settled, and the store admits and publishes (${RUNS} runs)`, async () => {
    const inner = await connect();
    await checkProperty('Redis command-timeout', runArb, 0, async (sc) => {
      const clock = new FakeClock();
      const f = faulty(inner, clock, [...sc.fates]);
      const store = createRedisStore(f.commander, { prefix: prefix(), clock, ...(sc.timeoutMs === undefined ? {} : { commandTimeoutMs: sc.timeoutMs }), ...(sc.maxPending === undefined ? {} : { maxPending: sc.maxPending }) });
      const limits = [limitOf('endpoint:x'), limitOf('endpoint:y')];
      // Each acquire's outcome, caught as it comes (one may fail while the clock moves).
      const acquires: Promise<{ value: unknown } | { error: unknown }>[] = [];
      for (const s of sc.steps) {
        if (s.do === 'acquire') acquires.push(store.acquire(limits[s.key]!).then((value) => ({ value }), (error: unknown) => ({ error })));
        else if (s.do === 'report') void store.report(limits[s.key]!, { type: s.disabled ? 'disabled' : 'enabled', endpoint: s.endpoint });
        else await clock.advance(s.ms);
        await io();
      }
      await heal(f, inner, clock, sc.timeoutMs);
      const problems: string[] = [];
      for (const [i, p] of acquires.entries()) {
        const o = await outcome(p);
        if (o === 'pending') problems.push(`acquire #${i} never settled`);
        else if ('value' in o && 'error' in o.value && !(o.value.error instanceof RedisStoreError)) problems.push(`acquire #${i} failed with ${String(o.value.error)}`);
      }
      if (store.pending !== 0) problems.push(`store.pending is ${store.pending} with nothing waiting`);
      for (const l of limits) {
        const admitted = await outcome(store.acquire(l));
        if (admitted === 'pending' || !('value' in admitted)) problems.push(`after healing, ${l.key}: acquire ${admitted === 'pending' ? 'never settled' : `failed: ${String(admitted.error)}`}`);
        for (const disabled of [true, false]) {
          if ((await outcome(store.report(l, { type: disabled ? 'disabled' : 'enabled', endpoint: 'z' }))) === 'pending') problems.push(`after healing, ${l.key}: a report never settled`);
          await outcome(store.acquire(l));
          if (store.stateOf(l.key)?.disabled.has('z') !== disabled) problems.push(`after healing, ${l.key}: 'z' reported ${disabled ? 'disabled' : 'enabled'}, the published state says otherwise`);
        }
      }
      if (problems.length > 0) throw new Error([...problems, `commands: ${f.log.join(' ')}`].join('\n'));
    });
  }, 300_000);

  type HealthStep =
    | { do: 'mark' | 'clear'; endpoint: 'a' | 'b' }
    | { do: 'exclude' | 'refresh' | 'marks' | 'readSurvivors' }
    | { do: 'refreshSurvivors'; ttlMs: number }
    | { do: 'advance'; ms: number };
  const healthStepArb: fc.Arbitrary<HealthStep> = fc.oneof(
    fc.record({ do: fc.constantFrom('mark' as const, 'clear' as const), endpoint: fc.constantFrom('a' as const, 'b' as const) }),
    fc.record({ do: fc.constantFrom('exclude' as const, 'refresh' as const, 'marks' as const, 'readSurvivors' as const) }),
    fc.record({ do: fc.constant('refreshSurvivors' as const), ttlMs: fc.integer({ min: 1, max: 30_000 }) }),
    fc.record({ do: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 12_000 }) }),
  );
  const healthRunArb = runOf(healthStepArb);

  test(`the health API, after any schedule of lost, late, failed and thrown replies, once replies come again: everything it started has settled, it reads the fleet's marks and its survivor list (${RUNS} runs)`, async () => {
    const inner = await connect();
    await checkProperty('Redis health command-timeout', healthRunArb, 1, async (sc) => {
      const clock = new FakeClock();
      const f = faulty(inner, clock, [...sc.fates]);
      const p = prefix();
      const health = createRedisHealth(f.commander, { prefix: p, clock, maxAgeMs: 100, onError: () => undefined, ...(sc.timeoutMs === undefined ? {} : { commandTimeoutMs: sc.timeoutMs }), ...(sc.maxPending === undefined ? {} : { maxPending: sc.maxPending }) });
      const started: Promise<unknown>[] = [];
      const check = (): Promise<string[]> => Promise.resolve(['a', 'b']);
      for (const s of sc.steps) {
        if (s.do === 'mark' || s.do === 'clear') started.push(s.do === 'mark' ? health.mark(s.endpoint, 'open', 3_600_000) : health.clear(s.endpoint));
        else if (s.do === 'exclude') health.exclude(['a', 'b', 'c']);
        else if (s.do === 'refresh') started.push(health.refresh());
        else if (s.do === 'marks') started.push(health.marks());
        else if (s.do === 'readSurvivors') started.push(health.readSurvivors());
        else if (s.do === 'refreshSurvivors') started.push(health.refreshSurvivors(check, { ttlMs: s.ttlMs }));
        else if (s.do === 'advance') await clock.advance(s.ms);
        const revalidating = health.revalidating;
        if (revalidating !== undefined) started.push(revalidating);
        await io();
      }
      await heal(f, inner, clock, sc.timeoutMs);
      const problems: string[] = [];
      for (const [i, q] of started.entries()) if ((await outcome(q)) === 'pending') problems.push(`promise #${i} of the health API never settled`);
      // Another process marks 'c' for the fleet: this one sees it once its view is older than maxAgeMs.
      await createRedisHealth(inner, { prefix: p }).mark('c', 'disabled', 3_600_000);
      await clock.advance(100);
      health.exclude(['a', 'b', 'c']);
      if ((await outcome(health.refresh())) === 'pending') problems.push('after healing, refresh() never settled');
      if (!health.exclude(['c', 'd']).includes('c')) problems.push("after healing, the fleet's mark on 'c' is not excluded");
      const published = await outcome(health.publishSurvivors(['x'], 60_000));
      const read = await outcome(health.readSurvivors());
      if (published === 'pending' || read === 'pending' || !('value' in read) || JSON.stringify(read.value) !== '["x"]') problems.push(`after healing, a published survivor list reads back as ${JSON.stringify(read)}`);
      if (problems.length > 0) throw new Error([...problems, `commands: ${f.log.join(' ')}`].join('\n'));
    });
  }, 300_000);
});
