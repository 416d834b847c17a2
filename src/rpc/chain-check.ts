/**
 * The RPC adapters' chain check (`chainId`): a node is asked `eth_chainId` before it serves
 * its first request, once per connection, and one that serves another chain is never sent a
 * request of the caller's. Its attempt fails with `ChainMismatchError`, which the adapters
 * classify `permanent` with `disableEndpoint`: the endpoint is disabled (`endpoint-disabled`,
 * until `pool.enableEndpoint(name)`, which has it asked again) and the call moves on at once.
 *
 * The question is shared by the attempts that need it at the same time and bounded on the
 * pool's clock (the attempt timeout, 30 s when there is none), and given up (its request
 * aborted, its timer cleared) once every attempt waiting on it has ended: one that failed, went
 * unanswered or was given up is asked again by the next attempt, and only an answer of the
 * expected chain is remembered. A connection `setEndpoints` brings in is a new key, so a new node is asked too.
 */
import type { ClassifyResult } from '../base/classify.js';
import type { Clock } from '../base/clock.js';
import { describe, invalidOption, isPoolError, PoolError } from '../base/errors.js';
import { EndpointTakenError } from './quorum.js';

/** A node answered `eth_chainId` with another chain (or with no chain id at all). */
export class ChainMismatchError extends Error {
  override readonly name = 'ChainMismatchError' as const;
  readonly code = 'CHAIN_MISMATCH' as const;
  /** The endpoint whose node was asked. */
  readonly endpoint: string;
  /** The chain id the adapter was given. */
  readonly expected: number;
  /** What the node answered, as a number when it was a chain id. */
  readonly actual: number | undefined;

  constructor(endpoint: string, expected: number, answer: unknown) {
    const actual = chainIdOf(answer);
    super(`endpoint '${endpoint}' serves ${actual === undefined ? `no chain id (eth_chainId answered ${describe(answer)})` : `chain ${actual}`}, not chain ${expected}; it is disabled until pool.enableEndpoint('${endpoint}')`);
    this.endpoint = endpoint;
    this.expected = expected;
    this.actual = actual;
  }
}

/**
 * The endpoint lost its node (`setEndpoints` removed it or gave the name another) while that
 * node was asked its chain: the request is not sent to it. Classified as `EndpointTakenError`
 * is (`unsupported`): the call moves on at once.
 */
export class NodeLeftError extends EndpointTakenError {
  override readonly name = 'NodeLeftError';
  constructor(endpoint: string) {
    super(endpoint);
    this.message = `endpoint ${JSON.stringify(endpoint)} left the pool while its node was asked its chain; nothing was sent to it`;
  }
}

/** The question went unanswered for its bound: the attempt's failure, as a timeout is. */
class ChainCheckTimeout extends Error {
  override readonly name = 'ChainCheckTimeout' as const;
  readonly code = 'CHAIN_CHECK_TIMEOUT' as const;
}

/** A node of another chain: its endpoint is disabled and the call moves on. */
const WRONG_CHAIN: ClassifyResult = { class: 'permanent', disableEndpoint: true };

/**
 * How the adapters classify the check's own errors, before their classifier (which takes an
 * unknown error for a permanent answer): a node of another chain disables its endpoint; a
 * question unanswered in time is transient, so the call moves on or retries, as after a timeout.
 * `undefined` for any other error.
 */
export function chainCheckClass(error: unknown): ClassifyResult | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  const name = (error as Error).name;
  if (code === 'CHAIN_MISMATCH' && name === 'ChainMismatchError') return WRONG_CHAIN;
  if (code === 'CHAIN_CHECK_TIMEOUT' && name === 'ChainCheckTimeout') return 'transient';
  return undefined;
}

/** The question's bound when the pool sets no attempt timeout. */
const UNBOUNDED_MS = 30_000;

/** Validates the `chainId` option. */
export function checkChainId(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) throw invalidOption('chainId', 'a chain id (an integer > 0)', value);
  return value;
}

/** A question out: shared by the attempts waiting on it, and given up once every one of them has ended. */
interface Question {
  readonly answered: Promise<void>;
  waiting: number;
  readonly giveUp: () => void;
}

export class ChainCheck {
  readonly expected: number;
  readonly #clock: Clock;
  readonly #boundMs: number;
  /** Connections whose node answered the expected chain. */
  readonly #passed = new WeakSet<object>();
  /** The question out for a connection, shared by the attempts that wait on it. */
  readonly #asking = new WeakMap<object, Question>();
  /** Connections whose node answered another chain, with the error it made (until it is asked again and passes). */
  readonly #mismatched = new WeakMap<object, ChainMismatchError>();

  constructor(expected: number, clock: Clock, attemptTimeoutMs: number) {
    this.expected = expected;
    this.#clock = clock;
    this.#boundMs = attemptTimeoutMs === Infinity ? UNBOUNDED_MS : attemptTimeoutMs;
  }

  /** Whether the node behind `conn` is known to serve the expected chain. */
  passed(conn: object): boolean {
    return this.#passed.has(conn);
  }

