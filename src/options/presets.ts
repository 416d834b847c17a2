/**
 * Ready-made call options that read well at the call site: `pool.execute(op, presets.background)`.
 */
import type { ExecuteOptions } from './options.js';

/** Ready-made call options that read well at the call site. */
export const presets = {
  /** Work nobody waits on (polls, refreshes): one attempt, fail fast when nothing admits. */
  background: { retry: 'none', breakerMode: 'fail-fast' },
  /** Work that must get through: retry until cancelled, 250 ms → 10 s, wait for a breaker's probe. */
  essential: {
    retry: 'until-deadline',
    breakerMode: 'wait',
    deadlineMs: Infinity,
    backoff: { initialMs: 250, maxMs: 10_000 },
  },
} as const satisfies Record<string, ExecuteOptions>;
