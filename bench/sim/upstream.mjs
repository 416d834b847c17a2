/**
 * A simulated remote endpoint with scripted behaviour.
 *
 * `request()` is what a contender's operation calls: it records the attempt, decides its
 * fate from the endpoint's script at the time the request reaches the server, and settles
 * after a drawn latency. Fates:
 * - `down`: refused after a couple of milliseconds (a transient error);
 * - `hang`: never answers (only the caller's timeout ends it);
 * - over the hidden ceiling: a 429 with Retry-After (whole seconds, as HTTP sends it),
 *   counted as caused by the client;
 * - throttled: the key's hidden, drifting rejection rate (other users of the account), a
 *   429 the client did not cause, with no Retry-After (like Etherscan's message-only
 *   rejections);
 * - otherwise a success after the (possibly slowed) latency.
 * The ceiling is counted at server arrival time over a rolling window, so it never lines
 * up with the client's own counting.
 */

/**
 * The error every failed upstream answer rejects with; `kind` says why. Not an `Error`
 * subclass on purpose: capturing a stack per simulated failure would dominate the run.
 */
export class UpstreamError {
  constructor(kind, retryAfterMs) {
    this.kind = kind;
    this.retryAfterMs = retryAfterMs;
  }
}

/** A rolling-window admission ceiling, possibly shared by several endpoints (one account). */
export class Ceiling {
  constructor(limit, windowMs) {
    this.limit = limit;
    this.windowMs = windowMs;
    /** Server arrival times of admitted requests, oldest first. */
    this.times = [];
    this.head = 0;
  }

  /** True (and counted) when a request arriving at `t` fits under the ceiling. */
  admit(t) {
    const times = this.times;
    while (this.head < times.length && times[this.head] <= t - this.windowMs) this.head++;
    if (this.head > 1024) {
      this.times = times.slice(this.head);
      this.head = 0;
    }
    if (this.times.length - this.head >= this.limit) return false;
    this.times.push(t);
    return true;
  }
}

export class Upstream {
  /**
   * @param {object} o
   * @param {string} o.name
   * @param {import('./scheduler.mjs').Scheduler} o.sched
   * @param {import('./prng.mjs').Rng} o.rng
   * @param {import('./recorder.mjs').Recorder} o.recorder
   * @param {number} o.medianMs median service latency
   * @param {number} [o.sigma] log-normal shape of the latency
   * @param {[number, number]} [o.transitMs] one-way network delay range
   * @param {(t: number) => { mode?: 'up' | 'down' | 'hang', slow?: number, reject?: number }} [o.script]
   * @param {Ceiling} [o.ceiling]
   * @param {number} [o.retryAfterMs] sent with a 429 for going over the ceiling
   */
  constructor(o) {
    this.name = o.name;
    this.index = o.index;
    this.sched = o.sched;
    this.rng = o.rng;
    this.recorder = o.recorder;
    this.medianMs = o.medianMs;
    this.sigma = o.sigma ?? 0.5;
    this.transitMs = o.transitMs ?? [2, 10];
    this.script = o.script ?? (() => UP);
    this.ceiling = o.ceiling;
    this.retryAfterMs = o.retryAfterMs ?? 1000;
  }

  /** One upstream call; `contender` tags the recorder. Resolves with a value or rejects with an UpstreamError. */
  request() {
    const sched = this.sched;
    const sent = sched.now();
    const rng = this.rng;
    const up = rng.uniform(this.transitMs[0], this.transitMs[1]);
    const arrival = sent + up;
    const s = this.script(arrival);
    const mode = s.mode ?? 'up';
    if (mode === 'hang') {
      this.recorder.attempt(this.index, sent, 'hang');
      return new Promise(() => {});
    }
    return new Promise((resolve, reject) => {
      const down = rng.uniform(this.transitMs[0], this.transitMs[1]);
      if (mode === 'down') {
        this.recorder.attempt(this.index, sent, 'down');
        sched.at(arrival + down, () => reject(new UpstreamError('down')));
        return;
      }
      if (this.ceiling !== undefined && !this.ceiling.admit(arrival)) {
        this.recorder.attempt(this.index, sent, 'ceiling');
        sched.at(arrival + 1 + down, () => reject(new UpstreamError('ceiling', this.retryAfterMs)));
        return;
      }
      const service = rng.lognormal(this.medianMs, this.sigma) * (s.slow ?? 1);
      if (s.reject !== undefined && s.reject > 0 && rng.next() < s.reject) {
        this.recorder.attempt(this.index, sent, 'throttled');
        sched.at(arrival + 1 + down, () => reject(new UpstreamError('throttled', undefined)));
        return;
      }
      this.recorder.attempt(this.index, sent, 'ok');
      sched.at(arrival + service + down, () => resolve(this.index));
    });
  }
}

const UP = Object.freeze({ mode: 'up' });

/** How every contender maps an UpstreamError to endpoint-pool's error classes. */
export function classify(error) {
  if (error instanceof UpstreamError) {
    if (error.kind === 'ceiling' || error.kind === 'throttled') {
      return error.retryAfterMs === undefined ? 'rate-limited' : { class: 'rate-limited', retryAfterMs: error.retryAfterMs };
    }
    return 'transient';
  }
  return 'transient';
}
