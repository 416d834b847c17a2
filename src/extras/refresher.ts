/**
 * `Refresher`: keeps a pool's endpoint set to the candidates that pass a health check.
 *
 * Every `intervalMs` (first run at `start()`), it gets the candidate list (a fixed list or
 * an async source, e.g. a registry of public RPCs), checks every candidate at once with
 * at most `concurrency` checks in flight, each under `timeoutMs`, and installs the
 * survivors with `pool.setEndpoints` (an endpoint kept by name, its connection equal as data
 * or by `sameConnection`, keeps its connection object, breaker and counters). When fewer
 * than `minHealthy` survive, it installs `fallback` (plus whatever
 * survived) or, without a fallback, leaves the set as it is.
 *
 * Stale while revalidate: calls never wait for a refresh; they use the set installed
 * last (at first, the one the pool was built with: pass your fallback list there for a
 * cold start). Runs never overlap: the next is scheduled when one ends. Its timers come
 * from the pool's clock and are background timers (but those of a run `refresh()` asked for,
 * which its caller awaits), so a refresher never keeps a process alive; `stop()` clears them, aborts checks in flight and discards their outcome, and
 * `pool.close()` stops a started refresher the same way, at once.
 * A throwing `check`, source or `onRefresh` is contained and reported, never thrown.
 */
import type { Clock, TimerHandle } from '../base/clock.js';
import { invalidOption, PoolError } from '../base/errors.js';
import type { EndpointConfig } from '../options/options.js';
import { checkFunction, checkKeys, durationOrInfinity, oneOf, positiveInteger, type KnownKeys } from '../options/validate.js';
import type { Pool } from '../pool.js';
import { onPoolClose } from '../pool-core.js';
import { keepHeldConnections, samePlainData } from './same-connection.js';
import { checkConfigs, type RefresherOptions, type RefreshResult, type SharedSurvivors } from './refresher-options.js';

export type { RefresherOptions, RefreshResult, SharedSurvivors } from './refresher-options.js';

const REFRESHER_KEYS: Record<keyof RefresherOptions<unknown>, true> & KnownKeys = {
  candidates: true,
  check: true,
  shared: true,
  fallback: true,
  always: true,
  intervalMs: true,
  timeoutMs: true,
  concurrency: true,
  minHealthy: true,
  order: true,
  onRefresh: true,
  sameConnection: true,
};

export class Refresher<C> {
  readonly #pool: Pool<C>;
  readonly #clock: Clock;
  readonly #o: RefresherOptions<C>;
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  readonly #concurrency: number;
  readonly #minHealthy: number;
  #timer: TimerHandle | undefined;
  #running: Promise<RefreshResult> | undefined;
  /** Aborted by `stop()`: every check and source call, a run's or a background re-check's, hears it. */
  readonly #stopper = new AbortController();
  /** A re-check the shared list started that may outlive its run (stale while revalidate): the next run waits for it. */
  #rechecking: Promise<void> | undefined;
  #started = false;
  #stopped = false;
  /** The run was asked for by `refresh()`: its timers are not background ones. */
  #keepAlive = false;
  #last: RefreshResult | undefined;
  /** The candidates the source gave last, and when. */
  #lastGood: readonly EndpointConfig<C>[] | undefined;
  #lastGoodAt: number | undefined;
  /** Takes back what `start()` handed the pool (`pool.close()` stops a started refresher at once). */
  #unhook: (() => void) | undefined;

  constructor(pool: Pool<C>, options: RefresherOptions<C>) {
    if (typeof options !== 'object' || options === null) throw invalidOption('options', 'an object', options);
    if (typeof options.check !== 'function') throw invalidOption('check', 'a function (conn, signal) => Promise', options.check);
    checkKeys('options', options as unknown as Record<string, unknown>, REFRESHER_KEYS);
    if (!Array.isArray(options.candidates) && typeof options.candidates !== 'function') {
      throw invalidOption('candidates', 'an array of endpoints or a function returning one', options.candidates);
    }
    if (Array.isArray(options.candidates)) checkConfigs('candidates', options.candidates);
    if (options.fallback !== undefined) checkConfigs('fallback', options.fallback);
    if (options.always !== undefined) checkConfigs('always', options.always);
    this.#pool = pool;
    this.#clock = pool.clock;
    this.#o = options;
    this.#intervalMs = durationOrInfinity('intervalMs', options.intervalMs, 300_000);
    this.#timeoutMs = durationOrInfinity('timeoutMs', options.timeoutMs, 5_000);
    this.#concurrency = positiveInteger('concurrency', options.concurrency, 8);
    this.#minHealthy = positiveInteger('minHealthy', options.minHealthy, 1);
    oneOf('order', options.order, ['given', 'latency'], 'given');
    checkFunction('onRefresh', options.onRefresh, true);
    checkFunction('sameConnection', options.sameConnection, true);
    const shared = options.shared as { refreshSurvivors?: unknown } | null | undefined;
    if (shared !== undefined && (typeof shared !== 'object' || shared === null || typeof shared.refreshSurvivors !== 'function')) {
      throw invalidOption('shared', 'a shared survivor list ({ refreshSurvivors }, e.g. createRedisHealth(...))', options.shared);
    }
  }

