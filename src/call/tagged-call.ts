import type { PoolState } from '../state.js';
import { Call } from './call.js';
import type { Operation } from './context.js';
import type { CallPlan } from './plan.js';

/**
 * A call that carries its adapter's request (`executeAs`): the adapter's operation and
 * classifier read it from the attempt, so a request needs no closure of its own. A
 * subclass, so that a plain `Call` has no field for it.
 */
export class TaggedCall<C, T> extends Call<C, T> {
  readonly tag: unknown;
  constructor(s: PoolState<C>, op: Operation<C, T>, plan: CallPlan<C>, tag: unknown) {
    super(s, op, undefined, plan);
    this.tag = tag;
  }
}
