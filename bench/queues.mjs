/**
 * `npm run bench:queues`: the pool's queues at scale, on the fake clock (CPU work only).
 *
 *   permit-close      close() with n calls queued for a permit
 *   permit-abort      n queued calls aborted one by one, newest first
 *   timeouts-desc     n attempts whose timeouts arrive in decreasing order, then expire
 *   shared-signal     n calls sharing one AbortSignal: enqueue, then abort them all
 *
 * Each must stay O(n log n) or better. The cases run at n / 10 and at n (default
 * 100,000): a linear case grows about 10× (n log n: about 12×), a quadratic one 100×.
 * Exits non-zero when a case grows more than `--max-growth` (default 30) times.
 * `test/review/scale.test.ts` runs the same cases at 5,000 and 50,000 in `npm test`.
 */

const never = () => new Promise(() => undefined);

/**
 * Runs every case at `n` with the given `Pool` and `FakeClock`; returns milliseconds per case,
 * read from `now` (default: the wall clock; test/review/scale.test.ts reads the process's CPU
 * time, which another process sharing the cores does not inflate).
 */
export async function runQueueCases({ Pool, FakeClock }, n, now = () => performance.now()) {
  const base = (clock, extra = {}) => new Pool({ endpoints: [{ name: 'a', conn: 'a' }], classify: () => 'transient', clock, deadlineMs: Number.POSITIVE_INFINITY, attemptTimeoutMs: Number.POSITIVE_INFINITY, ...extra });
  const out = {};
  {
    const clock = new FakeClock();
    const pool = base(clock, { maxConcurrentCalls: 1 });
    const calls = [];
    for (let i = 0; i <= n; i++) calls.push(pool.execute(never).catch(() => undefined));
    const t0 = now();
    void pool.close();
    await clock.flush();
    out['permit-close'] = now() - t0;
  }
  {
    const clock = new FakeClock();
    const pool = base(clock, { maxConcurrentCalls: 1 });
    const controllers = [];
    void pool.execute(never).catch(() => undefined);
    for (let i = 0; i < n; i++) {
      const ac = new AbortController();
      controllers.push(ac);
      pool.execute(never, { signal: ac.signal }).catch(() => undefined);
    }
    const t0 = now();
    for (let i = n - 1; i >= 0; i--) controllers[i].abort();
    await clock.flush();
    out['permit-abort'] = now() - t0;
  }
  {
    const clock = new FakeClock();
    const pool = base(clock);
    const t0 = now();
    for (let i = 0; i < n; i++) pool.execute(never, { attemptTimeoutMs: 1_000 + n - i, retry: 'none' }).catch(() => undefined);
    await clock.advance(n + 1_000);
    out['timeouts-desc'] = now() - t0;
    if (pool.activeCalls !== 0) throw new Error(`timeouts-desc: ${pool.activeCalls} calls left`);
  }
  {
    const clock = new FakeClock();
    const pool = base(clock);
    const ac = new AbortController();
    const t0 = now();
    for (let i = 0; i < n; i++) pool.execute(never, { signal: ac.signal }).catch(() => undefined);
    ac.abort();
    await clock.flush();
    out['shared-signal'] = now() - t0;
    if (pool.activeCalls !== 0) throw new Error(`shared-signal: ${pool.activeCalls} calls left`);
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, d) => {
    const i = process.argv.indexOf(name);
    return i < 0 ? d : Number(process.argv[i + 1]);
  };
  const n = arg('--n', 100_000);
  const maxGrowth = arg('--max-growth', 30);
  const { Pool } = await import('../dist/index.js');
  const { FakeClock } = await import('../dist/testing/index.js');
  await runQueueCases({ Pool, FakeClock }, 1_000); // warm-up
  const small = await runQueueCases({ Pool, FakeClock }, n / 10);
  const large = await runQueueCases({ Pool, FakeClock }, n);
  let bad = 0;
  for (const [name, ms] of Object.entries(large)) {
    const growth = ms / Math.max(small[name], 1);
    if (growth > maxGrowth) bad++;
    console.log(`${name.padEnd(14)} n=${n / 10}: ${small[name].toFixed(0).padStart(5)} ms   n=${n}: ${ms.toFixed(0).padStart(6)} ms   ×${growth.toFixed(1)}${growth > maxGrowth ? `  OVER ×${maxGrowth}` : ''}`);
  }
  process.exit(bad === 0 ? 0 : 1);
}
