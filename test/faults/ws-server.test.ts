/**
 * The generators' WebSocket fault server (gen.ts `serveWsFaults`) closes even when a client's
 * upgrade request is still arriving: the upgrade completed after close() used to add a socket
 * nothing destroyed, and server.close() waited on it for good (a viem client reconnecting as
 * a generated run ended: one way a run of generated4's "viem over webSocket" could hang to
 * the test's 120 s timeout).
 */
import { connect } from 'node:net';
import { expect, test } from 'vitest';
import { serveWsFaults } from './gen.js';
import { timerLag, withLag } from '../helpers/lag.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

test('close() resolves with an upgrade request half sent, and the late upgrade is refused', async () => {
  const lag = await timerLag();
  const s = await serveWsFaults([{ k: 'ok', f: 0 }], { unitMs: 10, answer: () => ({ status: 200, body: '{}' }) });
  const port = Number(s.url.split(':').at(-1));
  const sock = connect(port, '127.0.0.1');
  sock.on('error', () => undefined);
  await new Promise((r) => sock.once('connect', r));
  sock.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n');
  // Let the server take the connection and read the first lines (on a machine too busy for
  // that, close() resets a connection not yet taken and the test proves less, never fails).
  await sleep(withLag(50, lag));
  const ended = new Promise<void>((r) => sock.once('close', () => r()));
  const closing = s.close().then(() => 'closed' as const);
  sock.write('Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
  const cap = withLag(2000, lag);
  try {
    expect(await Promise.race([closing, sleep(cap).then(() => 'still open' as const)])).toBe('closed');
    // The server ended the client's connection: no 101 kept it.
    expect(await Promise.race([ended.then(() => 'ended' as const), sleep(cap).then(() => 'still open' as const)])).toBe('ended');
  } finally {
    sock.destroy();
  }
});
