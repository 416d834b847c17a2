/**
 * Quorum reads (src/rpc/quorum.ts through RpcReads) on the fake clock: a real Pool over
 * scripted endpoints, so each leg gets the pool's selection, breakers and retries.
 */
import { describe, expect, test } from 'vitest';
import { isPoolError, PoolError, type AttemptContext, type ExecuteOptions, type PoolOptions } from '../src/index.js';
import { RpcReads, type RpcReadOptions } from '../src/rpc/reads.js';
import { isEndpointTaken } from '../src/rpc/quorum.js';
import { QuorumError } from '../src/rpc/quorum-error.js';
import { classify, fail, hang, harness, ok, start, type FakeEndpoint, type Harness } from './support.js';
import { readHarness } from './helpers/reads.js';

function setup(names: string[], options: RpcReadOptions = {}, voteOf?: (e: unknown) => string | undefined, poolOptions: Partial<PoolOptions<FakeEndpoint>> = {}) {
  const h = harness(names, { classify: (e) => (isEndpointTaken(e) ? 'unsupported' : classify(e)), ...poolOptions });
  const reads = new RpcReads(options, h.pool, voteOf);
  /** Endpoints each upstream request went to, in order. */
  const sent: string[] = [];
  const signals: AbortSignal[] = [];
  const send = (exec: ExecuteOptions, guard?: (endpoint: string) => void) =>
    h.pool.execute(async (ep: FakeEndpoint, ctx: AttemptContext) => {
      guard?.(ctx.endpoint);
      sent.push(ctx.endpoint);
      signals.push(ctx.signal);
      return h.op(ep, ctx);
    }, exec);
  const read = (method: string, quorum?: number, exec: ExecuteOptions = {}) => reads.request(method, [], exec, quorum, send);
  return { h, reads, sent, signals, read };
}

async function settle(h: Harness, ms = 0) {
  await h.clock.advance(ms);
}

