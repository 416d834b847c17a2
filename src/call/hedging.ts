/**
 * Hedging for one call (idempotent calls only): when the first attempt has not answered
 * within the hedge delay (fixed, or a quantile of its endpoint's recent durations), one
 * more attempt starts on an endpoint the call is not using; the first success wins and
 * the others are cancelled by the call. Hedges count as attempts and against the retry
 * budget, and ask the shared store (when there is one) like any attempt.
 *
 * Allocated only for calls that hedge; the call loop talks to it through `HedgeHost`. An
 * optional feature: the call makes it through its pool's feature table (features.ts,
 * `hedge`), so a pool built without it bundles none of this.
 */
import type { TimerHandle } from '../base/clock.js';
import type { HedgeConfig } from '../selection/hedge.js';
import type { EndpointState } from '../selection/endpoint.js';
import type { PoolState } from '../state.js';
import type { Attempt } from './attempt.js';
import { PoolError } from '../base/errors.js';
import type { ReauthHost } from './auth.js';

/** What hedging needs from its call. */
export interface HedgeHost<C> {
  readonly id: number;
  /** Endpoints a hedge must avoid (excluded, or running one of the call's attempts); `undefined`: no hedge now. */
  hedgeAvoiding(now: number): EndpointState<C>[] | undefined;
  readonly tried: EndpointState<C>[] | undefined;
  /** The call's plan: a hedge never goes to an endpoint its `avoid` names. */
  readonly plan: { readonly avoid: ((endpoint: string) => boolean) | undefined };
  /** Attempts the call has started. */
  readonly attempts: number;
  /** Starts a hedged attempt on `ep`. */
  launchHedge(ep: EndpointState<C>, now: number): void;
}

export class Hedging<C> {
  readonly #s: PoolState<C>;
  readonly #host: HedgeHost<C>;
  readonly #config: HedgeConfig;
  #left: number;
  #timer: TimerHandle | undefined;
  #admitTimer: TimerHandle | undefined;
  /** Hedged attempts running beside the call's primary attempt. */
  readonly running: Attempt<C>[] = [];
  /** The latest hedged attempt started (for the call's last endpoint). */
  latest: Attempt<C> | undefined = undefined;
  /**
   * Under `permitScope: 'attempt'` a hedge is one more attempt being sent: it takes a permit
   * of its own (a free one: a hedge never queues) and gives it back when it ends.
   */
  #permitted: Attempt<C>[] | undefined;
  #permitForNext = false;

  constructor(s: PoolState<C>, host: HedgeHost<C>, config: HedgeConfig) {
    this.#s = s;
    this.#host = host;
    this.#config = config;
    this.#left = config.maxHedges;
    // A percentile needs durations: they are recorded from the first call that may hedge on one.
    if (config.percentile !== undefined) s.trackLatency();
  }

