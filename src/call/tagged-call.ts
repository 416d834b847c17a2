import type { PoolState } from '../state.js';
import { Call } from './call.js';
import type { Operation } from './context.js';
import type { CallPlan } from './plan.js';
import type { ExecuteOptions } from '../options/options.js';

/** A call made while the pool has a listener: numbered when made, in a field of its own (see call-ids.ts). */
export class NumberedCall<C, T> extends Call<C, T> {
  // Assigned, not declared (see SignalContext).
  private declare readonly callNo: number;
  constructor(s: PoolState<C>, op: Operation<C, T>, options: ExecuteOptions | undefined, plan?: CallPlan<C>) {
    // Numbered before its options are checked: a call refused for them still takes a number, as always.
    const id = ++s.callSeq;
    super(s, op, options, plan);
    this.callNo = id;
  }

  override get id(): number {
    return this.callNo;
  }
}

/**
 * A call that carries its adapter's request (`executeAs`): the adapter's operation and
 * classifier read it from the attempt, so a request needs no closure of its own. A
 * subclass, so that a plain `Call` has no field for it.
 */
export class TaggedCall<C, T> extends Call<C, T> {
  declare readonly tag: unknown;
  // Numbered when made, as a NumberedCall (one class fewer to construct per request).
  private declare readonly callNo: number;
  constructor(s: PoolState<C>, op: Operation<C, T>, plan: CallPlan<C>, tag: unknown) {
    const id = ++s.callSeq;
    super(s, op, undefined, plan);
    this.tag = tag;
    this.callNo = id;
  }

  override get id(): number {
    return this.callNo;
  }
}