describe('quorum reads', () => {
  test('all agree: resolves after exactly `need` distinct endpoints answer', async () => {
    const { h, sent, read } = setup(['a', 'b', 'c']);
    for (const n of ['a', 'b', 'c']) h.eps[n]!.fallback = ok('0x10');
    const r = start(read('eth_blockNumber', 2));
    await settle(h);
    expect(r.value).toBe('0x10');
    expect(sent).toEqual(['a', 'b']);
  });

  test('one disagrees: a third endpoint is asked and the majority wins', async () => {
    const { h, sent, read } = setup(['a', 'b', 'c']);
    h.eps.a!.fallback = ok('0x10');
    h.eps.b!.fallback = ok('0x11');
    h.eps.c!.fallback = ok('0x10');
    const r = start(read('eth_getBalance', 2));
    await settle(h);
    expect(r.value).toBe('0x10');
    expect(sent).toEqual(['a', 'b', 'c']);
  });

  test('nobody agrees: QUORUM_NOT_MET carrying every answer, URLs redacted', async () => {
    const { h, read } = setup(['a', 'b', 'c']);
    h.eps.a!.fallback = ok('0x1');
    h.eps.b!.fallback = ok({ see: 'https://rpc.example/v2/SECRETKEY' });
    h.eps.c!.fallback = fail('transient');
    const r = start(read('eth_getBalance', 2, { retry: 'none' }));
    await settle(h);
    const e = r.error as QuorumError;
    expect(isPoolError(e)).toBe(true);
    expect(e.code).toBe('QUORUM_NOT_MET');
    expect(e.needed).toBe(2);
    expect(e.bestWeight).toBe(1);
    expect(e.message).toContain('eth_getBalance');
    expect(e.answers.map((a) => [a.endpoint, a.kind])).toEqual([
      ['a', 'result'],
      ['b', 'result'],
      ['c', 'failed'],
    ]);
    expect(JSON.stringify(e.answers)).not.toContain('SECRETKEY');
    expect(e.answers[1]!.value).toEqual({ see: '<url>' });
  });

  test('weights count toward the quorum, like FallbackProvider', async () => {
    const { h, sent, read } = setup(['a', 'b', 'c'], { quorum: { weights: { b: 2 } } });
    h.eps.a!.fallback = ok('x');
    h.eps.b!.fallback = ok('y');
    h.eps.c!.fallback = ok('y');
    // a (1) and b (2) are asked: 3 in flight >= 3. They disagree (best 2), so c is asked: y weighs 3.
    const r = start(read('eth_call', 3));
    await settle(h);
    expect(r.value).toBe('y');
    expect(sent).toEqual(['a', 'b', 'c']);
  });

  test('a heavy endpoint alone can make the quorum', async () => {
    const { h, sent, read } = setup(['a', 'b'], { quorum: { weights: { a: 2 } } });
    h.eps.a!.fallback = ok('x');
    const r = start(read('eth_call', 2));
    await settle(h);
    expect(r.value).toBe('x');
    expect(sent).toEqual(['a']);
  });

  test('a failing leg retries through the pool on an endpoint no other leg holds', async () => {
    const { h, sent, read } = setup(['a', 'b', 'c']);
    h.eps.a!.fallback = fail('transient');
    h.eps.b!.fallback = ok('v');
    h.eps.c!.fallback = ok('v');
    const r = start(read('eth_chainId', 2));
    await settle(h, 1_000);
    expect(r.value).toBe('v');
    // a failed; its leg's retry skipped b (held by the other leg) without sending and went to c.
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(h.eps.b!.calls).toBe(1);
  });

  test("a leg's retry on the endpoint it holds already is no collision (the only endpoint its exclusions leave it)", async () => {
    const { h, sent, read } = setup(['a', 'b'], {}, undefined, { maxAttempts: 3 });
    h.eps.a!.fallback = ok('v');
    h.eps.b!.then(fail('transient'));
    h.eps.b!.fallback = ok('v');
    const r = start(read('eth_chainId', 2));
    await settle(h, 1_000);
    expect(r.value).toBe('v');
    expect(sent).toEqual(['a', 'b', 'b']);
  });

  test("legs queued for a permit that collide on one endpoint are no stuck read (retry 'none': the colliding leg ends, another is asked)", async () => {
    const { h, sent, read } = setup(['a', 'b', 'c'], {}, undefined, { maxConcurrentCalls: 1 });
    for (const n of ['a', 'b', 'c']) h.eps[n]!.fallback = ok('v', 10);
    // Another call holds the one permit: both legs wait for it with nothing excluded, and both pick a.
    const blocker = start(h.pool.execute((ep: FakeEndpoint, ctx: AttemptContext) => h.op(ep, ctx), { pin: 'c' }));
    const r = start(read('eth_chainId', 2, { retry: 'none' }));
    await settle(h, 1_000);
    expect(blocker.value).toBe('v');
    expect(r.error).toBeUndefined();
    expect(r.value).toBe('v');
    expect(sent).toEqual(['a', 'b']);
  });

  test('a leg that left out the endpoints to avoid, and found the others open, is followed by one that may use them', async () => {
    // Head routing would rather not use a (behind): asked only once no other endpoint is left.
    const { h, reads, sent, send } = readHarness(['a', 'b', 'c'], {}, { breaker: { threshold: 1, cooldownMs: 60_000 } }, () => ['a']);
    h.eps.a!.fallback = ok('v');
    for (const n of ['b', 'c']) {
      h.eps[n]!.then(fail('transient'));
      await h.pool.execute((ep: FakeEndpoint, ctx: AttemptContext) => h.op(ep, ctx), { pin: n }).catch(() => {});
    }
    expect(h.pool.breakerState('b')).toMatchObject({ state: 'open' });
    expect(h.pool.breakerState('c')).toMatchObject({ state: 'open' });
    // The first leg leaves a out, and b and c are open: it reaches no endpoint. Before, the read
    // failed at once (QUORUM_NOT_MET), a never asked.
    const r = start(reads.request('eth_chainId', [], {}, 1, send));
    await settle(h);
    expect(r.error).toBeUndefined();
    expect(r.value).toBe('v');
    expect(sent).toEqual(['a']);
  });

  test('head routing is asked what to avoid once per launch of legs, not once per endpoint (a read of three legs cost 167 ms of CPU at 1,000 endpoints)', async () => {
    const names = Array.from({ length: 60 }, (_, i) => `n${i}`);
    let asked = 0;
    // n0 and n1 are behind: the first legs go to n2, n3 and n4.
    const unfit = () => (asked++, ['n0', 'n1']);
    const { h, reads, sent, send } = readHarness(names, {}, {}, unfit);
    for (const n of names) h.eps[n]!.fallback = ok('v');
    const r = start(reads.request('eth_chainId', [], {}, 3, send));
    await settle(h);
    expect(r.value).toBe('v');
    expect(sent).toEqual(['n2', 'n3', 'n4']);
    // Before, 3 legs x 58 endpoints fresh = 174 questions.
    expect(asked).toBeLessThanOrEqual(2);
    expect(asked).toBeGreaterThanOrEqual(1);
  });

  test('a user equals decides agreement', async () => {
    const { h, read } = setup(['a', 'b'], { quorum: { equals: (x, y) => (x as { n: number }).n === (y as { n: number }).n } });
    h.eps.a!.fallback = ok({ n: 1, at: 5 });
    h.eps.b!.fallback = ok({ n: 1, at: 6 });
    const r = start(read('eth_getBlockByNumber', 2));
    await settle(h);
    expect(r.value).toEqual({ n: 1, at: 5 });
  });

  test('with the default equality the same two answers disagree', async () => {
    const { h, read } = setup(['a', 'b']);
    h.eps.a!.fallback = ok({ n: 1, at: 5 });
    h.eps.b!.fallback = ok({ n: 1, at: 6 });
    const r = start(read('eth_getBlockByNumber', 2));
    await settle(h);
    expect((r.error as QuorumError).code).toBe('QUORUM_NOT_MET');
  });

  test('answers that differ only in the order of their keys agree (clients order a block\'s fields differently)', async () => {
    const { h, read } = setup(['a', 'b', 'c']);
    // One node sorts the fields (Go maps), another keeps its own order, at every depth.
    h.eps.a!.fallback = ok({ hash: '0xa', number: '0x1', transactions: [{ from: '0x1', to: '0x2' }] });
    h.eps.b!.fallback = ok({ number: '0x1', transactions: [{ to: '0x2', from: '0x1' }], hash: '0xa' });
    h.eps.c!.fallback = ok({ hash: '0xb', number: '0x1', transactions: [] });
    const r = start(read('eth_getBlockByNumber', 2));
    await settle(h);
    expect(r.value).toEqual({ hash: '0xa', number: '0x1', transactions: [{ from: '0x1', to: '0x2' }] });
    // Order inside an array still matters: these two disagree.
    const two = setup(['a', 'b']);
    two.h.eps.a!.fallback = ok(['0x1', '0x2']);
    two.h.eps.b!.fallback = ok(['0x2', '0x1']);
    const r2 = start(two.read('eth_getLogs', 2));
    await settle(two.h);
    expect((r2.error as QuorumError).code).toBe('QUORUM_NOT_MET');
  });

  test('a field only one answer has is left out (clients differ in optional fields: totalDifficulty, a legacy transaction\'s chainId); a field both have must be equal', async () => {
    const block = { hash: '0xa', number: '0x1', transactions: [{ hash: '0xt', nonce: '0x0' }] };
    const withExtras = { ...block, totalDifficulty: '0xc70d815d562d3cfa955', transactions: [{ hash: '0xt', nonce: '0x0', chainId: '0x1' }] };
    const { h, sent, read } = setup(['a', 'b', 'c']);
    h.eps.a!.fallback = ok(withExtras);
    h.eps.b!.fallback = ok(block);
    h.eps.c!.fallback = ok(block);
    const r = start(read('eth_getBlockByNumber', 2));
    await settle(h);
    expect(r.value).toEqual(withExtras);
    expect(sent).toEqual(['a', 'b']);
    for (const [x, y] of [
      [withExtras, { ...block, totalDifficulty: '0x1' }], // both have it: must be equal
      [block, { ...block, transactions: [{ hash: '0xt', nonce: '0x1' }] }], // at any depth
      [block, { ...block, transactions: [] }], // arrays: same length
      [block, null], // a block and none
      [['0x1'], { 0: '0x1' }], // an array is not an object
    ] as const) {
      const two = setup(['a', 'b']);
      two.h.eps.a!.fallback = ok(x);
      two.h.eps.b!.fallback = ok(y);
      const r2 = start(two.read('eth_getBlockByNumber', 2));
      await settle(two.h);
      expect((r2.error as QuorumError).code, JSON.stringify([x, y])).toBe('QUORUM_NOT_MET');
    }
  });

  test('eth_blockNumber: heights one block apart agree (a node saw the newest block first), two apart do not', async () => {
    const { h, sent, read } = setup(['a', 'b', 'c']);
    h.eps.a!.fallback = ok('0x10');
    h.eps.b!.fallback = ok('0xf');
    h.eps.c!.fallback = ok('0x10');
    const r = start(read('eth_blockNumber', 2));
    await settle(h);
    expect(r.value).toBe('0x10');
    expect(sent).toEqual(['a', 'b']);
    // Two blocks apart: a third node is asked.
    const far = setup(['a', 'b', 'c']);
    far.h.eps.a!.fallback = ok('0x10');
    far.h.eps.b!.fallback = ok('0x12');
    far.h.eps.c!.fallback = ok('0x11');
    const r2 = start(far.read('eth_blockNumber', 2));
    await settle(far.h);
    expect(r2.value).toBe('0x10');
    expect(far.sent).toEqual(['a', 'b', 'c']);
    // Only for eth_blockNumber, only for quantities, and not when the user decides.
    for (const [method, x, y, options] of [
      ['eth_getBalance', '0x10', '0x11', {}],
      ['eth_blockNumber', '0x10', 17, {}],
      ['eth_blockNumber', 'pending', 'pendinh', {}],
      ['eth_blockNumber', '0x10', '0x11', { quorum: { equals: (p: unknown, q: unknown) => p === q } }],
    ] as const) {
      const two = setup(['a', 'b'], options);
      two.h.eps.a!.fallback = ok(x);
      two.h.eps.b!.fallback = ok(y);
      const r3 = start(two.read(method, 2));
      await settle(two.h);
      expect((r3.error as QuorumError).code, `${method} ${x} ${String(y)}`).toBe('QUORUM_NOT_MET');
    }
  });

  test('nodes answering the same error make a quorum on that error', async () => {
    const voteOf = (e: unknown) => (isPoolError(e) && e.code === 'PERMANENT' ? 'revert' : undefined);
    const { h, read } = setup(['a', 'b', 'c'], {}, voteOf);
    h.eps.a!.fallback = fail('permanent');
    h.eps.b!.fallback = fail('permanent');
    const r = start(read('eth_call', 2));
    await settle(h);
    expect(isPoolError(r.error) && r.error.code).toBe('PERMANENT');
  });

  test('a hanging endpoint costs one stall, not an attempt timeout', async () => {
    const { h, sent, read } = setup(['a', 'b', 'c'], { quorum: { stallMs: 400 } });
    h.eps.a!.fallback = hang(true);
    h.eps.b!.fallback = ok('v');
    h.eps.c!.fallback = ok('v');
    const r = start(read('eth_chainId', 2));
    await settle(h, 399);
    expect(r.settled).toBe(false);
    await settle(h, 1);
    expect(r.value).toBe('v');
    expect(sent).toEqual(['a', 'b', 'c']);
  });

  test('settling aborts the legs still running', async () => {
    const { h, signals, read } = setup(['a', 'b', 'c'], { quorum: { stallMs: 0 } });
    h.eps.a!.fallback = ok('v', 10);
    h.eps.b!.fallback = ok('v', 10);
    h.eps.c!.fallback = hang(true);
    const r = start(read('eth_chainId', 2));
    await settle(h, 10);
    expect(r.value).toBe('v');
    expect(signals.map((s) => s.aborted)).toEqual([false, false, true]);
  });

  test("the caller's abort rejects with ABORTED and aborts every leg", async () => {
    const { h, signals, read } = setup(['a', 'b']);
    h.eps.a!.fallback = hang(true);
    h.eps.b!.fallback = hang(true);
    const ac = new AbortController();
    const r = start(read('eth_chainId', 2, { signal: ac.signal }));
    await settle(h, 10);
    ac.abort();
    await settle(h);
    expect(isPoolError(r.error) && r.error.code).toBe('ABORTED');
    expect(signals.every((s) => s.aborted)).toBe(true);
  });

  test('more weight than the endpoints have fails at once, with nothing sent', async () => {
    const { h, sent, read } = setup(['a', 'b']);
    const r = start(read('eth_chainId', 3));
    await settle(h);
    expect((r.error as QuorumError).code).toBe('QUORUM_NOT_MET');
    expect(sent).toEqual([]);
  });

  test('a leg the pool cannot place ends the read: no endless relaunching', async () => {
    const { h, reads } = setup(['a', 'b', 'c']);
    // Each leg fails before reaching an endpoint (as every one disabled would).
    let legs = 0;
    const nowhere = () => (legs++, Promise.reject(new PoolError('NO_ENDPOINT', 'no endpoint can take the call')));
    const r = start(reads.request('eth_chainId', [], {}, 2, nowhere));
    await settle(h);
    const e = r.error as QuorumError;
    expect(e.code).toBe('QUORUM_NOT_MET');
    expect(isPoolError(e.cause) && e.cause.code).toBe('NO_ENDPOINT');
    expect(e.attempts).toBe(2); // the two legs first launched, none after
    expect(legs).toBe(2);
  });

  test("the caller's exclude is honoured by every leg", async () => {
    const { h, sent, read } = setup(['a', 'b', 'c']);
    for (const n of ['a', 'b', 'c']) h.eps[n]!.fallback = ok('v');
    const r = start(read('eth_chainId', 2, { exclude: ['a'] }));
    await settle(h);
    expect(r.value).toBe('v');
    expect(sent).toEqual(['b', 'c']);
  });

  test('per-method quorum applies to that method only', async () => {
    const { h, sent, read } = setup(['a', 'b'], { quorum: { methods: { eth_call: 2 } } });
    h.eps.a!.fallback = ok('v');
    h.eps.b!.fallback = ok('v');
    const r1 = start(read('eth_call'));
    const r2 = start(read('eth_chainId'));
    await settle(h);
    expect(r1.value).toBe('v');
    expect(r2.value).toBe('v');
    expect(sent).toEqual(['a', 'b', 'a']);
  });
});

