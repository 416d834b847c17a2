/**
 * Generated fault schedules for the adapters on real loopback servers (127.0.0.1 only).
 *
 * Each endpoint is a server that answers its n-th request with `plan[n % plan.length]`
 * (or a port on which nothing listens). Faults are scaled by the run's attempt timeout, so
 * that the same scenario means the same thing on a quiet and on a loaded machine. The
 * servers record every socket and every request still open, so a run can check that
 * nothing was left hanging once the pool was closed and every call had settled.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import fc from 'fast-check';
import { systemClock, type Clock, type TimerHandle } from '../../src/base/clock.js';

/** `Retry-After` values as servers send them, good and bad. */
export const RETRY_AFTER = ['none', 'seconds-1', 'seconds-0', 'fraction', 'date', 'past-date', 'garbage', 'huge', 'negative'] as const;
export type RetryAfterKind = (typeof RETRY_AFTER)[number];

export type Fault =
  /** The right answer after `f` times the attempt timeout (under 0.3: a healthy answer). */
  | { readonly k: 'ok'; readonly f: number }
  /** Accepts the request and never answers. */
  | { readonly k: 'hang' }
  /** Destroys the socket before any answer (a reset before the head). */
  | { readonly k: 'destroy' }
  /** Sends the head and part of the body, then resets the connection. */
  | { readonly k: 'reset-mid' }
  /** Sends the head and part of the body, then closes the connection cleanly (a truncated body). */
  | { readonly k: 'truncated' }
  /** Sends the head and part of the body, then nothing more, ever. */
  | { readonly k: 'endless' }
  /** A 200 whose right body comes a few bytes at a time, over twice the attempt timeout. */
  | { readonly k: 'trickle' }
  /** A 200 whose body is not JSON. */
  | { readonly k: 'malformed' }
  /** An HTTP error status, with a `Retry-After` of some kind. */
  | { readonly k: 'status'; readonly status: number; readonly retryAfter: RetryAfterKind }
  /** A JSON-RPC error object in a 200 (for the RPC servers; a plain JSON answer elsewhere). */
  | { readonly k: 'rpc-error'; readonly code: number; readonly message: string };

export function retryAfterValue(kind: RetryAfterKind): string | undefined {
  switch (kind) {
    case 'none':
      return undefined;
    case 'seconds-1':
      return '1';
    case 'seconds-0':
      return '0';
    case 'fraction':
      return '0.25';
    case 'date':
      return new Date(Date.now() + 1500).toUTCString();
    case 'past-date':
      return new Date(Date.now() - 60_000).toUTCString();
    case 'garbage':
      return 'soon, maybe';
    case 'huge':
      return '99999999999999999999999';
    case 'negative':
      return '-5';
  }
}

export interface ServerStats {
  readonly url: string;
  /** Requests received. */
  hits: number;
  /** Each request: its `x-call` header, when it arrived (performance.now()), the fault it got. */
  readonly log: { readonly call: string | undefined; readonly at: number; readonly fault: Fault }[];
  /** Requests whose response has not closed yet. */
  openRequests(): number;
  /**
   * Connections open now that have carried a request. (undici connects ahead and keeps a
   * connection whose request was aborted before it was written for the next request: a
   * connection that never sent a byte is the client's pool, not a leak.)
   */
  openSockets(): number;
  describeSockets(): string;
  /** Closes the connections that carry no request now (idle keep-alive ones). */
  closeIdle(): void;
  close(): Promise<void>;
}

export interface ServeOptions {
  /** Answer with `connection: close` (every socket should then close once its answer is done). */
  readonly closeConnections: boolean;
  /** The right answer for a request. */
  readonly answer: (body: string) => { status: number; body: string };
  /** The run's attempt timeout: `ok` and slow answers are scaled by it. */
  readonly unitMs: number;
  /** JSON-RPC servers put the request's id into RPC error answers. */
  readonly rpc: boolean;
  /** Answers a request at once, outside the plan (a lookup the test does not fault), or `undefined`. */
  readonly bypass?: (body: string) => { status: number; body: string } | undefined;
  /** Sees every planned request with its fault; may answer with another fault instead. */
  readonly intercept?: (body: string, fault: Fault) => Fault;
  /** Checks a request's headers (a bearer token): one that fails is answered 401, before the plan. */
  readonly check?: (headers: Record<string, string | string[] | undefined>) => boolean;
}

