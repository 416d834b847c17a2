/**
 * Loopback fault servers and a small fetch-based operation + classifier for the fault
 * tests (the real `endpoint-pool/fetch` adapter is written elsewhere; these tests must
 * not depend on it).
 *
 * Classification (what a careful fetch adapter would do for an idempotent read):
 * | outcome                                   | class                                   |
 * |-------------------------------------------|-----------------------------------------|
 * | 2xx with a JSON body                      | success                                 |
 * | 408, 429                                  | `rate-limited`, with the `Retry-After` hint (seconds or HTTP-date) |
 * | 5xx                                       | `transient`                             |
 * | other 4xx                                 | `permanent`                             |
 * | network error (refused, reset, ended)     | `transient`                             |
 * | 2xx whose body is not JSON                | `transient`                             |
 *
 * A malformed body is `transient`: the status said the request was served, so the
 * request itself is not at fault; a truncated or garbled body is a fault of that endpoint
 * (or a proxy in front of it) that another endpoint, or a later try, can do without. For
 * a non-idempotent operation the caller should classify it `permanent` instead.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { AttemptContext, ClassifyResult } from '../../src/index.js';

export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterMs: number | undefined,
  ) {
    super(`HTTP ${status}`);
  }
}

export class BodyError extends Error {
  constructor(cause: unknown) {
    super('response body is not JSON', { cause });
  }
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP-date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** GET `base + path`, JSON body; throws HttpStatusError, BodyError or fetch's own network error. */
export function getJson(path = '/'): (base: string, ctx: AttemptContext) => Promise<unknown> {
  return async (base, ctx) => {
    const res = await fetch(base + path, { signal: ctx.signal });
    const text = await res.text();
    if (res.status < 200 || res.status > 299) throw new HttpStatusError(res.status, parseRetryAfter(res.headers.get('retry-after')));
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new BodyError(error);
    }
  };
}

export function classifyHttp(err: unknown): ClassifyResult {
  if (err instanceof HttpStatusError) {
    if (err.status === 408 || err.status === 429) {
      return err.retryAfterMs === undefined ? 'rate-limited' : { class: 'rate-limited', retryAfterMs: err.retryAfterMs };
    }
    if (err.status >= 500) return 'transient';
    return 'permanent';
  }
  if (err instanceof BodyError) return 'transient';
  // fetch rejects with a TypeError for refused, reset and prematurely ended connections.
  if (err instanceof TypeError) return 'transient';
  return 'permanent';
}

export type Handler = (req: IncomingMessage, res: ServerResponse, hit: number) => void;

export interface FaultServer {
  readonly name: string;
  readonly url: string;
  /** Requests received. */
  readonly hits: number[];
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1 with an ephemeral port; `close()` also destroys open sockets. */
export async function serve(name: string, handler: Handler): Promise<FaultServer> {
  const sockets = new Set<Socket>();
  const hits: number[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(Date.now());
    handler(req, res, hits.length);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A URL on which nothing listens (a low port that stays refused). */
export { refusedUrl } from '../helpers/loopback.js';

export const json = (res: ServerResponse, body: unknown, status = 200, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

/** The fault catalogue: each server misbehaves in one way, forever. */
/** How slow `slow` is: tests set it from the attempt timeout they derive from measured lag. */
export const timing = { slowMs: 400 };

export const faults = {
  healthy: ((_req, res) => json(res, { ok: true })) as Handler,
  /** Sends the head and half a body, then resets the connection. */
  reset: ((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
    res.write('{"partial":');
    setTimeout(() => res.socket?.resetAndDestroy(), 5);
  }) as Handler,
  /** Accepts the request and never answers. */
  hang: (() => undefined) as Handler,
  /** Answers correctly, but after `timing.slowMs` (twice the attempt timeout used here). */
  slow: ((_req, res) => {
    const t = setTimeout(() => json(res, { ok: 'slow' }), timing.slowMs);
    res.on('close', () => clearTimeout(t));
  }) as Handler,
  tooManySeconds: ((_req, res) => json(res, { error: 'slow down' }, 429, { 'retry-after': '1' })) as Handler,
  tooManyDate: ((_req, res) => json(res, { error: 'slow down' }, 429, { 'retry-after': new Date(Date.now() + 1500).toUTCString() })) as Handler,
  unavailable: ((_req, res) => json(res, { error: 'down' }, 503)) as Handler,
  malformed: ((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"this is": not json');
  }) as Handler,
} satisfies Record<string, Handler>;
