/**
 * A pooled fetch of a `Request` made with the caller's signal ends with `ABORTED` when the
 * caller aborts, even after the Request object itself has been collected.
 *
 * undici makes a Request's signal follow the caller's through the Request's own
 * AbortController, which the caller's signal reaches by a weak reference only: once nothing
 * holds the Request, a full collection ends the link and the Request's signal never aborts.
 * The pool keeps the Request's signal, not the Request (found by the faults generator, seed
 * 18120402: a call aborted at 180 ms ran on until close() ended it with CLOSED).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, test } from 'vitest';
import { createPooledFetch } from '../src/fetch/index.js';
import { isPoolError } from '../src/index.js';
import { startLoopback, type Loopback } from './helpers/loopback.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let server: Loopback | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function collect(): Promise<void> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('a Request with a signal, once the Request is collected', () => {
  test("the caller's abort still ends the call with ABORTED (a server that never answers)", async () => {
    server = await startLoopback(() => undefined); // holds every request
    const pf = createPooledFetch({ endpoints: [server.url], attemptTimeoutMs: 120_000, deadlineMs: 120_000 });
    const results: unknown[] = [];
    const controllers: AbortController[] = [];
    const calls: Promise<void>[] = [];
    // Several calls, each through a Request nothing else holds.
    for (let i = 0; i < 4; i++) {
      const ac = new AbortController();
      controllers.push(ac);
      calls.push(pf(new Request(`${server.url}/x${i}`, { signal: ac.signal })).then(
        () => void results.push('served'),
        (e: unknown) => void results.push(isPoolError(e) ? e.code : String(e)),
      ));
    }
    while (server.hits < 4) await new Promise((r) => setTimeout(r, 5));
    await collect();
    for (const ac of controllers) ac.abort();
    // Bounded: a call the abort did not reach waits for its 120 s deadline; report it instead.
    const bound = new Promise<void>((r) => setTimeout(r, 10_000));
    await Promise.race([Promise.all(calls), bound]);
    expect(results).toEqual(['ABORTED', 'ABORTED', 'ABORTED', 'ABORTED']);
    await pf.pool.close();
  }, 30_000);

  /**
   * One pooled fetch of the Request `make` builds on the caller's signal, to a server that never
   * answers: once the request has arrived, full collections, then the caller aborts. Returns
   * how the call ended ('pending' if it had not ended 10 s later: the abort did not reach it).
   */
  async function abortAfterCollect(deadlineMs: number, make: (url: string, signal: AbortSignal) => Request): Promise<unknown> {
    server = await startLoopback(() => undefined);
    const pf = createPooledFetch({ endpoints: [server.url], attemptTimeoutMs: 120_000, deadlineMs, idempotencyKey: false });
    const ac = new AbortController();
    let result: unknown = 'pending';
    const call = pf(make(server.url, ac.signal)).then(
      () => (result = 'served'),
      (e: unknown) => (result = isPoolError(e) ? e.code : String(e)),
    );
    while (server.hits < 1) await new Promise((r) => setTimeout(r, 5));
    await collect();
    ac.abort();
    await Promise.race([call, new Promise((r) => setTimeout(r, 10_000))]);
    // close() waits for attempts still running: one the abort missed runs for 120 s.
    await Promise.race([pf.pool.close(), new Promise((r) => setTimeout(r, 1000))]);
    return result;
  }

  test("a copy of a Request loses the caller's abort after a collection, as a bare fetch of it does (undici): the deadline still ends the call", async () => {
    const result = await abortAfterCollect(400, (url, signal) => new Request(`${url}/z`, { signal }).clone());
    // ABORTED if the runtime keeps the chain (a fixed undici), DEADLINE_EXCEEDED if not: never a hang.
    expect(['ABORTED', 'DEADLINE_EXCEEDED']).toContain(result);
  }, 30_000);

  test('a Request whose body is read first (POST) also follows the abort', async () => {
    expect(await abortAfterCollect(120_000, (url, signal) => new Request(`${url}/y`, { method: 'POST', body: 'payload', signal }))).toBe('ABORTED');
  }, 30_000);
});
