/**
 * Quorum reads (src/rpc/quorum.ts) edge by edge: what the twenty-ninth session's first mutation
 * run of the file found held by no fast test (64.7 %): a signal aborted before or during the read,
 * weights too light from the start, a leg's retry landing on an endpoint another leg holds, no
 * stall timer when stalls are off, `avoid`, an `equals` that throws, how answers are described;
 * and what the thirty-second session's second run found (82.9 %): errors grouped by their vote
 * key, stall timers cleared on an early settlement, the not-met reasons, a cause's description.
 */
import { describe, expect, test } from 'vitest';
import { isPoolError, type ExecuteOptions } from '../../src/index.js';
import { NodeBehindError, RpcReads } from '../../src/rpc/reads.js';
import { NodeLeftError } from '../../src/rpc/chain-check.js';
import { EndpointTakenError, isEndpointTaken } from '../../src/rpc/quorum.js';
import type { QuorumError } from '../../src/rpc/quorum-error.js';
import { readHarness } from '../helpers/reads.js';
import { fail, hang, harness, ok, start } from '../support.js';

const read = (r: ReturnType<typeof readHarness>, need: number, exec = {}) => r.reads.request('eth_call', [], exec, need, r.send);

describe('EndpointTakenError', () => {
  test('is recognised by isEndpointTaken, names the endpoint; nothing else is', () => {
    const e = new EndpointTakenError('b');
    expect(isEndpointTaken(e)).toBe(true);
    expect(e).toMatchObject({ name: 'EndpointTakenError', endpoint: 'b', message: 'endpoint "b" already serves another leg of this quorum read' });
    for (const x of [new Error('x'), null, undefined, 'b', { endpoint: 'b' }]) expect(isEndpointTaken(x)).toBe(false);
  });

  test('its kinds (a node that left while asked its chain, one that fell behind after the read was routed) are recognised too, each under its own name', () => {
    const left = new NodeLeftError('a');
    const behind = new NodeBehindError('c', 'its head (100) is 4 blocks behind the best');
    expect([isEndpointTaken(left), isEndpointTaken(behind)]).toEqual([true, true]);
    expect(left).toMatchObject({ name: 'NodeLeftError', endpoint: 'a', message: 'endpoint "a" left the pool while its node was asked its chain; nothing was sent to it' });
    expect(behind).toMatchObject({ name: 'NodeBehindError', endpoint: 'c', message: 'endpoint "c" fell out of head routing after this read was routed (its head (100) is 4 blocks behind the best); nothing was sent to it' });
  });
});

describe('signals', () => {
  test('aborted before the read: ABORTED, its reason the cause, nothing sent', async () => {
    const r = readHarness(['a', 'b', 'c']);
    const c = new AbortController();
    c.abort('stop');
    const e = (await read(r, 2, { signal: c.signal }).catch((x: unknown) => x)) as Error & { cause?: unknown };
    expect(e).toMatchObject({ code: 'ABORTED', message: 'the call was aborted before it started', cause: 'stop' });
    expect(r.sent).toEqual([]);
  });

  test('aborted during the read: ABORTED at once, its reason the cause; the legs are aborted', async () => {
    const r = readHarness(['a', 'b', 'c']);
    for (const n of ['a', 'b', 'c']) r.h.eps[n]!.fallback = hang(true);
    const c = new AbortController();
    const p = start(read(r, 2, { signal: c.signal }));
    await r.h.clock.advance(10);
    c.abort('enough');
    await r.h.clock.advance(0);
    expect(p.error).toMatchObject({ code: 'ABORTED', message: 'the call was aborted', cause: 'enough' });
    expect(r.h.eps.a!.contexts[0]!.signal.aborted).toBe(true);
  });
});

describe('before any leg', () => {
  test('weights that cannot reach the quorum: not met at once, saying so', async () => {
    const r = readHarness(['a', 'b', 'c'], { quorum: { weights: { a: 0, b: 0 } } });
    const e = (await read(r, 2).catch((x: unknown) => x)) as QuorumError;
    expect(e.code).toBe('QUORUM_NOT_MET');
    expect(e.message).toContain('the endpoints it may use weigh 1 in all');
    expect(r.sent).toEqual([]);
  });

  test("the caller's exclude counts: what it leaves weighs too little", async () => {
    const r = readHarness(['a', 'b', 'c']);
    const e = (await read(r, 2, { exclude: ['a', 'b'] }).catch((x: unknown) => x)) as QuorumError;
    expect(e.message).toContain('weigh 1 in all');
    expect(r.sent).toEqual([]);
  });
});