describe('never for sends', () => {
  test.each(['eth_sendRawTransaction', 'eth_sendTransaction', 'personal_sign', 'eth_newFilter', 'evm_mine'])('%s: refused in the options', (method) => {
    const h = harness(['a']);
    expect(() => new RpcReads({ quorum: { methods: { [method]: 2 } } }, h.pool)).toThrow(/INVALID|quorum/);
    expect(() => new RpcReads({ coalesce: [method] }, h.pool)).toThrow(/coalesce/);
  });

  test('per call: the request is rejected with INVALID_OPTIONS and nothing is sent', async () => {
    const { h, sent, read } = setup(['a', 'b']);
    const r = start(read('eth_sendRawTransaction', 2));
    await settle(h);
    expect(isPoolError(r.error) && r.error.code).toBe('INVALID_OPTIONS');
    expect(sent).toEqual([]);
  });

  test("a leg started late gets what is left of the read's deadline, not a deadline of its own", async () => {
    const { h, read } = setup(['a', 'b', 'c'], { quorum: { stallMs: 50 } });
    h.eps['a']!.fallback = fail('transient', 47);
    h.eps['b']!.fallback = fail('transient', 47);
    h.eps['c']!.fallback = hang();
    const r = start(read('eth_blockNumber', 2, { deadlineMs: 100, retry: 'none', attemptTimeoutMs: 1000 }));
    await settle(h, 100);
    expect(r.settled).toBe(true);
    expect(isPoolError(r.error) && r.error.code).toBe('QUORUM_NOT_MET');
  });

  test("on the pool's default deadline, the read as a whole ends at that deadline, not each leg from its own start", async () => {
    const { h, read } = setup(['a', 'b', 'c'], { quorum: { stallMs: 50 } }, undefined, { deadlineMs: 100, maxAttempts: 1, attemptTimeoutMs: 1000 });
    h.eps['a']!.fallback = fail('transient', 47);
    h.eps['b']!.fallback = fail('transient', 47);
    h.eps['c']!.fallback = hang();
    const r = start(read('eth_blockNumber', 2));
    await settle(h, 99);
    expect(r.settled).toBe(false);
    await settle(h, 1);
    expect(r.settled).toBe(true);
    expect(isPoolError(r.error) && r.error.code).toBe('QUORUM_NOT_MET');
    expect(h.clock.pendingTimers).toBe(0);
  });

  test('endpoints named like members of Object.prototype weigh 1 each, as any other', async () => {
    // Before: the weights were looked up on a plain object, and `constructor` weighed Object itself.
    for (const weights of [undefined, { toString: 2 }]) {
      const { h, read } = setup(['constructor', 'toString', 'valueOf'], weights === undefined ? {} : { quorum: { weights } });
      for (const n of ['constructor', 'toString', 'valueOf']) h.eps[n]!.fallback = ok('0x10');
      const r = start(read('eth_getBalance', weights === undefined ? 2 : 3));
      await settle(h);
      expect(r.error).toBeUndefined();
      expect(r.value).toBe('0x10');
    }
  });
});