  /**
   * Resolves once the node behind `conn` has answered the expected chain; rejects with
   * `ChainMismatchError`, or with the question's own failure. `ask(signal)` sends
   * `eth_chainId` to it and resolves with the result; `signal` aborts at the bound, or once
   * every attempt waiting on the question has ended (`attempt`: the waiting attempt's signal),
   * so that no question, its request or its timer, outlives the attempts that asked it (nor
   * the pool's `close()`).
   */
  verify(conn: object, endpoint: string, attempt: AbortSignal, ask: (signal: AbortSignal) => Promise<unknown>): Promise<void> {
    if (attempt.aborted) return Promise.reject(attempt.reason);
    const question = this.#asking.get(conn) ?? this.#ask(conn, endpoint, ask);
    question.waiting++;
    const left = (): void => {
      if (--question.waiting === 0) question.giveUp();
    };
    attempt.addEventListener('abort', left, { once: true });
    const stay = (): void => attempt.removeEventListener('abort', left);
    question.answered.then(stay, stay);
    return question.answered;
  }

  /**
   * Says why a call found no endpoint when the check disabled them: a `NO_ENDPOINT` with no
   * cause (a call that made no attempt: every endpoint was out before it began) while
   * disabled endpoints' nodes serve another chain is returned with their chains named, its
   * `cause` the last of their `ChainMismatchError`s. Any other error is returned as it is.
   */
  explain(error: unknown, endpoints: readonly { readonly conn: unknown; readonly disabled: boolean }[]): unknown {
    if (!isPoolError(error) || error.code !== 'NO_ENDPOINT' || error.cause !== undefined) return error;
    const found: ChainMismatchError[] = [];
    for (const ep of endpoints) {
      const m = ep.disabled && (typeof ep.conn === 'object' || typeof ep.conn === 'function') && ep.conn !== null ? this.#mismatched.get(ep.conn) : undefined;
      if (m !== undefined) found.push(m);
    }
    if (found.length === 0) return error;
    const chains = found.map((m) => `'${m.endpoint}' serves ${m.actual === undefined ? 'no chain id' : `chain ${m.actual}`}`).join(', ');
    return new PoolError('NO_ENDPOINT', `${error.message} (disabled by the chain check: ${chains}, not chain ${this.expected})`, { cause: found[found.length - 1], attempts: error.attempts, endpoint: error.endpoint, retryAfterMs: error.retryAfterMs });
  }

  /** A question for `conn`, out until it settles (then the next attempt asks afresh). */
  #ask(conn: object, endpoint: string, ask: (signal: AbortSignal) => Promise<unknown>): Question {
    const controller = new AbortController();
    let end!: (failure?: { readonly error: unknown }) => void;
    // Read only once it settles, which is never synchronous: `ask`'s answer and the timer come later, and so do aborts of the attempts that wait.
    let question!: Question;
    const answered = new Promise<void>((resolve, reject) => {
      let settled = false;
      end = (failure) => {
        if (settled) return;
        settled = true;
        // At once: an attempt that starts in this same turn asks afresh rather than joining a question given up
        // (deleted in a reaction to `answered`, a microtask late, it joined and failed with the question's timeout).
        if (this.#asking.get(conn) === question) this.#asking.delete(conn);
        this.#clock.clearTimeout(timer);
        if (failure === undefined) return resolve();
        controller.abort(failure.error);
        reject(failure.error);
      };
      const timer = this.#clock.setTimeout(() => end({ error: new ChainCheckTimeout(`endpoint '${endpoint}' did not answer eth_chainId within ${this.#boundMs} ms`) }), this.#boundMs, true);
      let sent: Promise<unknown>;
      try {
        sent = ask(controller.signal);
      } catch (error) {
        sent = Promise.reject(error);
      }
      sent.then(
        (answer) => {
          // A right answer is remembered even when it came too late for the attempts that asked.
          if (chainIdOf(answer) !== this.expected) {
            const mismatch = new ChainMismatchError(endpoint, this.expected, answer);
            this.#mismatched.set(conn, mismatch);
            return end({ error: mismatch });
          }
          this.#passed.add(conn);
          this.#mismatched.delete(conn);
          end();
        },
        (error: unknown) => end({ error }),
      );
    });
    question = { answered, waiting: 0, giveUp: () => end({ error: new ChainCheckTimeout(`endpoint '${endpoint}' was asked eth_chainId by attempts that have all ended`) }) };
    this.#asking.set(conn, question);
    return question;
  }
}

/** A chain id from an `eth_chainId` answer (a hex quantity; a number or bigint taken as given). */
function chainIdOf(answer: unknown): number | undefined {
  if (typeof answer === 'string' && /^0x[0-9a-f]{1,13}$/i.test(answer)) return Number.parseInt(answer, 16);
  if (typeof answer === 'number' && Number.isSafeInteger(answer)) return answer;
  if (typeof answer === 'bigint' && answer <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(answer);
  return undefined;
}
