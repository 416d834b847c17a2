/**
 * Loopback HTTP servers for integration tests: 127.0.0.1 only, ephemeral ports, every
 * connection tracked so `close()` ends hanging requests too.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach } from 'vitest';

export interface Loopback {
  readonly url: string;
  readonly port: number;
  /** Requests received so far. */
  hits: number;
  /** Connections currently open. */
  openConnections(): number;
  close(): Promise<void>;
}

export async function startLoopback(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<Loopback> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    lb.hits++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const lb: Loopback = {
    url: `http://127.0.0.1:${port}`,
    port,
    hits: 0,
    openConnections: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  return lb;
}

/** A port that refuses connections: bound once, then closed. */
export async function refusedPort(): Promise<number> {
  const lb = await startLoopback((_q, r) => r.end());
  await lb.close();
  return lb.port;
}

/**
 * The loopback servers and pools a test file starts, closed after each of its tests (the
 * call registers the file's `afterEach`): `server(handler)` starts one; push each pool or
 * pooled fetch made onto `made`.
 */
export function loopbackScope(): {
  server(handler: Parameters<typeof startLoopback>[0]): Promise<Loopback>;
  readonly made: { readonly pool: { close(): Promise<void> } }[];
} {
  const open: Loopback[] = [];
  const made: { readonly pool: { close(): Promise<void> } }[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((f) => f.pool.close()));
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  return {
    made,
    async server(handler) {
      const s = await startLoopback(handler);
      open.push(s);
      return s;
    },
  };
}
