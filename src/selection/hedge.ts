/**
 * Hedged attempts: for a call marked idempotent, if the first attempt has not answered
 * within a delay (fixed, or a quantile of the endpoint's recent durations), one more
 * attempt starts on a different endpoint; the first success wins and the others are
 * aborted through their signal. Hedges count as attempts, against the retry budget and
 * against the limiters. A call that is not idempotent is never hedged.
 *
 * An optional feature (features.ts: `hedge`, with the call's side in call/hedging.ts): the
 * core reaches it only through its pool's feature table.
 */
import { invalidOption } from '../base/errors.js';
import { needFeature, type FeatureOptions, type Features } from '../features.js';
import { DEFAULTS } from '../options/defaults.js';
import type { HedgeOptions } from '../options/options.js';
import { finite, optionsObject, positiveInteger, type KnownKeys } from '../options/validate.js';

export interface HedgeConfig {
  readonly afterMs: number;
  readonly percentile: number | undefined;
  readonly maxHedges: number;
}

export const DEFAULT_HEDGE: HedgeConfig = { ...DEFAULTS.hedge, percentile: undefined };

const HEDGE_KEYS: Record<keyof HedgeOptions, true> & KnownKeys = { afterMs: true, percentile: true, maxHedges: true };

export function resolveHedge(field: string, value: unknown, base: HedgeConfig): HedgeConfig {
  const o = optionsObject(field, value, HEDGE_KEYS, { delayMs: 'afterMs', max: 'maxHedges' });
  if (o === undefined) return base;
  const percentile = o['percentile'] === undefined ? base.percentile : finite(`${field}.percentile`, o['percentile'], 0.95, 0, true);
  if (percentile !== undefined && percentile >= 1) throw invalidOption(`${field}.percentile`, 'a quantile in (0, 1)', percentile);
  return {
    afterMs: finite(`${field}.afterMs`, o['afterMs'], base.afterMs),
    percentile,
    maxHedges: positiveInteger(`${field}.maxHedges`, o['maxHedges'], base.maxHedges),
  };
}

/**
 * The hedge feature's resolver: `value` (the pool's `hedge`, or a call's) over `base`, the
 * defaults when `undefined`. A percentile needs the latency feature's trackers: refused
 * without it.
 */
export function resolveHedgeFeature(field: string, value: unknown, base: HedgeConfig | undefined, features: Features): HedgeConfig {
  const config = resolveHedge(field, value, base ?? DEFAULT_HEDGE);
  if (config.percentile !== undefined && features.latency === undefined) throw needFeature(`${field}.percentile`, 'latency');
  return config;
}

/** The pool's `hedge`: the calls' defaults (the feature's options, features.ts). */
export const hedgeOptions: FeatureOptions = (o, features) => ({ hedge: resolveHedgeFeature('hedge', o['hedge'], undefined, features) });
