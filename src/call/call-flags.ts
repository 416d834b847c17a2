/** The call's own bits in the waits' flags field (one field for both: heap per call in flight; see waits.ts). */
import { FREE_BIT } from './call-core.js';

export const RETRY_PENDING = FREE_BIT; // a retryable failure; cleared by the next attempt or the `retry-scheduled` event
export const BACKED_OFF = FREE_BIT * 2; // a sleep since the last failure: a tried endpoint may be used at once
export const PANIC = FREE_BIT * 4; // the current selection came from a tier in panic mode (its breakers are ignored)
export const REPORTING = FREE_BIT * 8; // an attempt's failure is being reported: its news (a breaker turn, a park) come before its attempt-failure
export const ABORT_HELD = FREE_BIT * 16; // the caller aborted meanwhile (a listener of that news): the call fails once attempt-failure is out
export const CLOSE_HELD = FREE_BIT * 32; // close({ abortAfterMs }) ended it meanwhile: the call fails CLOSED once attempt-failure is out
