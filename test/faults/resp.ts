/**
 * A tiny fake Redis on 127.0.0.1 for generated5.test.ts: it speaks RESP2 to a real client
 * (ioredis) and answers the store's admission script the way a plan says, right or wrong.
 *
 * Right: every slot wanted is admitted now (`[0, version, [], now, 0, …]`), or reserved 100
 * ms ahead (`later`). Wrong, each the
 * way a broken proxy, a wrong server or a bad network could answer: a reply of the wrong
 * type (status, integer, nil, a short or nested array, an error), bytes that are not RESP,
 * huge values (slot waits and clocks of 1e15, a refusal of 1e15 ms, a 2 MB version),
 * a reply cut in two with a pause of `slowMs` between the halves, a stall of `slowMs` before
 * a reply (and the replies after it: RESP answers in order), and the connection closed in the
 * middle of a reply. Commands other than scripts get what Redis
 * would answer (PING, INFO, SCRIPT LOAD, CLIENT, SELECT).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export type Wrong =
  | 'right'
  | 'later'
  | 'status'
  | 'integer'
  | 'nil'
  | 'short-array'
  | 'nested'
  | 'error'
  | 'garbage'
  | 'huge-slot'
  | 'huge-now'
  | 'huge-refusal'
  | 'huge-version'
  | 'split'
  | 'hang'
  | 'cut';

export const WRONG: readonly Wrong[] = ['status', 'integer', 'nil', 'short-array', 'nested', 'error', 'garbage', 'huge-slot', 'huge-now', 'huge-refusal', 'huge-version', 'split', 'hang', 'cut'];

export interface FakeRedis {
  readonly port: number;
  /** How the next script runs are answered: one entry per run, then `after` for the rest. */
  plan: Wrong[];
  after: Wrong;
  /** Script runs answered so far, by kind. */
  readonly answered: Record<string, number>;
  /** Connections open now. */
  connections(): number;
  close(): Promise<void>;
}

const SHA = 'a'.repeat(40);

const bulk = (s: string): string => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
const array = (items: string[]): string => `*${items.length}\r\n${items.join('')}`;
const int = (n: number | string): string => `:${n}\r\n`;

/** Parses complete RESP arrays of bulk strings from `buf`; returns the commands and the bytes used. */
function parseCommands(buf: Buffer): { commands: string[][]; used: number } {
  const commands: string[][] = [];
  let i = 0;
  const line = (from: number): { text: string; next: number } | undefined => {
    const end = buf.indexOf('\r\n', from, 'latin1');
    return end === -1 ? undefined : { text: buf.toString('latin1', from, end), next: end + 2 };
  };
  for (;;) {
    if (i >= buf.length) break;
    const head = line(i);
    if (head === undefined) break;
    if (!head.text.startsWith('*')) {
      // An inline command (not sent by ioredis): take the line's words.
      commands.push(head.text.split(' '));
      i = head.next;
      continue;
    }
    const n = Number(head.text.slice(1));
    let j = head.next;
    const words: string[] = [];
    let complete = true;
    for (let k = 0; k < n; k++) {
      const len = line(j);
      if (len === undefined) {
        complete = false;
        break;
      }
      const size = Number(len.text.slice(1));
      if (len.next + size + 2 > buf.length) {
        complete = false;
        break;
      }
      words.push(buf.toString('utf8', len.next, len.next + size));
      j = len.next + size + 2;
    }
    if (!complete) break;
    commands.push(words);
    i = j;
  }
  return { commands, used: i };
}

/** The admission reply for `want` slots with `wait` each, as RESP. */
function admission(want: number, o: { refused?: number; version?: string; now?: number; wait?: number } = {}): string {
  const now = o.now ?? Date.now();
  const slots = Array.from({ length: want }, () => int(o.wait ?? 0));
  return array([int(o.refused ?? 0), bulk(o.version ?? 'v0'), array([]), bulk(now.toFixed(3)), ...slots]);
}

export async function fakeRedis(slowMs: number): Promise<FakeRedis> {
  const sockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (fn: () => void, ms: number): void => {
    const t = setTimeout(() => (timers.delete(t), fn()), ms);
    timers.add(t);
  };
  const fake: FakeRedis = {
    port: 0,
    plan: [],
    after: 'right',
    answered: {},
    connections: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  /** The reply to a script run, as the parts to write in order: a string, a pause (ms), or `null` to close the connection. */
  const script = (args: string[]): (string | number | null)[] => {
    const kind = fake.plan.shift() ?? fake.after;
    fake.answered[kind] = (fake.answered[kind] ?? 0) + 1;
    // EVALSHA sha numkeys k... ARGV: the admission script has 11 arguments, the 8th the slots wanted.
    const numKeys = Number(args[2]);
    const argv = args.slice(3 + numKeys);
    const want = argv.length >= 11 ? Math.max(0, Number(argv[7]) || 0) : -1;
    // The report script answers 0.
    if (want < 0) return [int(0)];
    const right = admission(want);
    const half = Math.floor(right.length / 2);
    switch (kind) {
      case 'right':
        return [right];
      case 'later':
        // Right too: every slot reserved 100 ms ahead (a fleet at its ceiling).
        return [admission(want, { wait: 100 })];
      case 'status':
        return ['+OK\r\n'];
      case 'integer':
        return [int(1)];
      case 'nil':
        return ['$-1\r\n'];
      case 'short-array':
        return [array([int(0), bulk('v0')])];
      case 'nested':
        return [array([array([int(0)]), bulk('v0'), array([]), bulk('x'), int(0)])];
      case 'error':
        return ['-ERR something went wrong\r\n'];
      case 'garbage':
        return ['\u0000\u00ffnot resp at all\r\n'];
      case 'huge-slot':
        return [admission(want, { wait: 1e15 })];
      case 'huge-now':
        return [admission(want, { now: 1e15 })];
      case 'huge-refusal':
        return [array([int(1e15), bulk('v0'), array([]), bulk(Date.now().toFixed(3))])];
      case 'huge-version':
        return [admission(want, { version: 'v'.repeat(2_000_000) })];
      case 'split':
        return [right.slice(0, half), slowMs, right.slice(half)];
      case 'hang':
        // Redis stalls: this reply, and every one after it on the connection, waits.
        return [slowMs, right];
      case 'cut':
        return [right.slice(0, half), null];
    }
  };
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    // Replies leave in the order of their commands, as Redis's do: a paused one holds the rest.
    const out: (string | number | null)[] = [];
    let pausing = false;
    const flush = (): void => {
      while (!pausing && out.length > 0) {
        const part = out.shift()!;
        if (part === null) {
          out.length = 0;
          return void socket.destroy();
        }
        if (typeof part === 'number') {
          pausing = true;
          later(() => ((pausing = false), flush()), part);
        } else if (socket.writable) socket.write(part);
      }
    };
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const { commands, used } = parseCommands(buf);
      buf = buf.subarray(used);
      for (const c of commands) {
        const name = (c[0] ?? '').toUpperCase();
        if (name === 'EVALSHA' || name === 'EVAL') out.push(...script(c));
        else if (name === 'SCRIPT') out.push(bulk(SHA));
        else if (name === 'PING') out.push('+PONG\r\n');
        else if (name === 'INFO') out.push(bulk('# Server\r\nredis_version:7.0.0\r\nloading:0\r\n'));
        else out.push('+OK\r\n');
      }
      flush();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (fake as { port: number }).port = (server.address() as AddressInfo).port;
  return fake;
}
