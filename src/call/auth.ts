/**
 * Credential refresh, single-flight per endpoint.
 *
 * Endpoints behind expiring tokens answer "unauthorized" until the token is re-acquired:
 * neither ill health nor a reason to back off. An `unauthorized` answer a call gets from an
 * endpoint runs the pool's `refreshAuth(conn, ctx)` once for that endpoint (every
 * call that hits `unauthorized` meanwhile waits on the same refresh) and then replays the
 * attempt there at once. A refresh has its own timeout; a caller that gives up waiting
 * (deadline, abort) does not cancel it for the others.
 *
 * Credentials carry a generation (`ep.authGeneration`, bumped by each successful
 * refresh; each attempt notes the one it was sent with). An `unauthorized` answer to an
 * attempt sent before the latest refresh finished says nothing about the current
 * credentials: it is replayed with them at once, with no new refresh. So the 401s of a
 * wave of requests sent before a rotation cost one refresh, however they straggle in.
 */
import type { Clock } from '../base/clock.js';
import { LazyContext, type AttemptContext, type SignalSource } from './context.js';
import type { EndpointState } from '../selection/endpoint.js';
import { PoolError, unauthorizedMessage } from '../base/errors.js';
import type { PoolState } from '../state.js';
import type { RefreshAuth } from '../options/options.js';
import type { FeatureOptions } from '../features.js';
import { checkFunction, durationOrInfinity } from '../options/validate.js';
import { ownWorkBound } from '../options/defaults.js';


const inFlight = new WeakMap<object, Promise<void>>();

/** The endpoint's refresh in progress, or a new one. Never rejects unhandled. */
export function refreshOnce<C>(
  ep: EndpointState<C>,
  refresh: RefreshAuth<C>,
  clock: Clock,
  timeoutMs: number,
  onDone: (ok: boolean, error: unknown) => void,
  cuts: Set<(error: PoolError) => void>,
  signals?: SignalSource,
): Promise<void> {
  const running = inFlight.get(ep);
  if (running !== undefined) return running;
  const ctx = new LazyContext(ep.name, 1, timeoutMs === Infinity ? timeoutMs : clock.now() + timeoutMs, signals);
  const p = new Promise<void>((resolve, reject) => {
    let timer: unknown;
    const clear = (): void => {
      cuts.delete(cut);
      if (timer !== undefined) clock.clearTimeout(timer);
    };
    const cut = (error: PoolError): void => {
      clear();
      ctx.abort(error);
      reject(error);
    };
    cuts.add(cut);
    if (timeoutMs !== Infinity) {
      timer = clock.setTimeout(() => cut(new PoolError('ATTEMPT_TIMEOUT', `refreshing credentials for endpoint ${JSON.stringify(ep.name)} timed out after ${timeoutMs} ms`, { endpoint: ep.name })), timeoutMs);
    }
    try {
      Promise.resolve(refresh(ep.conn, ctx)).then(
        () => {
          clear();
          ep.authGeneration++;
          resolve();
        },
        (error: unknown) => {
          clear();
          reject(error);
        },
      );
    } catch (error) {
      clear();
      reject(error);
    }
  });
  inFlight.set(ep, p);
  p.then(
    () => {
      inFlight.delete(ep);
      onDone(true, undefined);
    },
    (error: unknown) => {
      inFlight.delete(ep);
      onDone(false, error);
    },
  );
  return p;
}

/** What a replay after a refresh needs from its call (which enters the `auth` wait first). */
export interface ReauthHost<C> {
  /** The refresh succeeded: replay on `ep` (if the call still waits for it). */
  refreshed(ep: EndpointState<C>): void;
  /** The refresh failed (if the call still waits for it): the call fails with `AUTH`, `message` and `error` as its cause. */
  refreshFailed(message: string, error: unknown): void;
}

