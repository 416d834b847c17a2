/**
 * The body of a `Request` given as the first argument, read before the call starts (so that
 * it can be replayed), within the call's deadline and the caller's signal: a body whose
 * source stalls ends the read with `DEADLINE_EXCEEDED` or `ABORTED` (a `PoolError`, nothing
 * sent), and its stream is cancelled. (`request.arrayBuffer()` was awaited with neither: a
 * stalled upload kept the call pending for good.) Timers go through the pool's clock.
 */
import type { Clock } from '../base/clock.js';
import { PoolError } from '../base/errors.js';

/** Reads `body` whole; ends early at `deadlineMs` (on `clock`) or when `signal` aborts. */
export function readBounded(body: ReadableStream<Uint8Array>, deadlineMs: number, signal: AbortSignal | null | undefined, clock: Clock): Promise<ArrayBuffer> {
  const reader = body.getReader();
  return new Promise<ArrayBuffer>((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let ended = false;
    let timer: unknown;
    const end = (): boolean => {
      if (ended) return false;
      ended = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const stop = (error: PoolError): void => {
      if (!end()) return;
      reader.cancel(error).catch(() => undefined);
      reject(error);
    };
    const onAbort = (): void =>
      stop(new PoolError('ABORTED', "the caller's signal aborted the call while the Request's body was read, before any attempt", { cause: signal?.reason }));
    if (signal?.aborted === true) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (deadlineMs !== Number.POSITIVE_INFINITY) {
      timer = clock.setTimeout(() => stop(new PoolError('DEADLINE_EXCEEDED', `the call's deadline of ${deadlineMs} ms passed while the Request's body was read, before any attempt`)), deadlineMs);
    }
    const pump = (): void => {
      reader.read().then(
        (r) => {
          if (ended) return;
          if (r.done) {
            end();
            const out = new Uint8Array(size);
            let at = 0;
            for (const c of chunks) {
              out.set(c, at);
              at += c.byteLength;
            }
            return resolve(out.buffer);
          }
          chunks.push(r.value);
          size += r.value.byteLength;
          pump();
        },
        (error: unknown) => {
          if (end()) reject(error);
        },
      );
    };
    pump();
  });
}
