/**
 * Calls queued for a pool-wide permit, first come first served: with the pool's
 * `maxConcurrentCalls` and `permitScope`, the concurrency-limit feature (features.ts
 * `concurrency`).
 *
 * An intrusive doubly linked list: the waiting call is its own node, so joining, leaving
 * from anywhere (an abort, a deadline, `close()`) and taking the head are all O(1) with no
 * allocation. `close()` with 80,000 queued calls, or 100,000 callers aborting one by one,
 * stays linear in the number of calls.
 */
import type { FeatureOptions } from '../features.js';
import { DEFAULTS } from '../options/defaults.js';
import { PERMIT_SCOPES } from '../options/options.js';
import { limitOrInfinity, oneOf } from '../options/validate.js';

/** The pool's `maxConcurrentCalls` and `permitScope` (the feature's options, features.ts). */
export const permitOptions: FeatureOptions = (o) => ({
  maxConcurrentCalls: limitOrInfinity('maxConcurrentCalls', o['maxConcurrentCalls']),
  permitScope: oneOf('permitScope', o['permitScope'], PERMIT_SCOPES, DEFAULTS.permitScope),
});

/** A queued call: the queue links through these fields. */
export interface PermitWaiter {
  permitPrev: PermitWaiter | undefined;
  permitNext: PermitWaiter | undefined;
  /** Whether it is in a permit queue now. */
  inPermitQueue: boolean;
  /** A permit was handed to it. */
  grantPermit(): void;
}

export class PermitQueue {
  #head: PermitWaiter | undefined;
  #tail: PermitWaiter | undefined;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(w: PermitWaiter): void {
    w.inPermitQueue = true;
    w.permitNext = undefined;
    w.permitPrev = this.#tail;
    if (this.#tail === undefined) this.#head = w;
    else this.#tail.permitNext = w;
    this.#tail = w;
    this.#length++;
  }

  /** Takes the longest-waiting call out of the queue. */
  shift(): PermitWaiter | undefined {
    const w = this.#head;
    if (w !== undefined) this.remove(w);
    return w;
  }

  /** Takes `w` out of the queue, wherever it is; a call not queued is ignored. */
  remove(w: PermitWaiter): void {
    if (!w.inPermitQueue) return;
    w.inPermitQueue = false;
    const prev = w.permitPrev;
    const next = w.permitNext;
    if (prev === undefined) this.#head = next;
    else prev.permitNext = next;
    if (next === undefined) this.#tail = prev;
    else next.permitPrev = prev;
    w.permitPrev = w.permitNext = undefined;
    this.#length--;
  }
}
