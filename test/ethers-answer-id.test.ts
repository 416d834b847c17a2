/**
 * The ethers provider refuses an answer whose `id` is not its request's. A new user's repro
 * (t15-ethers-id-mismatch): a proxy that swapped two concurrent answers gave each caller of
 * `getBalance` the other's balance through the pool, where ethers' own `JsonRpcProvider`
 * rejects with BAD_DATA. Now such an answer is a `BadResponseError` (transient, as a body that
 * is not JSON-RPC): the attempt fails and the call moves on. From an array (a batch's answer)
 * the member of the request's id is taken, as ethers does; an error answer with a `null` id
 * (the node could not read the request) is still the node's answer.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { isPoolError } from '../src/index.js';
import { BadResponseError, PooledJsonRpcProvider } from '../src/ethers/index.js';
import { startLoopback, type Loopback } from './helpers/loopback.js';

const A = '0x0000000000000000000000000000000000001111';
const B = '0x0000000000000000000000000000000000002222';
type Msg = { id: number; method: string; params: unknown[] };
/** Each address's balance is its last two bytes. */
const answer = (m: Msg) => ({ jsonrpc: '2.0', id: m.id, result: m.method === 'eth_getBalance' ? `0x${String(m.params[0]).slice(-4)}` : '0x1' });

const servers: Loopback[] = [];
const providers: PooledJsonRpcProvider[] = [];
afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function serve(reply: (m: Msg, send: (body: unknown) => void) => void): Promise<string> {
  const s = await startLoopback((_req, res, body) => reply(JSON.parse(body) as Msg, (out) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out))));
  servers.push(s);
  return s.url;
}
function provider(urls: string[]): PooledJsonRpcProvider {
  const p = new PooledJsonRpcProvider({ endpoints: urls.map((url, i) => ({ url, name: `n${i}` })), network: 1, strategy: 'ordered', backoff: { initialMs: 1, maxMs: 5 } });
  providers.push(p);
  return p;
}

describe('ethers provider: answers matched to their request by id', () => {
  test('a proxy swapping two concurrent answers: each caller still gets its own balance', async () => {
    let held: { m: Msg; send: (body: unknown) => void }[] = [];
    let swapped = 0;
    const url = await serve((m, send) => {
      if (m.method !== 'eth_getBalance' || swapped > 0) return send(answer(m));
      held.push({ m, send });
      if (held.length < 2) return;
      const [p, q] = held as [(typeof held)[0], (typeof held)[0]];
      held = [];
      swapped++;
      p.send(answer(q.m));
      q.send(answer(p.m));
    });
    const p = provider([url]);
    const [a, b] = await Promise.all([p.getBalance(A), p.getBalance(B)]);
    expect(swapped).toBe(1);
    expect([a, b]).toEqual([0x1111n, 0x2222n]);
  });

  test('an answer of another id moves the call on to the next endpoint', async () => {
    const bad = await serve((m, send) => send({ ...answer(m), id: m.id + 1000 }));
    const good = await serve((m, send) => send(answer(m)));
    const p = provider([bad, good]);
    await expect(p.send('eth_getBalance', [A, 'latest'])).resolves.toBe('0x1111');
    const error = await provider([bad]).send('eth_getBalance', [A, 'latest']).catch((e: unknown) => e);
    expect(isPoolError(error) && error.code).toBe('RETRIES_EXHAUSTED');
    expect((error as Error).cause).toBeInstanceOf(BadResponseError);
    expect(((error as Error).cause as Error).message).toMatch(/the answer to another request/);
  });

  test('an array answer: the member of the request id is taken, none is refused', async () => {
    const batch = await serve((m, send) => send([{ ...answer(m), id: m.id + 1 }, answer(m)]));
    await expect(provider([batch]).send('eth_getBalance', [B, 'latest'])).resolves.toBe('0x2222');
    const others = await serve((m, send) => send([{ ...answer(m), id: m.id + 1 }]));
    const error = await provider([others]).send('eth_getBalance', [B, 'latest']).catch((e: unknown) => e);
    expect((error as Error).cause).toBeInstanceOf(BadResponseError);
  });

  test('an error answer with a null id is the node\'s answer', async () => {
    const url = await serve((_m, send) => send({ jsonrpc: '2.0', id: null, error: { code: -32602, message: 'invalid argument 0' } }));
    const error = await provider([url]).send('eth_getBalance', [A, 'latest']).catch((e: unknown) => e);
    expect(isPoolError(error)).toBe(false);
    expect(String((error as Error).message)).toMatch(/invalid argument 0/);
  });
});
