/**
 * A send answered "already known" / "nonce too low" whose check by hash could not be made
 * (the lookup failed: the node went away, timed out, answered with an error). The
 * transaction may have landed, and the node has not said otherwise: the answer is not
 * final. Classified `transient` by both RPC adapters, so another endpoint is asked (where
 * the send meets the same answer and a check that works). Only a node that answers the
 * check with "no such transaction" makes its duplicate answer final.
 */
export class LandedCheckError extends Error {
  override readonly name = 'LandedCheckError' as const;
  /** The node's duplicate answer (`already known`, `nonce too low`, ...). */
  declare readonly answer: unknown;

  constructor(answer: unknown, lookupFailure: unknown) {
    super('the node answered that it already has this transaction (or its nonce), and asking it for the transaction by hash failed: the send may have landed', { cause: lookupFailure });
    Object.defineProperty(this, 'answer', { value: answer, enumerable: false });
  }
}

/**
 * A send's answer that the node already has this transaction, or a transaction with its
 * nonce, in each client's words: geth, Erigon and reth "already known", "nonce too low";
 * Erigon's pool also "existing tx with same hash" (its `DuplicateHash`); Besu "Known
 * transaction"; Nethermind `-32010` "AlreadyKnown" and "OldNonce, Current nonce: N, nonce of
 * rejected tx: M"; OpenEthereum "Transaction with the same hash was already imported",
 * "Transaction nonce is too low" and "doesn't have the correct nonce". An earlier attempt may
 * have landed it.
 */
export const DUPLICATE_SEND = /already ?known|known transaction|nonce (is )?too low|oldnonce|already imported|existing tx with same hash|nonce has already been used|correct nonce/i;
