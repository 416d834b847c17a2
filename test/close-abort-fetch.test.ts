/**
 * `close({ abortAfterMs })` through `endpoint-pool/fetch` on a loopback server: an attempt it
 * abandons closes its HTTP request (the server sees the connection go), as a timeout would,
 * so a shutdown leaves no socket open. Real sockets; no timing assumed (expect.poll).
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createPooledFetch } from '../src/fetch/index.js';
import { isPoolError } from '../src/index.js';
import { startLoopback, type Loopback } from './helpers/loopback.js';

let server: Loopback;
let received = 0;
let closed = 0;

beforeAll(async () => {
  server = await startLoopback((req) => {
    received++;
    req.socket.on('close', () => closed++);
  });
});
afterAll(() => server.close());

test('an abandoned attempt closes its request; close() resolves; the call fails CLOSED', async () => {
  const pooled = createPooledFetch({ endpoints: [{ url: server.url }], attemptTimeoutMs: Infinity, deadlineMs: Infinity });
  const call = pooled('/hang').then(
    () => undefined,
    (e: unknown) => e,
  );
  await expect.poll(() => received, { timeout: 10_000 }).toBe(1);
  expect(closed).toBe(0);
  await pooled.pool.close({ abortAfterMs: 0 });
  const error = await call;
  expect(isPoolError(error) && error.code).toBe('CLOSED');
  // The connection that carried the request is closed (an idle one undici keeps may stay, up to its keep-alive).
  await expect.poll(() => closed, { timeout: 10_000 }).toBe(1);
});
