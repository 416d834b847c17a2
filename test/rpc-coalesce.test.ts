/**
 * Coalescing (src/rpc/coalesce.ts through RpcReads) on the fake clock: identical reads in
 * flight share one upstream request; nothing else does.
 */
import { describe, expect, test } from 'vitest';
import { isPoolError, type AttemptContext, type ExecuteOptions } from '../src/index.js';
import { RpcReads, type RpcReadOptions } from '../src/rpc/reads.js';
import { isEndpointTaken } from '../src/rpc/quorum.js';
import { classify, fail, harness, hang, ok, start, type FakeEndpoint } from './support.js';

function setup(options: RpcReadOptions = { coalesce: ['eth_getBalance', 'eth_blockNumber'] }, names = ['a', 'b']) {
  const h = harness(names, { classify: (e) => (isEndpointTaken(e) ? 'unsupported' : classify(e)), maxAttempts: 1 });
  const reads = new RpcReads(options, h.pool);
  const signals: AbortSignal[] = [];
  let upstream = 0;
  const send = (exec: ExecuteOptions, guard?: (endpoint: string) => void) =>
    h.pool.execute(async (ep: FakeEndpoint, ctx: AttemptContext) => {
      guard?.(ctx.endpoint);
      upstream++;
      signals.push(ctx.signal);
      return h.op(ep, ctx);
    }, exec);
  const read = (method: string, params: unknown[] = ['0xabc', 'latest'], exec: ExecuteOptions = {}, quorum?: number) => reads.request(method, params, exec, quorum, send);
  return { h, reads, signals, read, upstream: () => upstream };
}

