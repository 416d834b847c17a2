/**
 * A node-signed send (`eth_sendTransaction`: the node signs with its own key and picks the
 * nonce) is never sent to a second node once it may have reached one. A new user's repro
 * (t02-sendtx-dup): node `a` took the transaction and dropped the connection before
 * answering; both adapters then sent it to `b`, which made a second transfer, and the call
 * resolved with the second hash. Now the call fails `PERMANENT` (the message says the
 * request may have reached `a`, the cause is the reset), and it moves on only after a
 * failure that proves nothing was done: a refused connection, a 429 or 503 answer.
 * `eth_sendRawTransaction` still fails over after a reset (signed bytes: safe anywhere).
 */
import { createWalletClient, http } from 'viem';
import { afterEach, describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { poolTransport } from '../src/viem/index.js';
import { PooledJsonRpcProvider } from '../src/ethers/index.js';
import { refusedPort } from './helpers/loopback.js';
import { startRpc, type Answer, type RpcServer } from './helpers/rpc-server.js';

const FROM = '0x1111111111111111111111111111111111111111';
const TX = { from: FROM, to: '0x000000000000000000000000000000000000dEaD', value: '0x1' };
const HASH = `0x${'ab'.repeat(32)}`;
const started: RpcServer[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
  await Promise.all(started.splice(0).map((s) => s.close()));
});

/** A node whose sends get `first` (then its own hash); every other method an answer. */
async function node(send: () => Answer): Promise<RpcServer> {
  const s = await startRpc((method) => (method === 'eth_sendTransaction' || method === 'eth_sendRawTransaction' || method === 'evm_mine' ? send() : method === 'eth_chainId' ? { result: '0x1' } : { result: '0x0' }));
  started.push(s);
  return s;
}
const sends = (...nodes: RpcServer[]) => nodes.map((n) => n.methods.filter((m) => m === 'eth_sendTransaction' || m === 'eth_sendRawTransaction' || m === 'evm_mine').length);

type Send = (urls: { name: string; url: string }[], method: string, params: unknown[]) => Promise<unknown>;
const adapters: [string, Send][] = [
  [
    'viem',
    async (urls, method, params) => {
      const t = poolTransport({ endpoints: urls, http, strategy: 'ordered', attemptTimeoutMs: 1_000 });
      closers.push(() => t.close());
      return createWalletClient({ transport: t }).request({ method: method as 'eth_sendTransaction', params: params as never });
    },
  ],
  [
    'ethers',
    async (urls, method, params) => {
      const p = new PooledJsonRpcProvider({ endpoints: urls, network: 1, strategy: 'ordered', attemptTimeoutMs: 1_000 });
      closers.push(() => p.close());
      return p.send(method, params);
    },
  ],
];

describe.each(adapters)('%s: node-signed sends', (_name, send) => {
  test('a reset after the node took it: PERMANENT, never sent to the second node', async () => {
    const a = await node(() => ({ destroy: true }));
    const b = await node(() => ({ result: HASH }));
    const error = await send([{ name: 'a', url: a.url }, { name: 'b', url: b.url }], 'eth_sendTransaction', [TX]).catch((e: unknown) => e);
    expect(sends(a, b)).toEqual([1, 0]);
    expect(isPoolError(error) && error.code).toBe('PERMANENT');
    expect((error as Error).message).toMatch(/eth_sendTransaction request may have reached endpoint "a".*not sent again/);
    expect((error as Error).cause).toBeDefined();
  });

  test('an attempt timeout: the next attempt sends nothing', async () => {
    const a = await node(() => ({ hang: true }));
    const b = await node(() => ({ result: HASH }));
    const error = await send([{ name: 'a', url: a.url }, { name: 'b', url: b.url }], 'eth_sendTransaction', [TX]).catch((e: unknown) => e);
    expect(sends(a, b)).toEqual([1, 0]);
    expect(isPoolError(error) && error.code).toBe('PERMANENT');
    expect((error as Error).message).toMatch(/may have reached endpoint "a"/);
  });

  test('a dev control that adds to the state (evm_mine) is not repeated either', async () => {
    const a = await node(() => ({ destroy: true }));
    const b = await node(() => ({ result: '0x0' }));
    const error = await send([{ name: 'a', url: a.url }, { name: 'b', url: b.url }], 'evm_mine', []).catch((e: unknown) => e);
    expect(sends(a, b)).toEqual([1, 0]);
    expect(isPoolError(error) && error.code).toBe('PERMANENT');
    expect((error as Error).message).toMatch(/evm_mine request may have reached endpoint "a".*each run adds to the node's state/);
  });

  test.each<[string, () => Answer]>([
    ['a 429', () => ({ status: 429, body: 'slow down' })],
    ['a 503', () => ({ status: 503, body: 'unavailable' })],
    ['a JSON-RPC rate limit', () => ({ error: { code: -32005, message: 'limit exceeded' } })],
  ])('%s says it was not processed: moves on to the next node', async (_what, answer) => {
    const a = await node(answer);
    const b = await node(() => ({ result: HASH }));
    await expect(send([{ name: 'a', url: a.url }, { name: 'b', url: b.url }], 'eth_sendTransaction', [TX])).resolves.toBe(HASH);
    expect(sends(a, b)).toEqual([1, 1]);
  });

  test('a refused connection: moves on', async () => {
    const b = await node(() => ({ result: HASH }));
    const port = await refusedPort();
    await expect(send([{ name: 'down', url: `http://127.0.0.1:${port}` }, { name: 'b', url: b.url }], 'eth_sendTransaction', [TX])).resolves.toBe(HASH);
    expect(sends(b)).toEqual([1]);
  });

  test('eth_sendRawTransaction still fails over after a reset', async () => {
    const a = await node(() => ({ destroy: true }));
    const b = await node(() => ({ result: HASH }));
    await expect(send([{ name: 'a', url: a.url }, { name: 'b', url: b.url }], 'eth_sendRawTransaction', ['0x02'])).resolves.toBe(HASH);
    expect(sends(a, b)).toEqual([1, 1]);
  });
});

describe('viem withEndpoint', () => {
  test('a function whose eth_sendTransaction was answered is not run again elsewhere', async () => {
    const a = await node(() => ({ result: HASH }));
    const b = await node(() => ({ result: HASH }));
    const t = poolTransport({ endpoints: [{ name: 'a', url: a.url }, { name: 'b', url: b.url }], http, strategy: 'ordered', attemptTimeoutMs: 1_000 });
    closers.push(() => t.close());
    let runs = 0;
    const error = await t
      .withEndpoint(async (transport) => {
        runs++;
        await transport({}).request({ method: 'eth_sendTransaction', params: [TX] });
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }); // the receipt's request failed: transient
      })
      .catch((e: unknown) => e);
    expect(runs).toBe(1);
    expect(sends(a, b)).toEqual([1, 0]);
    expect(isPoolError(error) && error.code).toBe('PERMANENT');
    expect((error as Error).message).toMatch(/not run again on another endpoint: its eth_sendTransaction request was answered by endpoint "a"/);
  });
});
