/**
 * Generated fault schedules against the real adapters (`endpoint-pool/fetch` and
 * `endpoint-pool/viem` over viem's `http`) on real loopback servers and the real clock.
 *
 * Each run draws 1-4 endpoints (nothing listening, a healthy server, or a server answering
 * with a random plan of faults: hangs, slow answers, resets before or in the middle of a
 * body, truncated and never-ending bodies, malformed JSON, 408/429/5xx/4xx with
 * `Retry-After` in seconds, dates, garbage or huge values, JSON-RPC error objects), pool
 * options (deadline, maxAttempts, hedging, breaker threshold; for viem and ethers, `chainId` in a
 * third of the runs, asked through the same fault plan, and with it, in four runs in five, a
 * server of another chain in place of one of the faulty ones), 1-6 callers with their own
 * start times, deadlines, retry modes and signals aborted at random times, and sometimes a
 * `close()` in the middle of traffic. All times are in units of the run's attempt timeout,
 * which grows with the timer lag measured before the run.
 *
 * Checked, each run (margins from the lag measured before and during the run):
 * 1. no call outlives its deadline by more than the margin;
 * 2. a call succeeds when: some endpoint answers every request right and quickly, no other
 *    endpoint gives a final answer (a 4xx the adapter treats as the request's fault, a
 *    revert), the caller neither aborts nor sees `close()`, its attempts may visit every
 *    endpoint (`maxAttempts` >= endpoints, or `until-deadline`), and its deadline covers one
 *    attempt timeout and one backoff cap per other endpoint plus the healthy answer and the
 *    margin;
 * 3. after `close()` and every call settled: no request is still open on any server, every
 *    socket of a server answering `connection: close` is closed, no timer of the pool is
 *    pending, no abort listener is left on a caller's signal;
 * 4. every failure is a `PoolError` of a code the adapter documents (or, through viem, the
 *    node's own answer), and nothing rejects unhandled;
 * 5. a caller's abort ends its call within the margin, with `ABORTED`;
 * 10. (numbered as in harness.ts) with `close({ abortAfterMs })` drawn, every call, and `close()`
 *    itself, ends by the time it names, within the margin;
 * 11. a server of another chain is sent nothing but `eth_chainId`.
 *
 * Seeded: fixed seeds; `FC_SEED` (with `FC_PATH`) replays a run, `FC_ADAPTER_RUNS` sets runs.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { check, closeRtt, ethersAdapter, fetchAdapter, fetchRawAdapter, seedOf, viemAdapter } from './harness.js';
import type { Scenario } from './gen.js';

const FILE = 'test/faults/generated.test.ts';

const RUNS = Number(process.env['FC_ADAPTER_RUNS'] ?? 20);

afterAll(() => closeRtt());

describe('generated faults on loopback servers', () => {
  test('endpoint-pool/fetch, parse: json', () => check(fetchAdapter, seedOf(20261202), RUNS), 120_000);
  test('endpoint-pool/fetch, the Response', () => check(fetchRawAdapter, seedOf(20261203), RUNS), 120_000);
  // Property 11 had something to judge: a server of another chain was asked its chain.
  test('endpoint-pool/viem over viem http', async () => expect((await check(viemAdapter, seedOf(20261204), RUNS)).otherChain).toBeGreaterThan(0), 120_000);
  test('endpoint-pool/ethers', async () => expect((await check(ethersAdapter, seedOf(20261207), RUNS)).otherChain).toBeGreaterThan(0), 120_000);
  // Scenarios where property 2 applies to most calls (a healthy endpoint, no abort, no close(), no queue).
  test('liveness: endpoint-pool/fetch, parse: json', () => check(fetchAdapter, seedOf(20261205), RUNS + 5, true), 120_000);
  test('liveness: endpoint-pool/viem', () => check(viemAdapter, seedOf(20261206), RUNS + 5, true), 120_000);
  test('liveness: endpoint-pool/ethers', () => check(ethersAdapter, seedOf(20261208), RUNS + 5, true), 120_000);
});

/** Every run closes the pool in the middle of its traffic with `close({ abortAfterMs })`. */
const closingMidway = (sc: Scenario): Scenario => ({ ...sc, closeAt: sc.closeAt === 5 ? 0.5 : (sc.closeAt ?? 1), closeAbort: sc.closeAbort ?? 0 });

describe('close({ abortAfterMs }) in the middle of traffic (property 10: every call, and close(), ends by the time it names)', () => {
  for (const [a, seed] of [
    [fetchAdapter, 20261231],
    [viemAdapter, 20261232],
    [ethersAdapter, 20261233],
  ] as const) {
    test(a.name, async () => {
      const t = await check(a, seedOf(seed), RUNS, false, FILE, closingMidway);
      // Calls cut short by the close: the path this test is for.
      expect(t.codes['CLOSED'] ?? 0).toBeGreaterThan(RUNS / 4);
    }, 120_000);
  }
});