describe('coalescing', () => {
  test('a burst of 100 identical reads makes one upstream request', async () => {
    const { h, reads, read, upstream } = setup();
    h.eps.a!.fallback = ok('0x5', 20);
    const calls = Array.from({ length: 100 }, () => start(read('eth_getBalance')));
    await h.clock.advance(20);
    expect(calls.every((c) => c.value === '0x5')).toBe(true);
    expect(upstream()).toBe(1);
    expect(reads.stats().coalesce).toEqual({ started: 1, joined: 99, inFlight: 0 });
  });

  test('different params, or a method not opted in, are not shared', async () => {
    const { h, read, upstream } = setup();
    h.eps.a!.fallback = ok('0x5', 20);
    start(read('eth_getBalance', ['0xabc', 'latest']));
    start(read('eth_getBalance', ['0xdef', 'latest']));
    start(read('eth_chainId', []));
    start(read('eth_chainId', []));
    await h.clock.advance(20);
    expect(upstream()).toBe(4);
  });

  test('a read arriving after the answer gets a fresh request (not a cache)', async () => {
    const { h, read, upstream } = setup();
    h.eps.a!.then(ok('0x1', 10), ok('0x2', 10));
    const first = start(read('eth_blockNumber', []));
    await h.clock.advance(10);
    const second = start(read('eth_blockNumber', []));
    await h.clock.advance(10);
    expect([first.value, second.value]).toEqual(['0x1', '0x2']);
    expect(upstream()).toBe(2);
  });

  test('a shared failure reaches every caller', async () => {
    const { h, read, upstream } = setup();
    h.eps.a!.fallback = fail('permanent', 5);
    const calls = [start(read('eth_getBalance')), start(read('eth_getBalance'))];
    await h.clock.advance(5);
    expect(calls.map((c) => isPoolError(c.error) && c.error.code)).toEqual(['PERMANENT', 'PERMANENT']);
    expect(upstream()).toBe(1);
  });

  test("one caller's abort leaves the others waiting; the last one's aborts upstream", async () => {
    const { h, signals, read } = setup();
    h.eps.a!.fallback = hang(true);
    const c1 = new AbortController();
    const c2 = new AbortController();
    const r1 = start(read('eth_getBalance', undefined, { signal: c1.signal }));
    const r2 = start(read('eth_getBalance', undefined, { signal: c2.signal }));
    await h.clock.advance(1);
    c1.abort();
    await h.clock.flush();
    expect(isPoolError(r1.error) && r1.error.code).toBe('ABORTED');
    expect(r2.settled).toBe(false);
    expect(signals[0]!.aborted).toBe(false);
    c2.abort();
    await h.clock.flush();
    expect(isPoolError(r2.error) && r2.error.code).toBe('ABORTED');
    expect(signals[0]!.aborted).toBe(true);
  });

  test('a caller without a signal keeps the shared request alive', async () => {
    const { h, signals, read } = setup();
    h.eps.a!.fallback = ok('0x7', 50);
    const c1 = new AbortController();
    start(read('eth_getBalance', undefined, { signal: c1.signal }));
    const r2 = start(read('eth_getBalance'));
    c1.abort();
    await h.clock.advance(50);
    expect(r2.value).toBe('0x7');
    expect(signals[0]!.aborted).toBe(false);
  });

  test('quorum reads coalesce with identical quorum reads only', async () => {
    const { h, read, upstream } = setup({ coalesce: ['eth_call'] }, ['a', 'b', 'c']);
    for (const n of ['a', 'b', 'c']) h.eps[n]!.fallback = ok('0x1', 5);
    const q = [start(read('eth_call', [], {}, 2)), start(read('eth_call', [], {}, 2))];
    const single = start(read('eth_call', []));
    await h.clock.advance(5);
    expect([...q.map((c) => c.value), single.value]).toEqual(['0x1', '0x1', '0x1']);
    expect(upstream()).toBe(3); // two legs for both quorum callers, one for the single read
  });

  test('a caller with a shorter deadline of its own than a request in flight does not wait on it: it leaves at its own with DEADLINE_EXCEEDED, the other gets the answer', async () => {
    const { h, reads, read, upstream } = setup();
    h.eps.a!.fallback = ok('0x5', 500);
    const long = start(read('eth_getBalance', ['0xabc', 'latest'], { deadlineMs: 1000 }));
    const short = start(read('eth_getBalance', ['0xabc', 'latest'], { deadlineMs: 100 }));
    await h.clock.advance(99);
    expect(short.settled).toBe(false);
    await h.clock.advance(1);
    expect(isPoolError(short.error) && short.error.code).toBe('DEADLINE_EXCEEDED');
    expect(long.settled).toBe(false);
    await h.clock.advance(400);
    expect(long.value).toBe('0x5');
    // Different deadlines, different requests (see the next test for why).
    expect(upstream()).toBe(2);
    expect(reads.stats().coalesce).toEqual({ started: 2, joined: 0, inFlight: 0 });
  });

  test('a caller with a longer deadline of its own does not share a request made under a shorter one (it would fail at that deadline)', async () => {
    const { h, read, upstream } = setup();
    h.eps.a!.fallback = ok('0x5', 500);
    const short = start(read('eth_getBalance', ['0xabc', 'latest'], { deadlineMs: 100 }));
    const long = start(read('eth_getBalance', ['0xabc', 'latest'], { deadlineMs: 1000 }));
    await h.clock.advance(100);
    expect(isPoolError(short.error) && short.error.code).toBe('DEADLINE_EXCEEDED');
    expect(long.settled).toBe(false);
    await h.clock.advance(400);
    expect(long.value).toBe('0x5');
    expect(upstream()).toBe(2);
  });

  test("callers on the same deadline share, the pool's default and the same number given alike", async () => {
    const h = harness(['a'], { deadlineMs: 300, maxAttempts: 1 });
    const reads = new RpcReads({ coalesce: ['eth_getBalance'] }, h.pool);
    const send = (exec: ExecuteOptions) => h.pool.execute(h.op, exec);
    h.eps.a!.fallback = ok('0x5', 50);
    const calls = [{}, { deadlineMs: 300 }, {}].map((exec) => start(reads.request('eth_getBalance', ['0xabc'], exec, undefined, send)));
    await h.clock.advance(50);
    expect(calls.map((c) => c.value)).toEqual(['0x5', '0x5', '0x5']);
    expect(reads.stats().coalesce).toEqual({ started: 1, joined: 2, inFlight: 0 });
  });

  test("a caller on the pool's deadline does not wait on a request made under a longer deadline of its own", async () => {
    const h = harness(['a'], { deadlineMs: 300, attemptTimeoutMs: 2000, maxAttempts: 1 });
    const reads = new RpcReads({ coalesce: ['eth_getBalance'] }, h.pool);
    const send = (exec: ExecuteOptions) => h.pool.execute(h.op, exec);
    h.eps.a!.fallback = hang();
    const long = start(reads.request('eth_getBalance', ['0xabc'], { deadlineMs: 1000 }, undefined, send));
    const plain = start(reads.request('eth_getBalance', ['0xabc'], {}, undefined, send));
    await h.clock.advance(300);
    expect(isPoolError(plain.error) && plain.error.code).toBe('DEADLINE_EXCEEDED');
    expect(long.settled).toBe(false);
    await h.clock.advance(700);
    expect(isPoolError(long.error) && long.error.code).toBe('DEADLINE_EXCEEDED');
  });

  test('with no deadline and no attempt timeout, a caller joins only a request started within the default attempt timeout (10 s): one never answered held every later caller of its key for good', async () => {
    const h = harness(['a'], { deadlineMs: Infinity, attemptTimeoutMs: Infinity, maxAttempts: 1 });
    const reads = new RpcReads({ coalesce: ['eth_getBalance'] }, h.pool);
    const send = (exec: ExecuteOptions) => h.pool.execute(h.op, exec);
    h.eps.a!.then(hang(), ok('0x5', 5));
    const lost = start(reads.request('eth_getBalance', ['0xabc'], {}, undefined, send));
    await h.clock.advance(9_999);
    const joiner = start(reads.request('eth_getBalance', ['0xabc'], {}, undefined, send));
    await h.clock.advance(1);
    const fresh = start(reads.request('eth_getBalance', ['0xabc'], {}, undefined, send));
    const again = start(reads.request('eth_getBalance', ['0xabc'], {}, undefined, send));
    await h.clock.advance(5);
    expect([fresh.value, again.value]).toEqual(['0x5', '0x5']);
    expect(lost.settled || joiner.settled).toBe(false);
    expect(reads.stats().coalesce).toMatchObject({ started: 2, joined: 2 });
  });

  test('with an attempt timeout (or a deadline) a request in flight is joined whatever its age: its own bounds end it', async () => {
    const h = harness(['a'], { deadlineMs: Infinity, attemptTimeoutMs: 60_000, maxAttempts: 1 });
    const reads = new RpcReads({ coalesce: ['eth_getBalance'] }, h.pool);
    const send = (exec: ExecuteOptions) => h.pool.execute(h.op, exec);
    h.eps.a!.fallback = ok('0x5', 30_000);
    const first = start(reads.request('eth_getBalance', ['0xabc'], {}, undefined, send));
    await h.clock.advance(20_000);
    const late = start(reads.request('eth_getBalance', ['0xabc'], {}, undefined, send));
    await h.clock.advance(10_000);
    expect([first.value, late.value]).toEqual(['0x5', '0x5']);
    expect(reads.stats().coalesce).toEqual({ started: 1, joined: 1, inFlight: 0 });
  });
});

