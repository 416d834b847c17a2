/**
 * Call numbers (`callId` in events). Only events read them, so a call made while its pool
 * has no listener carries no field for one (heap per call in flight); if a listener comes
 * while it runs, it is numbered when first asked. A call made with a listener keeps its
 * number in a field (`NumberedCall`): no look-up on that path.
 */
const late = new WeakMap<object, number>();

/** The number of `call`, given from `s.callSeq` at the first asking. */
export function lateId(call: object, s: { callSeq: number }): number {
  let id = late.get(call);
  if (id === undefined) late.set(call, (id = ++s.callSeq));
  return id;
}
