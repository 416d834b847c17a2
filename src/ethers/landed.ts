/**
 * For a resent `eth_sendRawTransaction`: when a node answers "already known" / "nonce too
 * low" / "doesn't have the correct nonce", an earlier attempt whose answer was lost may
 * have landed this very transaction. The node is asked for it by hash
 * (`keccak256(raw)`); if it has it, the send succeeded and the hash is the answer; if it
 * says it has not, the original answer stands. A check that fails throws
 * `LandedCheckError` (transient: another endpoint is asked).
 */
import { keccak256 } from 'ethers';
import { DUPLICATE_SEND, LandedCheckError } from '../rpc/landed-check.js';
import { postJsonRpc, RpcAnswerError, type PostOptions, type RpcConnection } from './http.js';

export async function landedHash(conn: RpcConnection, params: unknown, error: unknown, o: PostOptions): Promise<string | undefined> {
  if (!(error instanceof RpcAnswerError) || !DUPLICATE_SEND.test(error.message)) return undefined;
  const raw = Array.isArray(params) ? (params[0] as unknown) : undefined;
  if (typeof raw !== 'string' || !/^0x[0-9a-fA-F]*$/.test(raw)) return undefined;
  let hash: string;
  try {
    hash = keccak256(raw);
  } catch {
    return undefined;
  }
  let tx: unknown;
  try {
    tx = await postJsonRpc(conn, 0, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'eth_getTransactionByHash', params: [hash] }), o);
  } catch (lookup) {
    // The node did not say it lacks the transaction: not final (another endpoint is asked).
    throw new LandedCheckError(error, lookup);
  }
  return tx !== null && tx !== undefined ? hash : undefined;
}
