/**
 * Admission through the shared store (`sharedQuota`): before an attempt on an endpoint
 * whose limit is shared across processes, the store is asked whether the fleet may send
 * one more. The wait is bounded by the store's timeout; a store that fails or times out
 * is marked degraded (local limits at a reduced share) and the attempt goes ahead on
 * local limits. A refusal cools the endpoint down for as long as the store said, and the
 * call selects again.
 */
import { PoolError } from '../base/errors.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';

/** What admission needs from its call (which enters the `admission` wait before asking). */
export interface AdmissionHost<C> {
  /** Still waiting for the store's answer about `ep`. */
  awaitingAdmission(ep: EndpointState<C>): boolean;
  /** The wait is over: `refused` (select again) or go ahead with `ep` if it can still take the attempt. */
  admissionDone(ep: EndpointState<C>, now: number, refused: boolean): void;
}

/** Asks the store about `ep`; the answer reaches `host` unless it stopped waiting meanwhile. */
export function askStore<C>(s: PoolState<C>, host: AdmissionHost<C>, ep: EndpointState<C>): void {
  const shared = s.opts.sharedQuota!;
  const limit = ep.quota.shared!;
  let answer: Promise<number>;
  try {
    answer = Promise.resolve(shared.store.acquire(limit));
  } catch (error) {
    answer = Promise.reject(error);
  }
  answer.then(
    (waitMs) => {
      if (!host.awaitingAdmission(ep)) return;
      const t = s.clock.now();
      s.fleet!.storeAnswered(t);
      const spent = typeof waitMs === 'number' && waitMs > 0;
      // setEndpoints moved the endpoint to another quota meanwhile (another key, maybe): the answer is not that quota's; ask again.
      const moved = ep.quota.shared !== limit;
      // The fleet-wide quota is spent for now: skip this endpoint until it refills (or the day resets).
      if (spent && !moved && !s.fleet!.daySpent(ep, waitMs, t)) ep.quota.coolDown(t, waitMs);
      host.admissionDone(ep, t, spent || moved);
    },
    (error: unknown) => {
      if (!host.awaitingAdmission(ep)) return;
      const t = s.clock.now();
      s.fleet!.storeFailed(t, error);
      host.admissionDone(ep, t, false);
    },
  );
}

/** The store did not answer in time: degrade, and go ahead on local limits. */
export function admissionTimedOut<C>(s: PoolState<C>, host: AdmissionHost<C>, ep: EndpointState<C>): void {
  const now = s.clock.now();
  s.fleet!.storeFailed(now, new PoolError('ATTEMPT_TIMEOUT', 'the shared limiter store did not answer in time'));
  host.admissionDone(ep, now, false);
}