  /** Starts refreshing: one refresh now (in the background), then every `intervalMs`. Idempotent. */
  start(): this {
    if (this.#started || this.#stopped) return this;
    this.#started = true;
    // A closed pool stops its refresher at once: no timer or check outlives close().
    this.#unhook = onPoolClose(this.#pool, () => this.stop());
    this.#schedule(0);
    return this;
  }

  /**
   * Runs a refresh now, or joins the one running. Never rejects. Called from inside a run
   * (its source or a check, synchronously) it joins that run; from `onRefresh`, whose run has
   * ended, it starts the next.
   */
  refresh(): Promise<RefreshResult> {
    // Awaited by its caller: the run's timers keep the process alive (as a call's own waits do),
    // else a script awaiting it exited before `timeoutMs` ended a hung check (exit code 13).
    this.#keepAlive = true;
    return this.#refresh();
  }

  #refresh(): Promise<RefreshResult> {
    if (this.#running !== undefined) return this.#running;
    let settle!: (r: RefreshResult | Promise<never>) => void;
    const p = new Promise<RefreshResult>((resolve) => (settle = resolve));
    // Marked running before the run starts: a source that calls refresh() synchronously joins.
    this.#running = p;
    this.#run(p).then(
      (r) => {
        this.#ended(p);
        settle(r);
      },
      (e: unknown) => {
        this.#ended(p);
        settle(Promise.reject(e));
      },
    );
    return p;
  }

  #ended(p: Promise<RefreshResult>): void {
    if (this.#running !== p) return;
    this.#running = undefined;
    this.#keepAlive = false;
  }

  /** Stops for good: clears the timer, aborts checks in flight, installs nothing more. */
  stop(): void {
    this.#stopped = true;
    this.#unhook?.();
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#stopper.abort();
  }

  [Symbol.dispose](): void {
    this.stop();
  }

  /** The last refresh's outcome. */
  get lastResult(): RefreshResult | undefined {
    return this.#last;
  }

  /** True while a refresh runs. */
  get refreshing(): boolean {
    return this.#running !== undefined;
  }