/**
 * Refreshes of one endpoint's credentials one attempt of a call may start or join before
 * an `unauthorized` answer is final (the first fetch of credentials, often lazy as the
 * fetch adapter's `getToken`, included; replays after a refresh belong to the attempt and
 * spend no retry). Two, not one: a server that rotates its tokens between a refresh and the
 * replay's arrival (one round trip) refuses the replay through nobody's fault, and the next
 * refresh works. Per attempt, not per call: a call that fetched the first token, failed
 * over and came back after a rotation has not used up its refreshes. Credentials refused
 * for good end the call after two refreshes (a final `unauthorized` is not retried), and a
 * call never refreshes more than twice per attempt it spends: never a loop.
 */
const REFRESHES_PER_ATTEMPT = 2;

/**
 * An `unauthorized` answer from `ep` to an attempt sent with credential generation
 * `sentWith`, during the call's counted attempt `attempt` (replays not counted): refresh
 * its credentials (at most `REFRESHES_PER_ATTEMPT` for this attempt; single-flight across
 * calls; none when a refresh has finished since the attempt was sent), then `host` replays
 * the attempt there at once, with no backoff and no retry spent. The call keeps its refreshes
 * in its history, each as three entries (the endpoint, its generation when the
 * refresh started, the counted attempt). Returns why the call must fail instead (no
 * `refreshAuth`, or `ep` refreshed enough for this attempt), or `undefined` while the
 * refresh runs.
 */
export function reauthenticate<C>(s: PoolState<C>, ep: EndpointState<C>, refreshed: (EndpointState<C> | number)[], host: ReauthHost<C>, sentWith: number, attempt: number): string | undefined {
  if (s.opts.refreshAuth === undefined || s.closed) return unauthorizedMessage(ep.name);
  if (sentWith < ep.authGeneration) {
    // Sent with credentials a refresh has replaced since: replay with the current ones.
    queueMicrotask(() => host.refreshed(ep));
    return undefined;
  }
  let count = 0;
  let lastGen = -1;
  for (let i = 0; i < refreshed.length; i += 3) {
    if (refreshed[i] !== ep) continue;
    if (refreshed[i + 2] === attempt) count++;
    lastGen = refreshed[i + 1] as number;
  }
  // A refresh still running that this call counted already (an attempt sent before it
  // finished, beside a hedge) is waited for again at no cost; any other one counts.
  if (!(inFlight.has(ep) && lastGen === ep.authGeneration)) {
    if (count >= REFRESHES_PER_ATTEMPT) return `${unauthorizedMessage(ep.name)} again after its credentials were refreshed`;
    refreshed.push(ep, ep.authGeneration, attempt);
  }
  refreshThenReplay(s, ep, host);
  return undefined;
}

/** Refreshes `ep`'s credentials (joining a refresh in progress) and reports to `host`. */
function refreshThenReplay<C>(s: PoolState<C>, ep: EndpointState<C>, host: ReauthHost<C>): void {
  const refresh = s.opts.refreshAuth as RefreshAuth<C>;
  const done = refreshOnce(
    ep,
    refresh,
    s.clock,
    s.opts.refreshTimeoutMs,
    (ok, error) => {
      s.emit(ok ? { type: 'auth-refresh', endpoint: ep.name, ok } : { type: 'auth-refresh', endpoint: ep.name, ok, error });
    },
    s.probes,
    s.features.signals,
  );
  done.then(
    () => host.refreshed(ep),
    (error: unknown) => host.refreshFailed(`refreshing the credentials of endpoint ${JSON.stringify(ep.name)} failed`, error),
  );
}

/**
 * The pool's `refreshAuth` and `refreshTimeoutMs` (the feature's options, features.ts). The
 * timeout defaults to `attemptTimeoutMs`; without one, to `deadlineMs`; without either, to the
 * default attempt timeout (10 s): every call that meets `unauthorized` waits on the one
 * refresh in flight, so a refresh that never settles, unbounded, held the endpoint's
 * credentials for good (no later call ever refreshed again).
 */
export const authOptions: FeatureOptions = (o, _, resolved) => ({
  refreshAuth: checkFunction('refreshAuth', o['refreshAuth'], true) as RefreshAuth<unknown> | undefined,
  refreshTimeoutMs: durationOrInfinity('refreshTimeoutMs', o['refreshTimeoutMs'], ownWorkBound(resolved.attemptTimeoutMs, resolved.deadlineMs)),
});