describe('one endpoint per read', () => {
  test("a leg's retry that lands on an endpoint another leg holds moves on at once, sending nothing there", async () => {
    const r = readHarness(['a', 'b', 'c'], {}, { strategy: 'ordered', maxAttempts: 3 });
    r.h.eps.a!.then(fail('transient', 5));
    r.h.eps.b!.fallback = ok('0x1', 20);
    r.h.eps.c!.fallback = ok('0x1', 0);
    const p = start(read(r, 2));
    await r.h.clock.advance(100);
    // a fails at 5 ms; its retry skips b (held by the second leg: no request) and goes to c.
    expect(r.sent).toEqual(['a', 'b', 'c']);
    expect(r.h.eps.b!.calls).toBe(1);
    expect(p.value).toBe('0x1');
  });

  test("a leg's retry on its own endpoint is no conflict", async () => {
    const r = readHarness(['a', 'b'], {}, { strategy: 'ordered', maxAttempts: 3, backoff: { initialMs: 0, maxMs: 0, jitter: 'none' } });
    r.h.eps.a!.then(fail('transient', 5));
    r.h.eps.a!.fallback = ok('0x1', 0);
    r.h.eps.b!.fallback = ok('0x1', 20);
    const p = start(read(r, 2, { exclude: [] }));
    await r.h.clock.advance(100);
    expect(p.value).toBe('0x1');
    expect(r.h.eps.a!.calls).toBe(2);
  });
});

describe('stalls', () => {
  test('stallMs Infinity: no stall timer, and a hanging leg is waited for', async () => {
    const r = readHarness(['a', 'b', 'c'], { quorum: { stallMs: Infinity } }, { attemptTimeoutMs: Infinity, deadlineMs: Infinity });
    r.h.eps.a!.fallback = hang();
    r.h.eps.b!.fallback = ok('0x1', 0);
    start(read(r, 2, { deadlineMs: Infinity }));
    await r.h.clock.advance(10_000);
    expect(r.sent).toEqual(expect.arrayContaining(['a', 'b']));
    expect(r.sent).not.toContain('c');
    expect(r.h.clock.pendingTimers).toBe(0);
  });
});

describe('avoid', () => {
  test('an avoided endpoint is asked only once no other is left', async () => {
    const r = readHarness(['a', 'b', 'c'], {}, { strategy: 'ordered' }, () => ['a']);
    for (const n of ['a', 'b', 'c']) r.h.eps[n]!.fallback = ok('0x1', 0);
    expect(await read(r, 2)).toBe('0x1');
    expect(r.sent).toEqual(['b', 'c']);
    r.sent.length = 0;
    r.h.eps.c!.fallback = fail('transient');
    const p = start(read(r, 2, { retry: 'none' }));
    await r.h.clock.advance(100);
    expect(p.value).toBe('0x1');
    expect(r.sent).toEqual(['b', 'c', 'a']);
  });
});

describe('answers', () => {
  test('an equals that throws makes two answers different: not met, both described', async () => {
    const r = readHarness(['a', 'b'], {
      quorum: {
        equals: () => {
          throw new Error('boom');
        },
      },
    });
    for (const n of ['a', 'b']) r.h.eps[n]!.fallback = ok('0x1', 0);
    const e = (await read(r, 2).catch((x: unknown) => x)) as QuorumError;
    expect(e.code).toBe('QUORUM_NOT_MET');
    expect(e.message).toContain('the endpoints disagree');
    expect(e.answers.map((x) => [x.endpoint, x.kind, x.group])).toEqual([
      ['a', 'result', 0],
      ['b', 'result', 1],
    ]);
  });

  test('failures are described by code, short message and cause', async () => {
    const r = readHarness(['a', 'b'], {}, { classify: () => 'transient', maxAttempts: 1 });
    const errors: unknown[] = [
      Object.assign(new Error('long message'), { code: -32000, shortMessage: 'short', cause: { code: 'ECONNRESET', message: 'reset' } }),
      Object.assign(new Error('plain'), { code: 'E_X' }),
    ];
    let i = 0;
    const send = (exec: Parameters<typeof r.send>[0], guard?: (endpoint: string) => void) =>
      r.h.pool.execute(async (_ep, ctx) => {
        guard?.(ctx.endpoint);
        throw errors[i++];
      }, exec);
    const e = (await r.reads.request('eth_call', [], {}, 2, send).catch((x: unknown) => x)) as QuorumError;
    expect(isPoolError(e)).toBe(true);
    // A leg's error is the PoolError its call ended with: its code, message, and its cause's code and short message.
    expect(e.answers.map((x) => x.error)).toEqual([
      'RETRIES_EXHAUSTED: the only attempt allowed failed: "a" transient: (cause: -32000 short)',
      'RETRIES_EXHAUSTED: the only attempt allowed failed: "b" transient: (cause: E_X plain)',
    ]);
  });
});

