/**
 * Loopback HTTP servers for integration tests: 127.0.0.1 only, ephemeral ports, every
 * connection tracked so `close()` ends hanging requests too.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
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

/** Whether a connection to 127.0.0.1:`port` is refused (nothing listens there). */
function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    // A port whose packets are dropped (a firewall) answers nothing: not refused, and no hang.
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

/** From here up: below are many of the ports `fetch` refuses to connect to ("bad port", the Fetch standard's list). */
let nextLowPort = 900;
/** The Fetch standard's bad ports in 900-1023. */
const FETCH_BAD_PORTS = new Set([989, 990, 993, 995]);
const foundPorts: number[] = [];
let reused = 0;

/**
 * A port that refuses connections and stays refused: a port in 900-1023 on which nothing
 * listens here and which `fetch` does not refuse to try, a different one each call (until
 * all have been handed out: then the same ones again, in turn). Such a port is never handed
 * out to a server listening on port 0 (ephemeral ports come from 32768-60999 on Linux,
 * 49152-65535 on macOS), so no test running beside this one can take it. (A port bound and
 * then released, the way this was done before, went to another test file's server now and
 * then: a "refused" endpoint answered 404 in CI, seen once in the twenty-fifth session.)
 */
export async function refusedPort(): Promise<number> {
  while (nextLowPort < 1024) {
    const port = nextLowPort++;
    if (!FETCH_BAD_PORTS.has(port) && (await refuses(port))) {
      foundPorts.push(port);
      return port;
    }
  }
  // All tried: the ones found again, in turn (a run of generated tests asks for hundreds).
  if (foundPorts.length === 0) throw new Error('refusedPort: every port in 900-1023 answers or fails otherwise on 127.0.0.1');
  return foundPorts[reused++ % foundPorts.length]!;
}

/** A URL on which nothing listens (`refusedPort`). */
export async function refusedUrl(): Promise<string> {
  return `http://127.0.0.1:${await refusedPort()}`;
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