/** A server on 127.0.0.1 answering its n-th request with `plan[n % plan.length]`. */
export async function serveFaults(plan: readonly Fault[], o: ServeOptions): Promise<ServerStats> {
  const sockets = new Set<Socket>();
  let open = 0;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (fn: () => void, ms: number): void => {
    const t = setTimeout(() => (timers.delete(t), fn()), ms);
    timers.add(t);
  };
  const handle = (req: IncomingMessage, res: ServerResponse, body: string, fault: Fault): void => {
    const base: Record<string, string> = o.closeConnections ? { connection: 'close' } : {};
    const head = (status: number, extra: Record<string, string> = {}): void => void res.writeHead(status, { 'content-type': 'application/json', ...base, ...extra });
    switch (fault.k) {
      case 'ok': {
        const send = (): void => {
          if (res.destroyed) return;
          const a = o.answer(body);
          head(a.status);
          res.end(a.body);
        };
        if (fault.f <= 0) send();
        else later(send, fault.f * o.unitMs);
        return;
      }
      case 'hang':
        return;
      case 'destroy':
        req.socket.destroy();
        return;
      case 'reset-mid':
        head(200, { 'content-length': '200' });
        res.write('{"jsonrpc":"2.0","result":');
        later(() => res.socket?.resetAndDestroy(), 2);
        return;
      case 'truncated':
        head(200, { 'content-length': '200' });
        res.write('{"jsonrpc":"2.0","result":"0x');
        later(() => res.socket?.end(), 2);
        return;
      case 'endless':
        head(200);
        res.write('{"jsonrpc":"2.0","result":"0x');
        return;
      case 'trickle': {
        const a = o.answer(body);
        head(a.status, { 'content-length': String(Buffer.byteLength(a.body)) });
        const parts = a.body.match(/.{1,4}/gs) ?? [''];
        const step = (2 * o.unitMs) / parts.length;
        const next = (i: number): void => {
          if (res.destroyed) return;
          if (i === parts.length - 1) return void res.end(parts[i]);
          res.write(parts[i]);
          later(() => next(i + 1), step);
        };
        next(0);
        return;
      }
      case 'malformed':
        head(200);
        res.end('{"jsonrpc": "2.0", "result": not json');
        return;
      case 'status': {
        const ra = retryAfterValue(fault.retryAfter);
        head(fault.status, ra === undefined ? {} : { 'retry-after': ra });
        res.end(JSON.stringify({ error: `status ${fault.status}` }));
        return;
      }
      case 'rpc-error': {
        let id: unknown = 1;
        try {
          id = (JSON.parse(body) as { id?: unknown }).id;
        } catch {
          // not JSON: keep 1
        }
        head(200);
        res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: fault.code, message: fault.message } }));
        return;
      }
    }
  };
  let n = 0;
  const server: Server = createServer((req, res) => {
    stats.hits++;
    open++;
    res.on('close', () => open--);
    const header = req.headers['x-call'];
    const at = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const direct = o.bypass?.(body);
      if (direct !== undefined) {
        stats.log.push({ call: undefined, at, fault: { k: 'ok', f: 0 } });
        res.writeHead(direct.status, { 'content-type': 'application/json', ...(o.closeConnections ? { connection: 'close' } : {}) });
        res.end(direct.body);
        return;
      }
      if (o.check !== undefined && !o.check(req.headers)) {
        const refused: Fault = { k: 'status', status: 401, retryAfter: 'none' };
        stats.log.push({ call: typeof header === 'string' ? header : callInBody(body), at, fault: refused });
        handle(req, res, body, refused);
        return;
      }
      const planned = plan[n++ % plan.length]!;
      const fault = o.intercept === undefined ? planned : o.intercept(body, planned);
      stats.log.push({ call: typeof header === 'string' ? header : callInBody(body), at, fault });
      handle(req, res, body, fault);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const stats: ServerStats = {
    url: `http://127.0.0.1:${port}`,
    hits: 0,
    log: [],
    openRequests: () => open,
    openSockets: () => [...sockets].filter((k) => k.bytesRead > 0).length,
    describeSockets: () => [...sockets].filter((k) => k.bytesRead > 0).map((k) => `r${k.bytesRead}/w${k.bytesWritten}/${k.readyState}/${(k as unknown as { _httpMessage?: unknown })._httpMessage ? 'msg' : 'nomsg'}`).join(' '),
    closeIdle: () => server.closeIdleConnections(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  return stats;
}

/** The caller's number in a JSON-RPC request: the last hex digits of an address `0x00..0c<n>` in its params. */
export function callInBody(body: string): string | undefined {
  const m = /"0x0{30,}c([0-9a-f]{1,8})"/.exec(body);
  return m === null ? undefined : String(parseInt(m[1]!, 16));
}

/** The address that carries caller `i` (see `callInBody`). */
export function callAddress(i: number): string {
  const tail = `c${i.toString(16)}`;
  return `0x${tail.padStart(40, '0')}`;
}

/** A URL on which nothing listens (a low port that stays refused). */
export { refusedUrl } from '../helpers/loopback.js';

/**
 * The system clock, counting the timers set through it that have neither fired nor been
 * cleared (an infinite wait is no timer: it never fires and holds nothing).
 */
export function countingClock(): { clock: Clock; pending(): number } {
  const live = new Set<TimerHandle>();
  const clock: Clock = {
    now: systemClock.now,
    wallNow: systemClock.wallNow!,
    setTimeout(fn, ms, background) {
      const box: { h?: TimerHandle } = {};
      const h = systemClock.setTimeout(
        () => {
          live.delete(box.h);
          fn();
        },
        ms,
        background,
      );
      box.h = h;
      if (Number.isFinite(ms)) live.add(h);
      return h;
    },
    clearTimeout(h) {
      live.delete(h);
      systemClock.clearTimeout(h);
    },
    setRef: systemClock.setRef!,
  };
  return { clock, pending: () => live.size };
}

/** One endpoint of a scenario: nothing listening, or a server with a plan. */
export type EndpointSpec = { readonly kind: 'refused' } | { readonly kind: 'server'; readonly plan: readonly Fault[]; readonly closeConnections: boolean };

export interface Caller {
  /** When the call starts, in attempt timeouts after the run starts. */
  readonly startAt: number;
  /** When the caller aborts, in attempt timeouts after the call starts (none: never; negative: before it starts). */
  readonly abortAt: number | undefined;
  /** A deadline of the call's own, in attempt timeouts. */
  readonly deadline: number | undefined;
  /** A retry mode of the call's own. */
  readonly retry: 'none' | 'until-deadline' | { readonly maxAttempts: number } | undefined;
}

export interface Scenario {
  readonly endpoints: readonly EndpointSpec[];
  /** Pool deadline, in attempt timeouts. */
  readonly deadline: number;
  readonly maxAttempts: number | undefined;
  /** Hedge after this many attempt timeouts, up to `maxHedges`. */
  readonly hedge: { readonly after: number; readonly maxHedges: number } | undefined;
  readonly breakerThreshold: number;
  readonly callers: readonly Caller[];
  /** Stop endpoint 1's server (connections reset, new ones refused) this many attempt timeouts after the start. */
  readonly killAt: number | undefined;
  /** Replace endpoint 0 by a healthy server (same name) this many attempt timeouts after the start. */
  readonly swapAt: number | undefined;
  /** Callers that abort share one signal (the first abort ends them all). */
  readonly sharedSignal: boolean;
  /** Close the pool this many attempt timeouts after the start, while calls may be running (none: after they settle). */
  readonly closeAt: number | undefined;
  /** With `closeAt`: `close({ abortAfterMs })`, this many attempt timeouts (adapters whose close takes it). */
  readonly closeAbort?: number | undefined;
  /** Pool options beyond timeouts: strategy, breaker mode, permits, per-endpoint rate limit and in-flight cap. */
  readonly opts: {
    readonly strategy: 'ordered' | 'round-robin' | 'random' | 'health' | 'latency';
    readonly breakerMode: 'fail-fast' | 'wait';
    readonly maxConcurrentCalls: number | undefined;
    readonly permitScope: 'call' | 'attempt';
    readonly perSecond: number | undefined;
    readonly maxInFlight: number | undefined;
  };
}

/** `arb` with weight `some`, `undefined` with weight `none`. */
function sometimes<T>(arb: fc.Arbitrary<T>, some: number, none: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: some, arbitrary: arb }, { weight: none, arbitrary: fc.constant(undefined) });
}

const ok: fc.Arbitrary<Fault> = fc.record({ k: fc.constant('ok' as const), f: fc.constantFrom(0, 0, 0.1, 0.2) });

export function faultArb(statuses: readonly number[], rpcErrors: readonly { code: number; message: string }[]): fc.Arbitrary<Fault> {
  const arbs: fc.Arbitrary<Fault>[] = [
    ok,
    fc.record({ k: fc.constant('ok' as const), f: fc.constantFrom(0.5, 0.8, 1.5, 3) }),
    fc.constant({ k: 'hang' as const }),
    fc.constant({ k: 'destroy' as const }),
    fc.constant({ k: 'reset-mid' as const }),
    fc.constant({ k: 'truncated' as const }),
    fc.constant({ k: 'endless' as const }),
    fc.constant({ k: 'malformed' as const }),
    fc.constant({ k: 'trickle' as const }),
    fc.record({ k: fc.constant('status' as const), status: fc.constantFrom(...statuses), retryAfter: fc.constantFrom(...RETRY_AFTER) }),
  ];
  if (rpcErrors.length > 0) arbs.push(fc.constantFrom(...rpcErrors).map((e) => ({ k: 'rpc-error' as const, ...e })));
  return fc.oneof(...arbs);
}

/**
 * Scenarios; with `liveness`, ones where property 2 applies to most calls: a healthy
 * endpoint somewhere, no final answers (`fault` is expected to leave them out), no abort, no
 * `close()` during traffic, no queue.
 */
export function scenarioArb(fault: fc.Arbitrary<Fault>, liveness = false): fc.Arbitrary<Scenario> {
  if (liveness) {
    return scenarioArb(fault).chain((sc) =>
      fc.record({ at: fc.nat({ max: sc.endpoints.length }), plan: fc.array(ok, { minLength: 1, maxLength: 2 }) }).map(({ at, plan }) => {
        const endpoints = [...sc.endpoints];
        endpoints.splice(at, 0, { kind: 'server', plan, closeConnections: false });
        return {
          ...sc,
          endpoints: endpoints.slice(0, 4),
          deadline: Math.max(sc.deadline, 8),
          closeAt: undefined,
          callers: sc.callers.map((c) => ({
            ...c,
            abortAt: undefined,
            deadline: c.deadline === undefined ? undefined : Math.max(c.deadline, 8),
            retry: c.retry === 'none' || (typeof c.retry === 'object' && c.retry.maxAttempts < 4) ? undefined : c.retry,
          })),
          maxAttempts: sc.maxAttempts === undefined || sc.maxAttempts < 4 ? undefined : sc.maxAttempts,
          opts: { ...sc.opts, maxConcurrentCalls: undefined, perSecond: undefined, maxInFlight: undefined },
        };
      }),
    );
  }
  const endpoint: fc.Arbitrary<EndpointSpec> = fc.oneof(
    { weight: 1, arbitrary: fc.constant({ kind: 'refused' as const }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('server' as const), plan: fc.array(fault, { minLength: 1, maxLength: 6 }), closeConnections: fc.boolean() }) },
    // A healthy endpoint: every answer right and quick.
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('server' as const), plan: fc.array(ok, { minLength: 1, maxLength: 2 }), closeConnections: fc.boolean() }) },
  );
  const caller: fc.Arbitrary<Caller> = fc.record({
    startAt: fc.constantFrom(0, 0, 0.5, 1, 2),
    abortAt: sometimes(fc.constantFrom(-1, 0, 0.3, 1, 1.7, 4), 1, 2),
    deadline: sometimes(fc.integer({ min: 1, max: 12 }), 1, 1),
    retry: sometimes(fc.oneof(fc.constantFrom('none' as const, 'until-deadline' as const), fc.record({ maxAttempts: fc.integer({ min: 1, max: 5 }) })), 1, 2),
  });
  return fc.record({
    endpoints: fc.array(endpoint, { minLength: 1, maxLength: 4 }),
    deadline: fc.integer({ min: 2, max: 12 }),
    maxAttempts: sometimes(fc.integer({ min: 1, max: 6 }), 1, 2),
    hedge: sometimes(fc.record({ after: fc.constantFrom(0.3, 0.6, 1.2), maxHedges: fc.integer({ min: 1, max: 2 }) }), 1, 1),
    breakerThreshold: fc.integer({ min: 1, max: 5 }),
    callers: fc.array(caller, { minLength: 1, maxLength: 6 }),
    closeAt: sometimes(fc.constantFrom(0.5, 2, 5), 1, 3),
    closeAbort: sometimes(fc.constantFrom(0, 0, 0.5, 1.5), 3, 1),
    sharedSignal: fc.boolean(),
    swapAt: sometimes(fc.constantFrom(0.5, 1.5, 3), 1, 3),
    killAt: sometimes(fc.constantFrom(0.3, 1, 2.5), 1, 3),
    opts: fc.record({
      strategy: fc.constantFrom('ordered' as const, 'ordered' as const, 'round-robin' as const, 'random' as const, 'health' as const, 'latency' as const),
      breakerMode: fc.constantFrom('fail-fast' as const, 'fail-fast' as const, 'wait' as const),
      maxConcurrentCalls: sometimes(fc.integer({ min: 1, max: 3 }), 1, 3),
      permitScope: fc.constantFrom('call' as const, 'attempt' as const),
      perSecond: sometimes(fc.constantFrom(5, 20, 100), 1, 3),
      maxInFlight: sometimes(fc.integer({ min: 1, max: 2 }), 1, 3),
    }),
  });
}

