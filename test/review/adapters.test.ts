/**
 * Issue 15, "Secrets and body faults": the adapters redact the URLs their libraries put
 * in errors (viem's messages, the fetch adapter's `HttpStatusError.response.url`), as seen
 * by `console.log`-style inspection; and `parse` makes a body fault an attempt failure
 * that fails over. Each test failed before the fix.
 */
import { inspect } from 'node:util';
import { createPublicClient, http } from 'viem';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isPoolError, type PoolEvent } from '../../src/index.js';
import { createPooledFetch, isHttpStatusError } from '../../src/fetch/index.js';
import { poolTransport } from '../../src/viem/index.js';
import { redactUrls } from '../../src/extras/redact.js';
import { startLoopback, type Loopback } from '../helpers/loopback.js';
import { startRpc, type RpcServer } from '../helpers/rpc-server.js';

const KEY = 'k3y_SECRET_8a7f';
const show = (v: unknown): string => inspect(v, { depth: 10 });

describe('redaction', () => {
  test.each([
    ['URL: https://eth.example.com/v2/k3y_SECRET_8a7f', 'URL: https://eth.example.com/…'],
    ['https://u:k3y_SECRET_8a7f@127.0.0.1:8545/?apikey=k3y_SECRET_8a7f done', 'https://127.0.0.1:8545/… done'],
    ['wss://node.example', 'wss://node.example'],
  ])('%s', (text, expected) => {
    expect(redactUrls(text)).toBe(expected);
  });
});

describe('viem errors carry no key', () => {
  let rpc: RpcServer;
  beforeAll(async () => {
    rpc = await startRpc(() => ({ status: 500, body: 'upstream down' }));
  });
  afterAll(() => rpc.close());

  test('attempt-failure events and the PoolError (cause chain) print no URL path or key', async () => {
    const events: PoolEvent[] = [];
    const transport = poolTransport({ endpoints: [{ name: 'node', transport: http(`${rpc.url}/v2/${KEY}`) }], onEvent: (e) => events.push(e), maxAttempts: 2, backoff: { initialMs: 1, maxMs: 1 } });
    const client = createPublicClient({ transport });
    const error = await client.getBlockNumber().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const failures = events.filter((e) => e.type === 'attempt-failure');
    expect(failures.length).toBeGreaterThan(0);
    const printed = show(events) + show(error) + String((error as Error).stack) + JSON.stringify(events, (_k, v: unknown) => (v instanceof Error ? { message: v.message, stack: v.stack } : v));
    expect(printed).not.toContain(KEY);
    expect(printed).toContain('127.0.0.1'); // the host stays, for diagnosis
    await transport.pool.close();
  });
});

describe('fetch adapter', () => {
  let server: Loopback;
  beforeAll(async () => {
    server = await startLoopback((req, res) => {
      if (req.url?.includes('/cut/') === true) {
        // A reset mid-body: headers promise 200 bytes, 20 arrive, the socket dies.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '200' });
        res.write('{"value": "partial ');
        setTimeout(() => res.socket?.destroy(), 5);
        return;
      }
      if (req.url?.includes('/short/') === true) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"value": "trunc');
        return;
      }
      if (req.url?.includes('/busy/') === true) {
        res.writeHead(503).end('busy');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"value":"good"}');
    });
  });
  afterAll(() => server.close());

  test("HttpStatusError.response.url holds the key but console.log of events and errors does not show it", async () => {
    const events: PoolEvent[] = [];
    const pooled = createPooledFetch({ endpoints: [{ url: `${server.url}/busy/${KEY}`, name: 'busy' }], onEvent: (e) => events.push(e), throwOnHttpError: true, maxAttempts: 1 });
    const error = await pooled('/items').catch((e: unknown) => e);
    expect(isPoolError(error)).toBe(true);
    const cause = (error as Error).cause;
    expect(isHttpStatusError(cause) && cause.response?.url).toContain(KEY); // still there for the caller
    expect(show(events) + show(error)).not.toContain(KEY);
    await pooled.pool.close();
  });

  test('with parse, a reset mid-body and a truncated JSON in a 200 fail over: 20 of 20 calls succeed', async () => {
    const pooled = createPooledFetch({
      endpoints: [
        { url: `${server.url}/cut/${KEY}`, name: 'cut' },
        { url: `${server.url}/short/${KEY}`, name: 'short' },
        { url: `${server.url}/ok`, name: 'ok' },
      ],
      breaker: { threshold: 1000 },
      attemptTimeoutMs: 30_000,
      deadlineMs: 60_000,
    });
    const results: unknown[] = [];
    for (let i = 0; i < 20; i++) results.push(await pooled<{ value: string }>('/items', { parse: 'json' }));
    expect(results).toEqual(Array(20).fill({ value: 'good' }));
    const stats = pooled.pool.stats();
    expect(stats.find((s) => s.name === 'cut')!.failures).toBe(20);
    expect(stats.find((s) => s.name === 'short')!.failures).toBe(20);
    await pooled.pool.close();
  });

  test("parse 'text' and a function; an HTTP error answer rejects under parse", async () => {
    const pooled = createPooledFetch({ endpoints: [{ url: `${server.url}/ok`, name: 'ok' }] });
    expect(await pooled('/x', { parse: 'text' })).toBe('{"value":"good"}');
    expect(await pooled('/x', { parse: async (res) => res.status })).toBe(200);
    const busy = createPooledFetch({ endpoints: [{ url: `${server.url}/busy`, name: 'busy' }], maxAttempts: 1 });
    const e = await busy('/x', { parse: 'json' }).catch((err: unknown) => err);
    expect(isPoolError(e) && e.code).toBe('RETRIES_EXHAUSTED');
    await pooled.pool.close();
    await busy.pool.close();
  });
});
