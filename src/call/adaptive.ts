/**
 * The pool's side of an adaptive limit (limits/adaptive.ts): feeds it the answers, applies
 * the rate it decides to the quota's limiter, and reports `endpoint-adapted`.
 */
import type { Quota } from '../limits/quota.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';

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

/**
 * The name an event about limit `q` goes under: the answering endpoint's; for one that
 * `setEndpoints` replaced or removed, a live endpoint that shares `q` (a group its live
 * members kept: the account's answer), else none (its name may be a replacement's now).
 */
export function liveName<C>(s: PoolState<C>, ep: EndpointState<C>, q: Quota): string | undefined {
  if (ep.live) return ep.name;
  for (const e of s.endpoints) if (e.quota === q) return e.name;
  return undefined;
}

/** A success (`ok`), or a look from `stats()`/`capacity()`: the increase due, if any. */
export function adaptUp<C>(s: PoolState<C>, ep: EndpointState<C>, now: number, ok: boolean): void {
  const q = ep.quota;
  const a = q.adaptive!;
  if (ok) a.succeeded(now);
  const previous = a.rate;
  const rate = a.increase(now, q.rate?.intervalMs ?? 1000 / previous);
  if (rate === undefined) return;
  q.adapted(now);
  q.waiters?.poke();
  const name = liveName(s, ep, q);
  if (name !== undefined) s.emit({ type: 'endpoint-adapted', endpoint: name, perSecond: rate, previous, reason: 'increase' });
}
