/**
 * A copy of a call's options with some of the fields the RPC layer sets replaced (`pin`,
 * `exclude`, `avoid`, `deadlineMs`, `signal`, `idempotent`; `undefined` takes one away: the
 * pool reads a field set to `undefined` as one not given).
 *
 * Not `{ ...exec, signal }`: on Node 20 a spread followed by a field it did not copy takes
 * V8's slow path (about 1 µs, and a fresh hidden class each time). The fields come first
 * here, the caller's options over them, then the replacements.
 */
import type { ExecuteOptions } from '../options/options.js';

type Replaced = Pick<ExecuteOptions, 'pin' | 'exclude' | 'avoid' | 'deadlineMs' | 'signal' | 'idempotent'>;

export function execWith(exec: ExecuteOptions, fields: { readonly [K in keyof Replaced]?: Replaced[K] | undefined }): ExecuteOptions {
  const out: { -readonly [K in keyof Replaced]?: Replaced[K] | undefined } = { pin: undefined, exclude: undefined, avoid: undefined, deadlineMs: undefined, signal: undefined, idempotent: undefined, ...exec };
  if ('pin' in fields) out.pin = fields.pin;
  if ('exclude' in fields) out.exclude = fields.exclude;
  if ('avoid' in fields) out.avoid = fields.avoid;
  if ('deadlineMs' in fields) out.deadlineMs = fields.deadlineMs;
  if ('signal' in fields) out.signal = fields.signal;
  if ('idempotent' in fields) out.idempotent = fields.idempotent;
  return out as ExecuteOptions;
}
