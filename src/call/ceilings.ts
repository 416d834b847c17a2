/**
 * Learned ceilings at two levels, and the cooldown a rate-limited answer sets.
 *
 * An endpoint alone has one level: its quota. An endpoint in a group has two: the quota
 * the group shares (the account's bucket) and, once a hint described the key alone, the
 * key's own (`ep.own`), which paces that member only. A hint lowers the level it came
 * from: the classifier may say which (`ceilingScope`); otherwise the number decides. A
 * number below both levels in force is taken for the key's own limit (a key's limit
 * never lowers its siblings); a number at or above the key's own level (the key was
 * already paced there and was still refused), or at or above the group's, describes the
 * group. So when a group's shared limit really drops, the first answers lower the keys
 * that gave them, and the next one from an already lowered key lowers the group.
 *
 * Both levels recover (limits/ceiling.ts). A key's own level recovers toward the
 * group's configured rate and is dropped once it reaches the group's ceiling.
 */
import type { Verdict } from '../base/classify.js';
import { Quota } from '../limits/quota.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';

const INF = Number.POSITIVE_INFINITY;
/** Retry-After gets up to this much on top, from the pool's random source, so callers hit by one answer do not return together. */
const RETRY_AFTER_JITTER = 0.25;

/**
 * Applies a `ceilingPerSecond` hint to the level it describes (cooling that level down
 * for `rateLimitCooldownMs`). Returns the level the answer came from: the quota to cool
 * after a rate-limited answer.
 */
export function learnCeiling<C>(s: PoolState<C>, ep: EndpointState<C>, verdict: Verdict, now: number): Quota {
  const hinted = verdict.ceilingPerSecond;
  const group = ep.quota;
  if (hinted === undefined) {
    if (verdict.class === 'rate-limited') {
      group.learned?.limited(now);
      ep.own?.learned?.limited(now);
    }
    return group;
  }
  const scope = group.grouped ? (verdict.ceilingScope ?? defaultScope(ep, hinted)) : 'key';
  let level = group;
  let perSecond: number;
  if (scope === 'key' && group.grouped) {
    level = ep.own ??= new Quota(undefined, s.opts.dailyResetUtcHour, now, `key:${ep.name}`);
    perSecond = level.learn(hinted, now, group.configured ?? group.perSecond);
  } else {
    perSecond = level.learn(hinted, now);
  }
  level.coolDown(now, s.opts.rateLimitCooldownMs);
  if (s.listener !== undefined) {
    s.emit(
      perSecond !== hinted
        ? { type: 'endpoint-recalibrated', endpoint: ep.name, perSecond, scope: group.grouped ? scope : 'key', reason: 'hint', clampedFrom: hinted }
        : { type: 'endpoint-recalibrated', endpoint: ep.name, perSecond, scope: group.grouped ? scope : 'key', reason: 'hint' },
    );
  }
  return level;
}

function defaultScope<C>(ep: EndpointState<C>, n: number): 'key' | 'group' {
  const own = ep.own?.perSecond ?? INF;
  const group = ep.quota.perSecond ?? INF;
  return n < own && n < group ? 'key' : 'group';
}

/**
 * The cooldown of a rate-limited answer on `level`: the server's Retry-After plus up to
 * 25 % jitter; with a learned ceiling and no Retry-After, `rateLimitCooldownMs`; with no
 * hint at all, `rateLimitCooldownMs` doubled for each such answer in a row (reset by a
 * success). Capped at `maxCooldownMs` (the backoff's `maxMs`).
 */
export function rateLimitCooldownMs<C>(s: PoolState<C>, level: Quota, verdict: Verdict, maxCooldownMs: number): number {
  let ms: number;
  if (verdict.retryAfterMs !== undefined) {
    const r = s.random();
    ms = verdict.retryAfterMs * (1 + RETRY_AFTER_JITTER * (r >= 0 && r < 1 ? r : 0));
  } else if (verdict.ceilingPerSecond !== undefined) {
    ms = s.opts.rateLimitCooldownMs;
  } else {
    ms = s.opts.rateLimitCooldownMs * 2 ** Math.min(level.limitedRun, 30);
    level.limitedRun++;
  }
  return Math.min(Math.round(ms), maxCooldownMs);
}

/** Recovery steps due on `ep`'s levels (after a success, or when `stats()`/`capacity()` look). */
export function recoverCeilings<C>(s: PoolState<C>, ep: EndpointState<C>, now: number): void {
  const r = s.opts.ceilingRecovery;
  const group = ep.quota;
  const g = group.recover(now, r);
  if (g !== undefined) {
    group.waiters?.poke();
    s.emit({ type: 'endpoint-recalibrated', endpoint: ep.name, perSecond: g, scope: group.grouped ? 'group' : 'key', reason: 'recovery' });
  }
  const own = ep.own;
  if (own === undefined) return;
  const k = own.recover(now, r);
  if (k === undefined) return;
  // Back at the group's level: the key's own limit has nothing left to say.
  if (k >= (group.perSecond ?? INF) || own.learned === undefined || k >= own.learned.target) ep.own = undefined;
  group.waiters?.poke();
  s.emit({ type: 'endpoint-recalibrated', endpoint: ep.name, perSecond: k, scope: 'key', reason: 'recovery' });
}
