/**
 * For a resent `eth_sendRawTransaction`: when a node answers "already known" / "nonce too
 * low" / "doesn't have the correct nonce", an earlier attempt whose answer was lost may
 * have landed this very transaction. The node is asked for it by hash
 * (`keccak256(raw)`); if it has it, the send succeeded and the hash is the answer.
 * Anything going wrong here leaves the original answer in place.
 */
import { keccak256 } from 'ethers';
import { postJsonRpc, RpcAnswerError, type PostOptions, type RpcConnection } from './http.js';

const DUPLICATE = /already known|known transaction|nonce too low|already imported|nonce has already been used|correct nonce/i;

export async function landedHash(conn: RpcConnection, params: unknown, error: unknown, o: PostOptions): Promise<string | undefined> {
  if (!(error instanceof RpcAnswerError) || !DUPLICATE.test(error.message)) return undefined;
  const raw = Array.isArray(params) ? (params[0] as unknown) : undefined;
  if (typeof raw !== 'string' || !/^0x[0-9a-fA-F]*$/.test(raw)) return undefined;
  try {
    const hash = keccak256(raw);
    const tx = await postJsonRpc(conn, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'eth_getTransactionByHash', params: [hash] }), o);
    return tx !== null && tx !== undefined ? hash : undefined;
  } catch {
    return undefined;
  }
}
