/**
 * A scripted JSON-RPC server on 127.0.0.1: each request's method picks an answer.
 */
import type { IncomingMessage } from 'node:http';
import { startLoopback, type Loopback } from './loopback.js';

export type Answer =
  | { readonly result: unknown }
  | { readonly error: { code: number; message: string; data?: unknown } }
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body?: string }
  | { readonly hang: true }
  | { readonly destroy: true };

export interface RpcServer extends Loopback {
  /** Methods received, in order. */
  readonly methods: string[];
}

export async function startRpc(script: (method: string, params: unknown[], req: IncomingMessage) => Answer): Promise<RpcServer> {
  const methods: string[] = [];
  const lb = await startLoopback((req, res, body) => {
    let msg: { id?: unknown; method?: string; params?: unknown[] };
    try {
      msg = JSON.parse(body) as typeof msg;
    } catch {
      res.statusCode = 400;
      return res.end();
    }
    const method = String(msg.method);
    methods.push(method);
    const a = script(method, msg.params ?? [], req);
    if ('hang' in a) return;
    if ('destroy' in a) return req.socket.destroy();
    if ('status' in a) {
      res.writeHead(a.status, { 'content-type': a.body?.startsWith('{') === true ? 'application/json' : 'text/plain', ...a.headers });
      return res.end(a.body ?? '');
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...a }));
  });
  return Object.assign(lb, { methods });
}
