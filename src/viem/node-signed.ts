/**
 * Sends a node carries out with its own key or state (`eth_sendTransaction`: the node signs
 * with its account and picks the nonce), which the adapters never send twice.
 *
 * Unlike `eth_sendRawTransaction` (signed bytes: a copy sent anywhere is the same
 * transaction, its nonce taken once), each run of these makes a new effect: a second
 * `eth_sendTransaction` after a lost answer is a second transfer, signed with the next nonce.
 * So once such a request may have reached a node (it was sent and then failed in a way that
 * proves nothing: a reset, a timeout, a 5xx, an answer that is not JSON-RPC), the call ends
 * with `PERMANENT` instead of moving on, as the fetch adapter does for a POST
 * (`NotReplayableError`, src/fetch/replay.ts). It moves on only after a failure that proves
 * the request was not processed: a refused connection (or a name that does not resolve), an
 * HTTP 408, 429 or 503 answer, a JSON-RPC answer that says "rate-limited", "not supported",
 * "unauthorized" or "pool full", or a refusal before anything was sent (a node of another
 * chain, a taken endpoint). A node's error answer (a revert, "insufficient funds") ends the
 * call as any answer does.
 *
 * Shared by both RPC adapters; it lives here, beside the viem classifier it reads, because
 * the core (src/rpc/) imports no adapter.
 */
import { UNSENT, type ClassifyResult } from '../base/classify.js';
import { isPoolError, PoolError } from '../base/errors.js';
import { NotReplayableError, neverProcessed } from '../fetch/replay.js';
import { gatherEvidence, POOL_FULL } from './classify.js';

/**
 * The methods: the node (or wallet) signs with its own key and sends (`eth_sendTransaction`,
 * `personal_sendTransaction`, Parity's `personal_signAndSendTransaction`, EIP-5792's
 * `wallet_sendCalls`, `wallet_sendTransaction`), and development-node controls that add to
 * the state on each run (a block mined, time moved on, an account made). Signing alone
 * (`eth_sign`, `eth_signTransaction`, `personal_sign`) changes nothing and may be repeated.
 */
const NODE_SIGNED: ReadonlySet<string> = new Set([
  'eth_sendTransaction',
  'personal_sendTransaction',
  'personal_signAndSendTransaction',
  'wallet_sendCalls',
  'wallet_sendTransaction',
  'personal_newAccount',
  'evm_mine',
  'anvil_mine',
  'hardhat_mine',
  'evm_increaseTime',
  'anvil_increaseTime',
]);

/** Of those, the sends a node signs (the rest are development-node controls and account creation). */
const SENDS: ReadonlySet<string> = new Set(['eth_sendTransaction', 'personal_sendTransaction', 'personal_signAndSendTransaction', 'wallet_sendCalls', 'wallet_sendTransaction']);

/** True for a method that must not be sent again once it may have reached a node. */
export function isNodeSigned(method: string): boolean {
  return NODE_SIGNED.has(method);
}

/** Statuses whose answer says the request was not processed. */
const NOT_PROCESSED_STATUS: ReadonlySet<number> = new Set([408, 429, 503]);
/** Classes of an answer that refused the request without carrying it out. */
const REFUSALS: ReadonlySet<string> = new Set(['rate-limited', 'unsupported', 'unauthorized', 'permanent', 'retry-narrower']);

/** Whether `error` (of class `c`) proves the request was not carried out. */
export function notProcessed(error: unknown, c: ClassifyResult): boolean {
  if (REFUSALS.has(typeof c === 'string' ? c : c.class)) return true;
  if (neverProcessed(error)) return true;
  const ev = gatherEvidence(error);
  if (ev.status !== undefined && NOT_PROCESSED_STATUS.has(ev.status)) return true;
  return ev.code !== undefined && ev.code !== -1 && POOL_FULL.test(ev.text);
}

/** A node-signed send that may have reached a node is not sent again: the call ends with `PERMANENT`. */
export class SendNotRepeatedError extends NotReplayableError {
  /** Raised before this attempt sent anything (an earlier one may have reached a node). */
  readonly unsent: boolean;

