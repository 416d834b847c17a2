/**
 * Learned ceilings at two levels (the cooldown a rate-limited answer sets is the core's: outcome.ts).
 *
 * An endpoint alone has one level: its quota. An endpoint in a group has two: the quota
 * the group shares (the account's bucket) and, once a hint described the key alone, the
 * key's own (`ep.own`), which paces that member only. A hint lowers the level it came
 * from: the classifier may say which (`ceilingScope`); otherwise the number decides. A
 * number at or above the group's ceiling in force describes the group (its bucket is
 * what is full). A number below it is taken for the key's own limit (a key's limit never
 * lowers its siblings), unless another member of the group reported the same number
 * within the quiet period of `ceilingRecovery`: two keys saying the same thing describe
 * the account, and the group is lowered (a number that lowered the group is used up: it
 * pairs with no later report); except when, in the last 2 s, the server
 * accepted more than that number of the group's calls started within one second less the
 * pacing margin (two keys whose own limits happen to be equal, under a faster account). So when an account's shared limit really drops,
 * the first answer lowers the key that gave it, the next one from a sibling lowers the
 * group; a key that keeps repeating its own limit (network jitter at the edge of its
 * window) never does, until it is refused with that number at the lowest pace the repeats
 * take it to (80 % of it, limits/ceiling.ts): then the overflow is its siblings', and the
 * group is lowered as on a pair. A group lowered on such a pair is lowered on a guess, and
 * probes back up sooner (a quarter of the quiet period, limits/ceiling.ts).
 *
 * Both levels recover (limits/ceiling.ts). A key's own level recovers toward the
 * group's configured rate and is dropped once it reaches the group's ceiling.
 */
import type { Verdict } from '../base/classify.js';
import { clampLearned } from '../limits/ceiling.js';
import { keyLevel, type Quota } from '../limits/quota.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';

const INF = Infinity;
/** How far back accepted attempts prove that a group admits more than a hinted number. */
const PROOF_MS = 2000;

/**
 * Applies a `ceilingPerSecond` hint to the level it describes (cooling that level down
 * for one interval of the new ceiling: the server said how fast, pacing at that rate is
 * the remedy). Returns the level the answer came from: the quota to cool
 * after a rate-limited answer.
 */
export function learnCeiling<C>(s: PoolState<C>, ep: EndpointState<C>, verdict: Verdict, now: number, sentAt = now): Quota {
  const hinted = verdict.ceilingPerSecond;
  // With this feature, every endpoint's quota is a Quota (features-all.ts).
  const group = ep.quota as Quota;
  // The recovery steps due are taken first: the answer meets the levels as they stand now,
  // whether or not a success applied those steps since they fell due.
  if ((hinted !== undefined || verdict.class === 'rate-limited') && (group.learned !== undefined || ep.own !== undefined)) recoverCeilings(s, ep, now);
  if (hinted === undefined) {
    // A key's spent day is the key's (it is parked alone, see outcome.ts): its cooldown too.
    if (verdict.dailyQuotaExhausted && group.grouped) return ownLevel(s, ep, now);
    if (verdict.class === 'rate-limited') {
      group.learned?.limited(now);
      ep.own?.learned?.limited(now);
    }
    return group;
  }
  // A replaced or removed endpoint's number describes that key alone: a group it shared is the live members' to learn.
  const picked = group.grouped && ep.live ? (verdict.ceilingScope ?? defaultScope(s, ep, hinted, now, sentAt)) : 'key';
  // Two keys' equal numbers are only a guess at their account's: that level probes up sooner.
  const weak = picked === 'paired';
  const scope = weak ? 'group' : picked;
  const before = scope === 'key' && group.grouped ? (ep.own?.perSecond ?? group.perSecond) : group.perSecond;
  let level = group;
  let perSecond: number;
  if (scope === 'key' && group.grouped) {
    level = ownLevel(s, ep, now);
    perSecond = level.learn(hinted, now, group.configured ?? group.perSecond, sentAt);
  } else {
    perSecond = level.learn(hinted, now, undefined, sentAt, weak);
  }
  // The server said how fast: pacing at that rate is the remedy, so skip one slot, not a whole cooldown.
  level.coolDown(now, Math.min(s.opts.rateLimitCooldownMs, Math.ceil(level.rate!.intervalMs)));
  // Calls queued on the group were promised turns at the old ceiling (see waiters.ts `recheck`);
  // their new turns come after the slot just skipped, and after the refused call if it queues again.
  // In a microtask, as for a longer cooldown (outcome.ts): the calls it takes out select again,
  // and may start attempts, only once this answer's attempt has ended and its events are out.
  if (perSecond < (before ?? INF)) queueMicrotask(() => group.waiters?.recheck(s.clock.now()));
  // Emitted with no listener too: the event is what shares the ceiling with the fleet (limits/fleet.ts `#share`).
  // A replaced or removed endpoint's late answer is not news of the live one of that name (nor for the fleet).
  if (ep.live) {
    s.emit(
      clampLearned(hinted) !== hinted
        ? { type: 'endpoint-recalibrated', endpoint: ep.name, perSecond, scope: group.grouped ? scope : 'key', reason: 'hint', clampedFrom: hinted }
        : { type: 'endpoint-recalibrated', endpoint: ep.name, perSecond, scope: group.grouped ? scope : 'key', reason: 'hint' },
    );
  }
  return level;
}

