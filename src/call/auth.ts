/**
 * Credential refresh, single-flight per endpoint.
 *
 * Endpoints behind expiring tokens answer "unauthorized" until the token is re-acquired:
 * neither ill health nor a reason to back off. The first `unauthorized` answer a call gets
 * from an endpoint runs the pool's `refreshAuth(conn, ctx)` once for that endpoint (every
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
import { LazyContext, type AttemptContext } from './context.js';
import type { EndpointState } from '../selection/endpoint.js';
import { PoolError } from '../base/errors.js';
import type { PoolState } from '../state.js';
import type { RefreshAuth } from '../options/options.js';


const inFlight = new WeakMap<object, Promise<void>>();

/** The endpoint's refresh in progress, or a new one. Never rejects unhandled. */
export function refreshOnce<C>(
  ep: EndpointState<C>,
  refresh: RefreshAuth<C>,
  clock: Clock,
  timeoutMs: number,
  onDone: (ok: boolean, error: unknown) => void,
  cuts: Set<(error: PoolError) => void>,
): Promise<void> {
  const running = inFlight.get(ep);
  if (running !== undefined) return running;
  const ctx = new LazyContext(ep.name, 1, timeoutMs === Infinity ? timeoutMs : clock.now() + timeoutMs);
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
  /** The refresh failed (if the call still waits for it). */
  refreshFailed(ep: EndpointState<C>, error: unknown): void;
}

/**
 * An `unauthorized` answer from `ep` to an attempt sent with credential generation
 * `sentWith`: refresh its credentials (once per endpoint per call, plus the endpoint's very
 * first refresh; single-flight across calls; none when a refresh has finished since the
 * attempt was sent), then `host`
 * replays the attempt there at once, with no backoff and no retry spent. Returns why the call must fail instead (no `refreshAuth`,
 * or `ep` already refreshed for this call), or `undefined` while the refresh runs.
 */
export function reauthenticate<C>(s: PoolState<C>, ep: EndpointState<C>, refreshed: EndpointState<C>[], host: ReauthHost<C>, sentWith: number): string | undefined {
  const name = JSON.stringify(ep.name);
  if (s.opts.refreshAuth === undefined || s.closed) return `endpoint ${name} answered unauthorized`;
  if (sentWith < ep.authGeneration) {
    // Sent with credentials a refresh has replaced since: replay with the current ones.
    queueMicrotask(() => host.refreshed(ep));
    return undefined;
  }
  // Refreshed for this call already: final, unless that refresh is still running (the
  // attempt was sent before it finished, beside a hedge): then it waits for it too.
  if (refreshed.includes(ep) && !inFlight.has(ep)) return `endpoint ${name} answered unauthorized again after its credentials were refreshed`;
  // The endpoint's first refresh (generation 0, nothing refreshed yet) is not the call's one
  // refresh: it is often the first fetch of credentials an adapter gets lazily (the fetch
  // adapter's `getToken`), and a token refused or rotated right after that fetch deserves
  // the refresh any later call would get. The bound stays: two refreshes for a call that
  // meets an endpoint's first one, one for every other call.
  if (!refreshed.includes(ep) && (sentWith > 0 || ep.authGeneration > 0)) refreshed.push(ep);
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
  );
  done.then(
    () => host.refreshed(ep),
    (error: unknown) => host.refreshFailed(ep, error),
  );
}
