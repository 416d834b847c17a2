/**
 * Real-time margins derived from measured timer lag, never fixed milliseconds: on a
 * loaded machine (several test workers, other processes, `npm run test:loaded`) a 5 ms
 * timer can fire 100 ms late, and a test's real-time budget must grow with that.
 */

/** The worst overshoot of `samples` consecutive 5 ms timers, in milliseconds. */
export async function timerLag(samples = 20): Promise<number> {
  let worst = 0;
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 5));
    worst = Math.max(worst, performance.now() - t0 - 5);
  }
  return worst;
}

/** Watches the event loop's lag while a test runs: `maxMs` is the worst overshoot of a 10 ms tick so far. */
export function watchLag(): { readonly maxMs: number; stop(): number } {
  let max = 0;
  let last = performance.now();
  const tick = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - 10);
    last = now;
  }, 10);
  return {
    get maxMs() {
      return max;
    },
    stop() {
      clearInterval(tick);
      // The interval may not have run at all if the loop was blocked throughout.
      max = Math.max(max, performance.now() - last - 10);
      return max;
    },
  };
}

/**
 * A real-time budget that must not run out (a timeout the test expects never to fire):
 * `baseMs` plus `factor` times the measured lag.
 */
export function withLag(baseMs: number, lagMs: number, factor = 20): number {
  return Math.ceil(baseMs + factor * lagMs);
}