  constructor(method: string, endpoint: string, cause: unknown, unsent: boolean, answered = false) {
    super(method, endpoint, cause);
    const at = JSON.stringify(endpoint);
    const why = SENDS.has(method)
      ? 'the node signs it and picks its nonce, so another send could make a second transaction (sign it yourself and send it with eth_sendRawTransaction to fail over)'
      : 'each run adds to the node\'s state, so another would do it twice';
    this.message = answered
      ? `the function is not run again on another endpoint: its ${method} request was answered by endpoint ${at}, and ${why}`
      : `the ${method} request may have reached endpoint ${at} before it failed, and is not sent again: ${why}`;
    this.unsent = unsent;
  }
}

const REFUSED_UNSENT = { class: 'permanent', [UNSENT]: true } as ClassifyResult;

/** The class of a `SendNotRepeatedError` (`permanent`; one raised before sending says nothing of its endpoint); `undefined` for any other error. */
export function notRepeatedClass(error: unknown): ClassifyResult | undefined {
  return error instanceof SendNotRepeatedError ? (error.unsent ? REFUSED_UNSENT : 'permanent') : undefined;
}

/** A call ended by `SendNotRepeatedError` fails with its message and endpoint, its cause the original failure; any other error as it is. */
export function notRepeatedFailure(error: unknown): unknown {
  if (!isPoolError(error) || !(error.cause instanceof SendNotRepeatedError)) return error;
  const nr = error.cause;
  return new PoolError(error.code, nr.message, { cause: nr.cause, attempts: error.attempts, endpoint: nr.endpoint });
}

/**
 * One call's guard (a plain request, or a whole `withEndpoint` run): once a node-signed
 * request of it was answered, or may have reached a node, no later attempt sends again.
 */
export class SendGuard {
  readonly #method: string;
  /** Requests sent and not yet settled: an attempt that ended meanwhile (a timeout) may have reached its node. */
  #out = 0;
  #last: { endpoint: string; signal: AbortSignal | undefined } | undefined;
  #reached: { endpoint: string; error: unknown; answered?: true } | undefined;

  constructor(method: string) {
    this.#method = method;
  }

  /** Called as an attempt starts: throws when an earlier one may have reached a node. */
  enter(): void {
    if (this.#reached === undefined && this.#out > 0 && this.#last !== undefined) this.#reached = { endpoint: this.#last.endpoint, error: this.#last.signal?.reason ?? new Error('its attempt ended before the node answered') };
    if (this.#reached !== undefined) throw new SendNotRepeatedError(this.#method, this.#reached.endpoint, this.#reached.error, true, this.#reached.answered);
  }

  /** A node-signed request is about to be sent to `endpoint`. */
  sending(endpoint: string, signal: AbortSignal | undefined): void {
    this.#out++;
    this.#last = { endpoint, signal };
  }

  /** It was answered: the send happened. */
  answered(endpoint: string): void {
    this.#out--;
    this.#reached ??= { endpoint, error: undefined, answered: true };
  }

  /** It failed with `error` (of class `c`): the error to throw (`SendNotRepeatedError` unless it proves nothing was done). */
  failed(endpoint: string, error: unknown, c: ClassifyResult, method = this.#method): unknown {
    this.#out--;
    if (notProcessed(error, c)) return error;
    this.#reached ??= { endpoint, error };
    return new SendNotRepeatedError(method, endpoint, error, false);
  }
}

/** `send()` under `guard`: its answer or failure recorded, a failure that proves nothing turned into `SendNotRepeatedError`. */
export function sendGuarded(guard: SendGuard, method: string, endpoint: string, signal: AbortSignal | undefined, send: () => Promise<unknown>, classOf: (error: unknown) => ClassifyResult): Promise<unknown> {
  guard.sending(endpoint, signal);
  let sent: Promise<unknown>;
  try {
    sent = send();
  } catch (error) {
    sent = Promise.reject(error);
  }
  return sent.then(
    (result) => {
      guard.answered(endpoint);
      return result;
    },
    (error: unknown) => {
      throw guard.failed(endpoint, error, classOf(error), method);
    },
  );
}