/**
 * A WebSocket JSON-RPC server on 127.0.0.1 (a few lines of RFC 6455: text frames, ping,
 * close; enough for viem's `webSocket` transport) answering its n-th request with
 * `plan[n % plan.length]`. HTTP statuses become JSON-RPC errors of the same meaning (429 a
 * rate limit, others an internal error); faults about a body (reset, truncated, endless,
 * trickle) reset or stall the connection. `openRequests()` counts requests not answered
 * on a connection still open; `openSockets()` the open connections. `upgradeDelayMs`
 * holds back the handshake's answer: a client's socket stays opening that long.
 */
export async function serveWsFaults(plan: readonly Fault[], o: Pick<ServeOptions, 'answer' | 'unitMs'> & { readonly upgradeDelayMs?: number }): Promise<ServerStats> {
  const { createHash } = await import('node:crypto');
  const sockets = new Map<Socket, Set<unknown>>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (fn: () => void, ms: number): void => {
    const t = setTimeout(() => (timers.delete(t), fn()), ms);
    timers.add(t);
  };
  const frame = (opcode: number, payload: Buffer): Buffer => {
    const n = payload.length;
    const head = n < 126 ? Buffer.from([0x80 | opcode, n]) : n < 65536 ? Buffer.from([0x80 | opcode, 126, n >> 8, n & 255]) : Buffer.concat([Buffer.from([0x80 | opcode, 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b; })()]);
    return Buffer.concat([head, payload]);
  };
  let n = 0;
  const onMessage = (s: Socket, text: string): void => {
    stats.hits++;
    const fault = plan[n++ % plan.length]!;
    let id: unknown = 1;
    try {
      id = (JSON.parse(text) as { id?: unknown }).id;
    } catch {
      // keep 1
    }
    stats.log.push({ call: callInBody(text), at: performance.now(), fault });
    const open = sockets.get(s)!;
    const token = {};
    open.add(token);
    const send = (body: string): void => {
      open.delete(token);
      if (!s.destroyed) s.write(frame(1, Buffer.from(body)));
    };
    const rpcError = (code: number, message: string): string => JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
    switch (fault.k) {
      case 'ok':
        if (fault.f <= 0) return send(o.answer(text).body);
        return later(() => send(o.answer(text).body), fault.f * o.unitMs);
      case 'trickle':
        return later(() => send(o.answer(text).body), 2 * o.unitMs);
      case 'hang':
      case 'endless':
        return;
      case 'destroy':
      case 'reset-mid':
      case 'truncated':
        s.destroy();
        return;
      case 'malformed':
        return send('{"jsonrpc": "2.0", "result": not json');
      case 'status':
        return send(fault.status === 429 ? rpcError(429, 'Too Many Requests') : rpcError(-32603, `internal error (was HTTP ${fault.status})`));
      case 'rpc-error':
        return send(rpcError(fault.code, fault.message));
    }
  };
  const server: Server = createServer((_req, res) => res.writeHead(426).end());
  /** close() was called: an upgrade that arrives after it (a client reconnecting) is refused, or server.close() would wait on that socket for good. */
  let closing = false;
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    const key = req.headers['sec-websocket-key'];
    if (typeof key !== 'string' || closing) return void socket.destroy();
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    const accepted = `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`;
    if (o.upgradeDelayMs === undefined) socket.write(accepted);
    else later(() => void (socket.destroyed || socket.write(accepted)), o.upgradeDelayMs);
    sockets.set(socket, new Set());
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        if (buf.length < 2) return;
        const opcode = buf[0]! & 0x0f;
        let len = buf[1]! & 0x7f;
        let at = 2;
        if (len === 126) {
          if (buf.length < 4) return;
          len = buf.readUInt16BE(2);
          at = 4;
        } else if (len === 127) {
          if (buf.length < 10) return;
          len = Number(buf.readBigUInt64BE(2));
          at = 10;
        }
        const masked = (buf[1]! & 0x80) !== 0;
        const mask = masked ? buf.subarray(at, at + 4) : undefined;
        if (masked) at += 4;
        if (buf.length < at + len) return;
        const payload = Buffer.from(buf.subarray(at, at + len));
        if (mask !== undefined) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
        buf = buf.subarray(at + len);
        if (opcode === 1) onMessage(socket, payload.toString('utf8'));
        else if (opcode === 8) {
          if (!socket.destroyed) socket.end(frame(8, Buffer.alloc(0)));
        } else if (opcode === 9) socket.write(frame(10, payload));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const stats: ServerStats = {
    url: `ws://127.0.0.1:${port}`,
    hits: 0,
    log: [],
    openRequests: () => [...sockets.values()].reduce((k, s) => k + s.size, 0),
    openSockets: () => sockets.size,
    describeSockets: () => `${sockets.size} WebSocket connection(s)`,
    closeIdle: () => undefined,
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        for (const t of timers) clearTimeout(t);
        for (const s of sockets.keys()) s.destroy();
        server.close(() => resolve());
        // A connection still in its HTTP upgrade request is no socket above yet.
        server.closeAllConnections();
      }),
  };
  return stats;
}
