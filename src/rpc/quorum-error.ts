/**
 * The failure of a quorum read: a `PoolError` with code `QUORUM_NOT_MET` that carries
 * every answer the read collected (results, node errors, failures), redacted of URLs,
 * so that a caller can see who disagreed with whom.
 */
import { PoolError } from '../base/errors.js';

/** One endpoint's contribution to a quorum read. */
export interface QuorumAnswer {
  /** The endpoint (`undefined` when a leg failed before reaching one). */
  readonly endpoint: string | undefined;
  /** Its vote weight. */
  readonly weight: number;
  /** `result`: it answered; `error`: it answered with an error (a vote too); `failed`: no answer. */
  readonly kind: 'result' | 'error' | 'failed';
  /** The result (for `result`), redacted of URLs and cut short when long. */
  readonly value?: unknown;
  /** A short description of the error (for `error` and `failed`), redacted of URLs. */
  readonly error?: string;
  /** Index of the group of agreeing answers it belongs to (results and errors only). */
  readonly group?: number;
}

export class QuorumError extends PoolError {
  /** Weight the read needed. */
  readonly needed: number;
  /** Weight of the largest group of agreeing answers. */
  readonly bestWeight: number;
  readonly answers: readonly QuorumAnswer[];

  constructor(message: string, details: { needed: number; bestWeight: number; answers: readonly QuorumAnswer[]; attempts: number; cause?: unknown }) {
    super('QUORUM_NOT_MET', message, { attempts: details.attempts, ...(details.cause === undefined ? {} : { cause: details.cause }) });
    this.needed = details.needed;
    this.bestWeight = details.bestWeight;
    this.answers = details.answers;
  }
}