describe('what a quorum error shows of an answer', () => {
  test("a node's own `__proto__` key stays a key of the copy, URLs in it redacted, the copy's prototype untouched", async () => {
    const { h, read } = setup(['a', 'b']);
    h.eps.a!.fallback = ok(JSON.parse('{"__proto__": {"rpc": "https://node.example/v2/SECRETKEY"}, "n": 1}'));
    h.eps.b!.fallback = ok('0x2');
    const r = start(read('eth_getBalance', 2, { retry: 'none' }));
    await settle(h);
    expect(r.error).toBeInstanceOf(QuorumError);
    const shown = (r.error as QuorumError).answers.find((a) => a.endpoint === 'a')!.value as Record<string, unknown>;
    expect(Object.getPrototypeOf(shown)).toBe(Object.prototype);
    expect(Object.keys(shown)).toEqual(['__proto__', 'n']);
    expect(JSON.stringify(shown)).not.toContain('SECRETKEY');
    expect(shown['__proto__']).toEqual({ rpc: '<url>' });
  });
});

describe('a quorum read and close()', () => {
  test('a read after close() fails CLOSED, as the pool\'s own calls do, even where the weights could never meet it', async () => {
    const { h, read } = setup(['a', 'b'], { quorum: { weights: { a: 0, b: 1 } } });
    h.eps.a!.fallback = ok('0x1');
    h.eps.b!.fallback = ok('0x1');
    const before = await read('eth_chainId', 2).catch((e: unknown) => e);
    expect(before).toMatchObject({ code: 'QUORUM_NOT_MET' });
    await h.pool.close();
    for (const need of [1, 2]) {
      const after = await read('eth_chainId', need).catch((e: unknown) => e);
      expect(after).toMatchObject({ code: 'CLOSED' });
    }
  });

  test('a read whose leg after close() is refused CLOSED fails CLOSED, not QUORUM_NOT_MET (quorum generator, close mid-run)', async () => {
    const { h, sent, reads } = setup(['a', 'b', 'c', 'd'], { quorum: { stallMs: 100 } }, undefined, { strategy: 'ordered' });
    h.eps.a!.fallback = hang();
    h.eps.b!.fallback = hang();
    h.eps.c!.fallback = ok('0x1');
    h.eps.d!.fallback = ok('0x1');
    // Legs as the read launches them (each a pool call; one refused by the closed pool sends nothing).
    let legs = 0;
    const send = (exec: ExecuteOptions, guard?: (endpoint: string) => void) => (
      legs++,
      h.pool.execute(async (ep: FakeEndpoint, ctx: AttemptContext) => {
        guard?.(ctx.endpoint);
        sent.push(ctx.endpoint);
        return h.op(ep, ctx);
      }, exec)
    );
    const r = start(reads.request('eth_chainId', [], {}, 2, send));
    await settle(h, 50);
    const closed = h.pool.close({ abortAfterMs: 200 });
    // At 100 ms a and b stall: the leg for c is refused by the closed pool. At 250 ms a and b are abandoned.
    await settle(h, 300);
    await closed;
    expect(sent).toEqual(['a', 'b']);
    expect(r.error).toMatchObject({ code: 'CLOSED' });
    // After the first leg the closed pool refused, none more (d's would be refused too).
    expect(legs).toBe(3);
  });
});
