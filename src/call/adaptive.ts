/**
 * The pool's side of an adaptive limit (limits/adaptive.ts): feeds it the answers, applies
 * the rate it decides to the quota's limiter, and reports `endpoint-adapted`.
 */
import type { Quota } from '../limits/quota.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';
import { liveName } from './outcome.js';

/** A rate-limited answer with no number, for an attempt sent at `sentAt`. */
export function adaptDown<C>(s: PoolState<C>, ep: EndpointState<C>, q: Quota, sentAt: number, now: number): void {
  const a = q.adaptive!;
  const previous = a.rate;
  const rate = a.limited(now, sentAt);
  if (rate === undefined) return;
  q.adapted(now);
  q.waiters?.poke();
  const name = liveName(s, ep, q);
  if (rate !== previous && name !== undefined) s.emit({ type: 'endpoint-adapted', endpoint: name, perSecond: rate, previous, reason: 'decrease' });
}

/** A success: the increase due, if any. */
export function adaptUp<C>(s: PoolState<C>, ep: EndpointState<C>, now: number): void {
  // With this feature, every endpoint's quota is a Quota (features-all.ts).
  const q = ep.quota as Quota;
  const a = q.adaptive!;
  a.succeeded(now);
  const previous = a.rate;
  const rate = a.increase(now, q.rate?.intervalMs ?? 1000 / previous);
  if (rate === undefined) return;
  q.adapted(now);
  q.waiters?.poke();
  const name = liveName(s, ep, q);
  if (name !== undefined) s.emit({ type: 'endpoint-adapted', endpoint: name, perSecond: rate, previous, reason: 'increase' });
}