describe('the deadline', () => {
  test('no leg starts once it has passed: legs that end at the deadline leave the read not met, never an options error', async () => {
    const r = readHarness(['a', 'b', 'c'], { quorum: { stallMs: 1000 } }, { maxAttempts: 1, attemptTimeoutMs: 10_000 });
    for (const n of ['a', 'b', 'c']) r.h.eps[n]!.fallback = hang(true);
    const p = start(read(r, 2, { deadlineMs: 100 }));
    await r.h.clock.advance(100);
    expect(p.error).toMatchObject({ code: 'QUORUM_NOT_MET' });
    expect(r.sent).toHaveLength(2);
  });
});

describe('the thirty-second session: what a second mutation run found held by no fast test', () => {
  /** Reads over a, b, c whose operations throw what `throws[endpoint]` says (or answer 0x1), with `voteOf` keys for errors. */
  function voting(throws: Record<string, unknown>, options: ConstructorParameters<typeof RpcReads>[0] = {}) {
    const h = harness(['a', 'b', 'c'], { classify: (e) => (isEndpointTaken(e) ? 'unsupported' : 'permanent'), strategy: 'ordered' });
    const voteOf = (e: unknown): string | undefined => {
      const m = (e as { cause?: { message?: unknown } }).cause?.message;
      return typeof m === 'string' && m.startsWith('reverted') ? m : undefined;
    };
    const reads = new RpcReads(options, h.pool, voteOf);
    const sent: string[] = [];
    const send = (exec: ExecuteOptions, guard?: (endpoint: string) => void) =>
      h.pool.execute(async (_ep, ctx) => {
        guard?.(ctx.endpoint);
        sent.push(ctx.endpoint);
        if (throws[ctx.endpoint] === 'hang') return new Promise<string>(() => undefined);
        await new Promise<void>((resolve) => h.clock.setTimeout(() => resolve(), 5));
        if (ctx.endpoint in throws) throw throws[ctx.endpoint];
        return '0x1';
      }, exec);
    const read = (need: number, exec: ExecuteOptions = {}) => reads.request('eth_call', [], exec, need, send);
    /** The error the read ends with, the fake clock run 100 ms. */
    const failure = async (need: number): Promise<Error & Partial<QuorumError>> => {
      const p = start(read(need));
      await h.clock.advance(100);
      return p.error as Error & Partial<QuorumError>;
    };
    return { h, sent, read, failure };
  }

  test('errors vote by their key: one key is one group, two keys are two', async () => {
    const r = voting({ a: new Error('reverted: X'), b: new Error('reverted: Y'), c: new Error('reverted: Y') });
    const p = start(r.read(2));
    await r.h.clock.advance(100);
    // a and b disagree: c is asked, and sides with b.
    expect(r.sent).toEqual(['a', 'b', 'c']);
    expect((p.error as { cause?: Error }).cause?.message).toBe('reverted: Y');
  });

  test('a read that settles early clears the stall timers of the legs still out, even legs that ignore their abort', async () => {
    const h = harness(['a', 'b', 'c']);
    const reads = new RpcReads({ quorum: { stallMs: 400 } }, h.pool);
    const names = ['a', 'b', 'c'];
    // Legs that take an endpoint and never settle, aborted or not.
    const send = (_exec: ExecuteOptions, guard?: (endpoint: string) => void) => {
      guard?.(names.shift()!);
      return new Promise<string>(() => undefined);
    };
    const c = new AbortController();
    const p = start(reads.request('eth_call', [], { signal: c.signal }, 2, send));
    await h.clock.advance(1);
    expect(h.clock.pendingForegroundTimers).toBe(2); // a stall timer per leg
    c.abort('enough');
    await h.clock.advance(0);
    expect(p.error).toMatchObject({ code: 'ABORTED' });
    expect(h.clock.pendingForegroundTimers).toBe(0);
  });

  test("not met: 'too few endpoints answered' with one answer or none, 'the endpoints disagree' with two", async () => {
    const failed = { message: 'down' };
    const one = voting({ b: failed, c: failed });
    expect((await one.failure(2)).message).toContain('too few endpoints answered (1 distinct answer(s)');
    const none = voting({ a: failed, b: failed, c: failed });
    expect((await none.failure(2)).message).toContain('too few endpoints answered (0 distinct answer(s)');
    const two = voting({ a: new Error('reverted: X'), c: failed });
    expect((await two.failure(2)).message).toContain('the endpoints disagree (2 distinct answer(s)');
  });

  test("a failure's description: the cause's code alone, its short message before its message, none when it says nothing", async () => {
    const r = voting({ a: { code: 'E1' }, b: { shortMessage: 'short', message: 'long' }, c: {} });
    const e = await r.failure(3);
    expect(e.answers!.map((x) => x.error)).toEqual([
      'PERMANENT: endpoint "a" answered with a permanent error: (cause: E1 )',
      'PERMANENT: endpoint "b" answered with a permanent error: (cause: short)',
      'PERMANENT: endpoint "c" answered with a permanent error',
    ]);
  });
});