/** A grouped endpoint's own level, created on first use. */
export function ownLevel<C>(s: PoolState<C>, ep: EndpointState<C>, now: number): Quota {
  return (ep.own ??= keyLevel(ep.quota as Quota, ep.name, s.opts.dailyResetUtcHour, now, s.wall)) as Quota;
}

function defaultScope<C>(s: PoolState<C>, ep: EndpointState<C>, n: number, now: number, sentAt: number): 'key' | 'group' | 'paired' {
  const q = ep.quota as Quota;
  const last = q.lastKeyHint;
  // A number that describes the group uses up the key hints before it: after the group has
  // recovered, a key's own limit that happens to be the same number must not pair with them.
  if (n >= (q.perSecond ?? INF)) return (q.lastKeyHint = undefined), 'group';
  q.lastKeyHint = { perSecond: n, from: ep.name, at: now };
  // The group was just seen carrying more than n calls in a second: n is not its limit.
  if (q.acceptedMoreThan(n, 1000 - q.marginMs, now - PROOF_MS)) return 'key';
  // Refused with the same number again although sent at the key's lowest pace for it (a
  // fifth under it, limits/ceiling.ts): not the key's own limit, nor a rounding at its edge.
  // What overflows is what the key shares: the number is the account's (a guess, as a pair).
  if (ep.own?.learned?.refusedAtFloor(n, sentAt) === true) {
    q.lastKeyHint = undefined;
    return 'paired';
  }
  if (last === undefined || last.perSecond !== n || last.from === ep.name || now - last.at > s.opts.ceilingRecovery.quietMs) return 'key';
  q.lastKeyHint = undefined;
  return 'paired';
}

/**
 * Recovery steps due on `ep`'s levels (after a success, and before a rate-limited answer is weighed).
 * None for an endpoint replaced or removed by `setEndpoints`: its levels serve nobody, and a
 * group it shared recovers through its live members.
 */
export function recoverCeilings<C>(s: PoolState<C>, ep: EndpointState<C>, now: number): void {
  if (!ep.live) return;
  const r = s.opts.ceilingRecovery;
  const group = ep.quota as Quota;
  // Callers were turned away for want of a turn lately: probing up costs less than waiting.
  const pressed = now - s.turnedAwayAt <= r.quietMs / 4;
  const g = group.recover(now, r, pressed);
  if (g !== undefined) {
    group.waiters?.poke();
    s.emit({ type: 'endpoint-recalibrated', endpoint: ep.name, perSecond: g, scope: group.grouped ? 'group' : 'key', reason: 'recovery' });
  }
  const own = ep.own as Quota | undefined;
  if (own === undefined) return;
  const k = own.recover(now, r, pressed);
  if (k === undefined) return;
  // Back at the group's level: the key's own limit has nothing left to say.
  if ((k >= (group.perSecond ?? INF) || own.learned === undefined || k >= own.learned.target) && own.blockedMs(now) === 0) ep.own = undefined;
  group.waiters?.poke();
  s.emit({ type: 'endpoint-recalibrated', endpoint: ep.name, perSecond: k, scope: 'key', reason: 'recovery' });
}
