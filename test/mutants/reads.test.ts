/**
 * The RPC read layer's edges (src/rpc/reads.ts) that the twenty-eighth session's mutation run
 * found held by no test: what a pinned request skips, which reads share a request, and what a
 * quorum read refuses before it starts.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, test } from 'vitest';
import { isPoolError, type AttemptContext, type ExecuteOptions } from '../../src/index.js';
import { RpcReads, type RpcReadOptions } from '../../src/rpc/reads.js';
import { isEndpointTaken, quorumRead } from '../../src/rpc/quorum.js';
import { FakeClock } from '../../src/testing/index.js';
import { classify, fail, harness, ok, start, type FakeEndpoint } from '../support.js';

function setup(options: RpcReadOptions, unfit?: (method: string, params: unknown) => readonly string[]) {
  const h = harness(['a', 'b', 'c'], { classify: (e) => (isEndpointTaken(e) ? 'unsupported' : classify(e)), maxAttempts: 1, strategy: 'round-robin' });
  const reads = new RpcReads(options, h.pool, undefined, unfit);
  const sent: { endpoint: string; exec: ExecuteOptions }[] = [];
  const send = (exec: ExecuteOptions, guard?: (endpoint: string) => void) =>
    h.pool.execute(async (ep: FakeEndpoint, ctx: AttemptContext) => {
      guard?.(ctx.endpoint);
      sent.push({ endpoint: ctx.endpoint, exec });
      return h.op(ep, ctx);
    }, exec);
  const read = (method: string, params: unknown[] = ['0xabc', 'latest'], exec: ExecuteOptions = {}, quorum?: number) => reads.request(method, params, exec, quorum, send);
  return { h, reads, sent, read };
}

const refusal = async (p: Promise<unknown>): Promise<{ code: string | undefined; field: unknown; message: string }> => {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isPoolError(e)).toBe(true);
  const pe = e as { code: string; field?: unknown; message: string };
  return { code: pe.code, field: pe.field, message: pe.message };
};

describe('a pinned request is not routed', () => {
  test('it goes to its endpoint though that one is unfit; an unpinned one leaves it out', async () => {
    const { h, read, sent } = setup({}, () => ['a']);
    h.eps.a!.fallback = ok('0x1');
    h.eps.b!.fallback = ok('0x2');
    h.eps.c!.fallback = ok('0x3');
    await expect(read('eth_getBalance', ['0xabc', 'latest'], { pin: 'a' })).resolves.toBe('0x1');
    expect(sent.map((s) => s.endpoint)).toEqual(['a']);
    expect(sent[0]!.exec.exclude).toBeUndefined();
    for (let i = 0; i < 4; i++) await read('eth_getBalance');
    expect(sent.slice(1).map((s) => s.endpoint)).not.toContain('a');
    // Avoided (asked last), not excluded, since the fiftieth session; pinned: neither.
    expect(sent[1]!.exec.exclude).toBeUndefined();
    expect(['a', 'b'].map((n) => sent[1]!.exec.avoid?.(n))).toEqual([true, false]);
    expect(sent[0]!.exec.avoid).toBeUndefined();
  });

  test('nothing unfit: the options are handed on as they came', async () => {
    const { h, read, sent } = setup({}, () => []);
    h.eps.a!.fallback = ok('0x1');
    const exec = { deadlineMs: 5000 };
    await read('eth_getBalance', ['0xabc', 'latest'], exec);
    expect(sent[0]!.exec).toBe(exec);
  });
});

describe('quorum refusals', () => {
  test('a quorum on a pinned request', async () => {
    const { read, sent } = setup({ quorum: { methods: { eth_getBalance: 2 } } });
    const r = await refusal(read('eth_getBalance', ['0xabc', 'latest'], { pin: 'a' }));
    expect(r).toMatchObject({ code: 'INVALID_OPTIONS', field: 'quorum' });
    expect(r.message).toContain('no quorum on a pinned request');
    expect(sent).toEqual([]);
  });

  test('a per-call quorum on a send, and a per-call quorum that is no weight', async () => {
    const { read, sent } = setup({});
    const send = await refusal(read('eth_sendRawTransaction', ['0x00'], {}, 2));
    expect(send).toMatchObject({ code: 'INVALID_OPTIONS', field: 'quorum' });
    expect(send.message).toContain('a read method (quorum is never used for sends)');
    for (const bad of [0, -1, Number.NaN, Infinity, '2' as unknown as number]) {
      expect(await refusal(read('eth_getBalance', ['0xabc', 'latest'], {}, bad))).toMatchObject({ code: 'INVALID_OPTIONS', field: 'quorum' });
    }
    expect(sent).toEqual([]);
  });

  test.each([
    ['deadlineMs', { deadlineMs: 0 }],
    ['deadlineMs', { deadlineMs: -5 }],
    ['deadlineMs', { deadlineMs: '100' }],
    ['exclude', { exclude: 'a' }],
    ['exclude', { exclude: [1] }],
  ])('a quorum read with a bad %s (%j) is refused before any leg', async (field, exec) => {
    const { read, sent } = setup({ quorum: { methods: { eth_getBalance: 2 } } });
    const r = await refusal(read('eth_getBalance', ['0xabc', 'latest'], exec as unknown as ExecuteOptions));
    expect(r).toMatchObject({ code: 'INVALID_OPTIONS', field });
    expect(sent).toEqual([]);
  });

  test('a quorum read with a deadline of Infinity and a list of names runs', async () => {
    const { h, read } = setup({ quorum: { methods: { eth_getBalance: 2 } } });
    for (const n of ['a', 'b', 'c']) h.eps[n]!.fallback = ok('0x9');
    await expect(read('eth_getBalance', ['0xabc', 'latest'], { deadlineMs: Infinity, exclude: ['c'] })).resolves.toBe('0x9');
  });
});

describe('which reads share a request', () => {
  test.each([
    ['retry', { retry: 'none' }],
    ['attemptTimeoutMs', { attemptTimeoutMs: 500 }],
    ['backoff', { backoff: { initialMs: 5 } }],
    ['breakerMode', { breakerMode: 'wait' }],
    ['exclude', { exclude: ['c'] }],
  ])('a read with its own %s does not join one without, nor one without it join it', async (_field, own) => {
    const { h, read, sent } = setup({ coalesce: ['eth_getBalance'] });
    for (const n of ['a', 'b', 'c']) h.eps[n]!.fallback = ok('0x7', 20);
    const calls = [read('eth_getBalance'), read('eth_getBalance', undefined, own as ExecuteOptions), read('eth_getBalance', undefined, own as ExecuteOptions), read('eth_getBalance')].map(start);
    await h.clock.advance(20);
    expect(calls.map((c) => c.value)).toEqual(['0x7', '0x7', '0x7', '0x7']);
    expect(sent).toHaveLength(2);
  });

  test('names that join with a comma are not the same exclude list', async () => {
    const h = harness(['a', 'b', 'a,b'], { maxAttempts: 1 });
    const reads = new RpcReads({ coalesce: ['eth_getBalance'] }, h.pool);
    let upstream = 0;
    const send = (exec: ExecuteOptions) =>
      h.pool.execute(async (ep: FakeEndpoint, ctx: AttemptContext) => {
        upstream++;
        return h.op(ep, ctx);
      }, exec);
    for (const n of ['a', 'b', 'a,b']) h.eps[n]!.fallback = ok('0x7', 20);
    start(reads.request('eth_getBalance', ['0xabc', 'latest'], { exclude: ['a', 'b'] }, undefined, send));
    start(reads.request('eth_getBalance', ['0xabc', 'latest'], { exclude: ['a,b'] }, undefined, send));
    await h.clock.advance(20);
    expect(upstream).toBe(2);
  });
});

describe('isPlain', () => {
  test('a method with a quorum, one coalesced and a filter method are not plain; others are', () => {
    const reads = new RpcReads({ quorum: { methods: { eth_call: 2 } }, coalesce: ['eth_getBalance'] }, harness(['a']).pool);
    expect(reads.isPlain('eth_call')).toBe(false);
    expect(reads.isPlain('eth_getBalance')).toBe(false);
    expect(reads.isPlain('eth_getFilterChanges')).toBe(false);
    expect(reads.isPlain('eth_chainId')).toBe(true);
    const bare = new RpcReads({}, harness(['a']).pool);
    expect(bare.isPlain('eth_call')).toBe(true);
    expect(bare.isPlain('eth_getBalance')).toBe(true);
    expect(bare.isPlain('eth_getFilterChanges')).toBe(false);
    const onlyCoalesce = new RpcReads({ coalesce: ['eth_getBalance'] }, harness(['a']).pool);
    expect(onlyCoalesce.isPlain('eth_call')).toBe(true);
    expect(onlyCoalesce.isPlain('eth_getBalance')).toBe(false);
    const onlyQuorum = new RpcReads({ quorum: { methods: { eth_call: 2 } } }, harness(['a']).pool);
    expect(onlyQuorum.isPlain('eth_call')).toBe(false);
    expect(onlyQuorum.isPlain('eth_getBalance')).toBe(true);
  });

  test.each([[[5]], [[null]], [['eth_sendRawTransaction']]])('coalesce %j is refused naming coalesce[0]', (c) => {
    expect(() => new RpcReads({ coalesce: c as string[] }, harness(['a']).pool)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'coalesce[0]' }));
  });
});

describe('a quorum whose legs answer from no known endpoint', () => {
  test('ends, not met, after the legs it launched at first (it used to launch legs without end)', async () => {
    let legs = 0;
    const read = quorumRead<string>({
      method: 'eth_getBalance',
      need: 2,
      endpoints: () => ['a', 'b', 'c'],
      weightOf: () => 1,
      stallMs: 400,
      clock: new FakeClock(0),
      exec: {},
      // Never calls guard: the answer cannot be put down to an endpoint.
      leg: () => {
        legs++;
        if (legs > 50) throw new Error('still launching');
        return Promise.resolve('0x1');
      },
    });
    await expect(read).rejects.toMatchObject({ code: 'QUORUM_NOT_MET' });
    expect(legs).toBe(2);
  });
});

describe('coalescing: callers that leave', () => {
  test('once every caller of a shared request has left, an identical read starts a request of its own (the left one may still be running)', async () => {
    const { h, read, sent } = setup({ coalesce: ['eth_getBalance'] });
    h.eps.a!.then({ hang: true });
    h.eps.b!.fallback = ok('0x2', 5);
    const c1 = new AbortController();
    const c2 = new AbortController();
    const first = [start(read('eth_getBalance', undefined, { signal: c1.signal })), start(read('eth_getBalance', undefined, { signal: c2.signal }))];
    await h.clock.advance(1);
    c1.abort('one');
    c2.abort('two');
    // At once, before the left request has ended.
    const again = start(read('eth_getBalance'));
    await h.clock.advance(10);
    expect(first.map((c) => (c.error as { code?: string }).code)).toEqual(['ABORTED', 'ABORTED']);
    expect(again.value).toBe('0x2');
    expect(sent).toHaveLength(2);
  });

  test('a caller whose shared request settled leaves no abort listener on its signal', async () => {
    const { h, read } = setup({ coalesce: ['eth_getBalance'] });
    h.eps.a!.fallback = ok('0x1', 5);
    h.eps.b!.fallback = ok('0x1', 5);
    const ok1 = new AbortController();
    const ok2 = new AbortController();
    const calls = [start(read('eth_getBalance', undefined, { signal: ok1.signal })), start(read('eth_getBalance', undefined, { signal: ok2.signal }))];
    await h.clock.advance(10);
    expect(calls.map((c) => c.value)).toEqual(['0x1', '0x1']);
    expect(getEventListeners(ok1.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(ok2.signal, 'abort')).toHaveLength(0);
    // And when it failed.
    h.eps.a!.fallback = fail('permanent', 5);
    h.eps.b!.fallback = fail('permanent', 5);
    const bad = new AbortController();
    const failed = start(read('eth_getBalance', undefined, { signal: bad.signal }));
    await h.clock.advance(10);
    expect(failed.error).toBeDefined();
    expect(getEventListeners(bad.signal, 'abort')).toHaveLength(0);
  });
});
