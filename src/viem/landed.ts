/**
 * `eth_sendRawTransaction` answered "already known" / "nonce too low": whether the node
 * already has this very transaction (then an earlier attempt landed it). A check that
 * fails throws `LandedCheckError` (transient): only a node that answers "no such
 * transaction" leaves its duplicate answer final.
 */
import { DUPLICATE_SEND, LandedCheckError } from '../rpc/landed-check.js';
import { classifyViemError } from './classify.js';
import type { RpcArgs, RpcRequestOptions, TransportInstance } from './types.js';

/**
 * For a duplicate-looking send: the hash, if this node has this exact transaction;
 * `undefined` if it says it has not (the original answer stands); throws
 * `LandedCheckError` if the check itself failed.
 */
export async function alreadyLanded(
  t: TransportInstance,
  args: RpcArgs,
  error: unknown,
  keccak256: (hex: `0x${string}`) => `0x${string}`,
  opts: RpcRequestOptions,
): Promise<`0x${string}` | undefined> {
  const raw = Array.isArray(args.params) ? (args.params[0] as unknown) : undefined;
  if (typeof raw !== 'string' || !raw.startsWith('0x')) return undefined;
  const c = classifyViemError(error);
  if (c !== 'permanent' || !DUPLICATE_SEND.test(textOf(error))) return undefined;
  let hash: `0x${string}`;
  try {
    hash = keccak256(raw as `0x${string}`);
  } catch {
    return undefined;
  }
  let tx: unknown;
  try {
    tx = await t.request({ method: 'eth_getTransactionByHash', params: [hash] }, opts);
  } catch (lookup) {
    // The node did not say it lacks the transaction: not final (another endpoint is asked).
    throw new LandedCheckError(error, lookup);
  }
  return tx !== null && tx !== undefined ? hash : undefined;
}

function textOf(error: unknown): string {
  const parts: string[] = [];
  let e: unknown = error;
  for (let i = 0; i < 12 && typeof e === 'object' && e !== null; i++) {
    const r = e as Record<string, unknown>;
    for (const k of ['shortMessage', 'details', 'message']) if (typeof r[k] === 'string') parts.push(r[k]);
    e = r['cause'];
  }
  return parts.join(' ');
}