describe('coalescing with listeners that act while the shared request starts', () => {
  // Found by a re-entrancy probe of the thirty-ninth session: the entry was put in the map only
  // once `start` had returned, and a caller's abort listener was added after it too.
  test('an identical read started inside the shared request’s attempt-start joins it instead of starting another', async () => {
    const { h, reads, read, upstream } = setup();
    h.eps.a!.fallback = ok('0x5', 20);
    const inner: Promise<unknown>[] = [];
    h.pool.on('attempt-start', () => {
      if (inner.length === 0) inner.push(read('eth_getBalance'));
    });
    const outer = read('eth_getBalance');
    await h.clock.advance(50);
    expect(await outer).toBe('0x5');
    expect(await inner[0]).toBe('0x5');
    expect(upstream()).toBe(1);
    expect(reads.stats().coalesce).toEqual({ started: 1, joined: 1, inFlight: 0 });
  });

  test('a caller whose signal aborts inside the shared request’s attempt-start leaves at once with ABORTED, and the request is aborted', async () => {
    const { h, signals, read } = setup();
    h.eps.a!.fallback = ok('0x5', 1_000);
    const ac = new AbortController();
    h.pool.on('attempt-start', () => ac.abort(new Error('left')));
    const call = start(read('eth_getBalance', undefined, { signal: ac.signal }));
    await h.clock.advance(0);
    expect(call.settled).toBe(true);
    expect(isPoolError(call.error) && call.error.code).toBe('ABORTED');
    expect(signals[0]?.aborted).toBe(true);
    await h.clock.advance(2_000);
    expect(h.pool.activeCalls).toBe(0);
  });
});

describe('coalescing and close()', () => {
  test('a read after close() fails CLOSED at once, though an identical one started before is still running (it joined it, and got its value, before the forty-eighth session)', async () => {
    const { h, read, upstream } = setup();
    h.eps.a!.fallback = ok('0x5', 100);
    const before = start(read('eth_getBalance'));
    await h.clock.advance(10);
    const closing = h.pool.close();
    const after = start(read('eth_getBalance'));
    await h.clock.advance(0);
    expect(after.error).toMatchObject({ code: 'CLOSED' });
    // The read that began first runs on to its answer, as every running attempt does.
    await h.clock.advance(100);
    await closing;
    expect(before.value).toBe('0x5');
    expect(upstream()).toBe(1);
  });

  test("a filter method after close() fails CLOSED too, where the filter's node left the set (answered 'filter not found' here, before)", async () => {
    const { h, read } = setup();
    h.eps.a!.fallback = ok('0x7');
    const id = await read('eth_newFilter', [{}]);
    h.pool.setEndpoints([{ name: 'b', conn: h.eps.b! }]);
    const open = await read('eth_getFilterChanges', [id]).catch((e: unknown) => e);
    expect(open).toMatchObject({ code: -32000 });
    await h.pool.close();
    const closed = await read('eth_getFilterChanges', [id]).catch((e: unknown) => e);
    expect(closed).toMatchObject({ code: 'CLOSED' });
  });
});