  /** Arms the hedge timer for a primary attempt on `ep` (once per call, while hedges are left). */
  schedule(ep: EndpointState<C>): void {
    if (this.#left <= 0 || this.#timer !== undefined) return;
    const c = this.#config;
    const fromLatency = c.percentile === undefined ? undefined : ep.latency?.percentile(c.percentile, 20);
    const delay = Math.max(1, fromLatency ?? c.afterMs);
    this.#timer = this.#s.clock.setTimeout(() => {
      this.#timer = undefined;
      this.#fire();
    }, delay);
  }

  #fire(): void {
    const s = this.#s;
    const host = this.#host;
    if (this.#left <= 0) return;
    const now = s.clock.now();
    let avoid = host.hedgeAvoiding(now);
    if (avoid === undefined) return;
    const shun = host.plan.avoid;
    if (shun !== undefined) {
      try {
        avoid = s.features.routing!.avoided(s.endpoints, shun, avoid);
      } catch {
        return; // the call's next selection asks `avoid` again and fails with what it throws
      }
    }
    const sel = s.select(now, host.tried, avoid);
    if (sel.kind !== 'endpoint' || sel.tried) return;
    if (!this.#permitFree()) return;
    const budget = s.opts.retryBudget;
    const ask = s.fleet?.needsAdmission(sel.endpoint, now) === true;
    // A hedge the store must admit draws on the budget once admitted: one it refuses spends
    // neither a retry nor one of `maxHedges` (it used to spend both, sending nothing).
    if (budget !== undefined && !budget.tryWithdraw(now, ask)) return;
    this.#left--;
    if (ask) this.#admit(sel.endpoint);
    else this.#launch(sel.endpoint, now, true, sel.panic);
  }

  /**
   * An `unauthorized` answer to attempt `a` while another attempt of the call runs: the
   * endpoint's credentials are refreshed as for any attempt, and once they are the attempt
   * is replayed there beside the running one, spending no retry and taking a free permit
   * under `permitScope: 'attempt'` like a hedge (if the call still runs an attempt;
   * otherwise its next retry may pick the endpoint). False when no refresh is possible (no
   * `refreshAuth`, closed, refreshed already in this call).
   */
  reauthBeside(a: Attempt<C>, h: { replays: number; refreshed?: (EndpointState<C> | number)[] | undefined }): boolean {
    const s = this.#s;
    const host: ReauthHost<C> = {
      refreshed: (ep) => {
        const now = s.clock.now();
        if (this.#mayGo(ep, now) && this.#permitFree()) this.#launch(ep, now);
      },
      refreshFailed: () => undefined,
    };
    const auth = s.features.auth;
    const refreshing = auth !== undefined && auth.reauthenticate(s, a.ep, (h.refreshed ??= []), host, a.authGeneration, this.#host.attempts - h.replays) === undefined;
    // The unauthorized attempt spends no retry from now: it is replayed beside the running one
    // once the credentials are refreshed, or, when no attempt runs by then, left to a later
    // retry that may pick the endpoint. (Counted until the replay, it left a call whose primary
    // timed out meanwhile one attempt short of a healthy endpoint: seed 2026120422.)
    if (refreshing) h.replays++;
    return refreshing;
  }

  /**
   * Whether an attempt beside the running one may start on `ep` now: the call still runs one
   * (not settled, not moved on), and `ep` is not in use by the call, excluded, removed, open or limited.
   */
  #mayGo(ep: EndpointState<C>, now: number, panic?: boolean): boolean {
    const avoid = this.#host.hedgeAvoiding(now);
    return avoid !== undefined && !avoid.includes(ep) && ep.live && ep.unavailableMs(now, panic) === 0 && ep.readyInMs(now) === 0;
  }

  /** Whether a hedge may be sent now as far as permits go (always, unless attempts hold them). */
  #permitFree(): boolean {
    const s = this.#s;
    return s.opts.permitScope !== 'attempt' || s.permits === Infinity || s.permits > 0;
  }

  /** Starts an attempt beside the running one: a hedge (`hedge`: reported as one, once it really goes out) or a replay. */
  #launch(ep: EndpointState<C>, now: number, hedge = false, panic?: boolean): void {
    const s = this.#s;
    if (s.opts.permitScope === 'attempt' && s.permits !== Infinity) {
      if (s.permits <= 0) return void (hedge && this.#left++); // a listener of `panic` took the last one
      s.permits--;
      this.#permitForNext = true;
    }
    const host = this.#host;
    if (hedge && s.listener !== undefined) {
      // Listeners (of a `panic` event the selection emitted, of `hedge` itself) may have closed
      // the pool, ended the call, removed `ep`, taken its last slot or given it another quota
      // (a new key or group: the store admitted the hedge on the old one): the hedge is withdrawn.
      const quota = ep.quota;
      if (this.#mayGo(ep, now, panic)) s.emit({ type: 'hedge', callId: host.id, endpoint: ep.name, attempt: host.attempts + 1 });
      if (!this.#mayGo(ep, now, panic) || ep.quota !== quota) {
        if (this.#permitForNext) s.releasePermit();
        this.#permitForNext = false;
        this.#left++;
        return;
      }
    }
    host.launchHedge(ep, now);
    this.#permitForNext = false;
  }

  /**
   * A hedge on an endpoint whose limit is shared by the fleet asks the store first, like
   * any attempt. The call does not wait in `admission` for it (its primary attempt is
   * running): a refusal or a timeout simply means no hedge; a failing store degrades the
   * pool as usual and the hedge goes on local limits.
   */
  #admit(ep: EndpointState<C>): void {
    const s = this.#s;
    let pending = true;
    this.#admitTimer = s.clock.setTimeout(() => {
      this.#admitTimer = undefined;
      if (!pending) return;
      pending = false;
      this.#left++;
      s.fleet!.storeFailed(s.clock.now(), new PoolError('ATTEMPT_TIMEOUT', 'the shared limiter store did not answer in time'));
    }, s.opts.sharedQuota!.timeoutMs);
    s.features.store!.askStore(s, {
      awaitingAdmission: () => pending,
      admissionDone: (_ep, t, refused) => {
        pending = false;
        this.#clearAdmitTimer();
        const budget = s.opts.retryBudget;
        if (!refused && this.#mayGo(ep, t) && (budget === undefined || budget.tryWithdraw(t))) this.#launch(ep, t, true);
        else this.#left++; // not sent: a later primary attempt may still hedge
      },
    }, ep);
  }

  #clearAdmitTimer(): void {
    if (this.#admitTimer !== undefined) {
      this.#s.clock.clearTimeout(this.#admitTimer);
      this.#admitTimer = undefined;
    }
  }

  /** The endpoint of the call's latest attempt: this latest hedge's, or `primary`'s if that started later. */
  latestEndpoint(primary: Attempt<C> | undefined): EndpointState<C> | undefined {
    const h = this.latest;
    return h !== undefined && (primary === undefined || h.attempt > primary.attempt) ? h.ep : primary?.ep;
  }

  started(a: Attempt<C>): void {
    this.running.push(a);
    this.latest = a;
    if (this.#permitForNext) {
      this.#permitForNext = false;
      (this.#permitted ??= []).push(a);
    }
  }

  remove(a: Attempt<C>): boolean {
    const i = this.running.indexOf(a);
    if (i < 0) return false;
    this.running.splice(i, 1);
    const p = this.#permitted?.indexOf(a) ?? -1;
    if (p >= 0) {
      this.#permitted!.splice(p, 1);
      this.#s.releasePermit();
    }
    return true;
  }

  /** Stops the hedge timers (the call is ending); a store answer that comes later launches nothing. */
  stop(): void {
    this.#clearAdmitTimer();
    if (this.#timer !== undefined) {
      this.#s.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }
}
