/**
 * Runtimes whose timers and promises belong to the request that made them. Cloudflare
 * Workers (workerd) drops a timer that outlives the request that armed it, drops the
 * settling of a promise whose request has ended, and refuses I/O made on one request's
 * behalf from another's code. A pool kept at module scope serves many requests at once,
 * so there no call may depend on a timer another call armed, or go on inside another call's
 * continuation. Where this holds (src/call/timeouts.ts, src/call/waits.ts):
 * - each attempt's timeout has a timer of its own, armed by its call (not one shared timer);
 * - a call that must wait for a rate limit's turn sleeps on its own timer and selects again,
 *   instead of queueing for a turn another call's timer would hand it;
 * - a call woken by another (a concurrency permit handed over, capacity freed) goes on
 *   through a promise it made when it began to wait, so it goes on in its own request.
 * Elsewhere none of this applies (one shared timer is cheaper, and the queue is fairer).
 */
/** Whether `nav` (the runtime's `navigator`) is workerd's: its user agent is `Cloudflare-Workers`. @internal */
export function isWorkerd(nav: unknown): boolean {
  return typeof nav === 'object' && nav !== null && (nav as { userAgent?: unknown }).userAgent === 'Cloudflare-Workers';
}

let bound = isWorkerd((globalThis as { navigator?: unknown }).navigator);

/** Whether timers and promises are bound to the request that made them (Cloudflare Workers). */
export function requestBound(): boolean {
  return bound;
}

/** Turns the request-bound behaviour on or off (tests; a runtime the detection misses). @internal */
export function setRequestBound(on: boolean): void {
  bound = on;
}