  #schedule(ms: number): void {
    if (this.#pool.closed) this.stop(); // nothing left to keep: no next run
    if (this.#stopped || !this.#started || ms === Infinity) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#refresh().then(() => this.#schedule(this.#intervalMs));
    }, ms, true);
  }

  async #run(self: Promise<RefreshResult>): Promise<RefreshResult> {
    const clock = this.#clock;
    const startedAt = clock.now();
    const signal = this.#stopper.signal;
    // Checks never overlap: not even with the shared list's re-check of an earlier run (bounded by its timeouts).
    if (this.#rechecking !== undefined) await this.#rechecking;
    const done = (r: Omit<RefreshResult, 'startedAt' | 'durationMs'>): RefreshResult => {
      const result: RefreshResult = { ...r, startedAt, durationMs: clock.now() - startedAt };
      // Ended: a refresh() from onRefresh starts the next run instead of joining this one.
      this.#ended(self);
      if (!this.#stopped) {
        this.#last = result;
        try {
          this.#o.onRefresh?.(result);
        } catch {
          // An observer must not break the refresh loop.
        }
      }
      return result;
    };
    if (this.#pool.closed) {
      // The pool was closed: a refresher has nothing left to keep, and stops (no check, no timer).
      this.stop();
      return done({ checked: 0, healthy: [], installed: undefined, usedFallback: false, error: new PoolError('CLOSED', 'the pool is closed'), lastGoodAt: this.#lastGoodAt });
    }
    let candidates: readonly EndpointConfig<C>[];
    let sourceError: unknown;
    let failed = false;
    try {
      const source = this.#o.candidates;
      candidates = typeof source === 'function' ? await this.#withTimeout(signal, (s) => source(s), 'the candidate source') : source;
      if (!Array.isArray(candidates)) throw invalidOption('candidates()', 'an array of endpoints', candidates);
      checkConfigs('candidates()', candidates);
      this.#lastGood = candidates;
      this.#lastGoodAt = startedAt;
    } catch (error) {
      // The source failed: check the candidates it gave last again rather than keep a set nobody verifies.
      if (this.#lastGood === undefined) return done({ checked: 0, healthy: [], installed: undefined, usedFallback: false, error, lastGoodAt: undefined });
      candidates = this.#lastGood;
      sourceError = error;
      failed = true;
    }
    const extra = { lastGoodAt: this.#lastGoodAt, ...(failed ? { error: sourceError } : {}) };
    let checked = 0;
    const checkHere = async (): Promise<EndpointConfig<C>[]> => {
      const latencies = await this.#checkAll(candidates, signal);
      checked = candidates.length;
      let passed = candidates.filter((_, i) => latencies[i] !== undefined);
      if (this.#o.order === 'latency') {
        const at = new Map(candidates.map((c, i) => [c, latencies[i]!]));
        passed = [...passed].sort((a, b) => at.get(a)! - at.get(b)!);
      }
      return passed;
    };
    let survivors: EndpointConfig<C>[];
    const shared = this.#o.shared;
    if (shared === undefined) survivors = await checkHere();
    else {
      let names: readonly string[] | undefined;
      try {
        const ttlMs = this.#intervalMs === Infinity ? 300_000 : Math.max(1, this.#intervalMs);
        names = await this.#sharedStep(shared, async () => {
          const passed = await checkHere();
          // Stopped mid-check, every check failed for that alone: nothing for the fleet to take as its list.
          if (signal.aborted) throw signal.reason;
          return passed.map((c) => c.name);
        }, ttlMs);
      } catch (error) {
        names = undefined;
        if (!failed) Object.assign(extra, { error });
      }
      if (this.#stopped) return done({ checked, healthy: [], installed: undefined, usedFallback: false, ...extra });
      if (names === undefined) return done({ checked, healthy: [], installed: undefined, usedFallback: false, fromShared: true, ...extra });
      const byName = new Map(candidates.map((c) => [c.name, c]));
      survivors = names.flatMap((n) => {
        const c = byName.get(n);
        return c === undefined ? [] : [c];
      });
      Object.assign(extra, { fromShared: true });
    }
    if (this.#pool.closed) this.stop();
    if (this.#stopped) return done({ checked, healthy: [], installed: undefined, usedFallback: false, ...extra });
    const healthy = survivors.map((c) => c.name);
    let next: EndpointConfig<C>[] | undefined = survivors;
    let usedFallback = false;
    if (survivors.length < this.#minHealthy) {
      if (this.#o.fallback === undefined) next = undefined;
      else {
        usedFallback = true;
        next = mergeByName(survivors, this.#o.fallback);
      }
    }
    if (next !== undefined && this.#o.always !== undefined) next = mergeByName(next, this.#o.always);
    if (next === undefined || next.length === 0) return done({ checked, healthy, installed: undefined, usedFallback, ...extra });
    try {
      this.#pool.setEndpoints(keepHeldConnections(this.#pool, next, this.#o.sameConnection ?? samePlainData));
    } catch (error) {
      return done({ checked, healthy, installed: undefined, usedFallback, ...extra, error });
    }
    return done({ checked, healthy, installed: next.map((c) => c.name), usedFallback, ...extra });
  }

  /** Each candidate's check latency, or `undefined` when it failed. */
  async #checkAll(candidates: readonly EndpointConfig<C>[], signal: AbortSignal): Promise<(number | undefined)[]> {
    const out: (number | undefined)[] = new Array<number | undefined>(candidates.length).fill(undefined);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < candidates.length && !signal.aborted) {
        const i = next++;
        const c = candidates[i]!;
        const t0 = this.#clock.now();
        try {
          const ok = await this.#withTimeout(signal, (s) => this.#o.check(c.conn, s, c), 'health check');
          if (ok !== false) out[i] = this.#clock.now() - t0;
        } catch {
          // Unhealthy: left out.
        }
      }
    };
    const n = Math.min(this.#concurrency, candidates.length);
    await Promise.all(Array.from({ length: n }, worker));
    return out;
  }

  /** The shared list's answer: each wait on the store (before this process's own check, and after it) is bounded by `timeoutMs`, so a stalled store fails this refresh instead of holding it. */
  #sharedStep(shared: SharedSurvivors, check: () => Promise<readonly string[]>, ttlMs: number): Promise<readonly string[] | undefined> {
    return new Promise((resolve, reject) => {
      let timer: unknown;
      let settled = false;
      const arm = (on: boolean): void => {
        if (timer !== undefined) this.#clock.clearTimeout(timer);
        // Once the step has settled (the store gave up waiting, or its timeout fired), a check the
        // store starts late arms nothing: no timer outlives the refresh (or stop()).
        timer = on && !settled && this.#timeoutMs !== Infinity ? this.#clock.setTimeout(() => end(reject, new Error(`the shared survivor list did not answer within ${this.#timeoutMs} ms`)), this.#timeoutMs, !this.#keepAlive) : undefined;
      };
      const end = <T,>(settle: (value: T) => void, value: T): void => {
        if (settled) return;
        settled = true;
        this.#stopper.signal.removeEventListener('abort', onStop);
        arm(false);
        settle(value);
      };
      // stop() (or the pool's close()), even before the step, ends the wait on the store at once: no timer outlives it.
      const signal = this.#stopper.signal;
      const onStop = (): void => end(reject, signal.reason);
      if (signal.aborted) return onStop();
      signal.addEventListener('abort', onStop);
      arm(true);
      const ours = (): Promise<readonly string[]> => {
        // Asked after this refresh stopped waiting for the store: that refresh failed, and checks nothing more.
        if (settled) return Promise.reject(new Error('the shared survivor list asked for a check after the refresh gave up on it'));
        arm(false);
        // One re-check at a time: one that outlives its refresh (in the background) holds the next.
        const last = this.#rechecking;
        const p = (last === undefined ? check() : last.then(check)).finally(() => arm(true));
        const quiet = p.then(noop, noop);
        this.#rechecking = quiet;
        void quiet.then(() => {
          if (this.#rechecking === quiet) this.#rechecking = undefined;
        });
        return p;
      };
      Promise.resolve()
        .then(() => shared.refreshSurvivors(ours, { ttlMs }))
        .then(
          (names) => end(resolve, names),
          (error: unknown) => end(reject, error),
        );
    });
  }

  /** Runs `fn` with a signal that aborts after `timeoutMs` or with `parent`; rejects on either. */
  #withTimeout<T>(parent: AbortSignal, fn: (signal: AbortSignal) => Promise<T>, what: string): Promise<T> {
    const ac = new AbortController();
    return new Promise<T>((resolve, reject) => {
      let timer: TimerHandle | undefined;
      const finish = (): void => {
        if (timer !== undefined) this.#clock.clearTimeout(timer);
        parent.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        finish();
        ac.abort(parent.reason);
        reject(parent.reason);
      };
      if (parent.aborted) return onAbort();
      parent.addEventListener('abort', onAbort);
      if (this.#timeoutMs !== Infinity) {
        timer = this.#clock.setTimeout(() => {
          timer = undefined;
          const error = new Error(`${what} timed out after ${this.#timeoutMs} ms`);
          error.name = 'TimeoutError';
          finish();
          ac.abort(error);
          reject(error);
        }, this.#timeoutMs, !this.#keepAlive);
      }
      let pending: Promise<T>;
      try {
        pending = Promise.resolve(fn(ac.signal));
      } catch (error) {
        finish();
        return reject(error);
      }
      pending.then(
        (v) => {
          finish();
          resolve(v);
        },
        (e: unknown) => {
          finish();
          reject(e);
        },
      );
    });
  }
}

function mergeByName<C>(first: readonly EndpointConfig<C>[], more: readonly EndpointConfig<C>[]): EndpointConfig<C>[] {
  const names = new Set(first.map((c) => c.name));
  return [...first, ...more.filter((c) => !names.has(c.name))];
}

function noop(): void {}
