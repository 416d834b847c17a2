/** What `f` throws (an INVALID_OPTIONS error, usually), or `undefined` when it returns. */
export function thrown(f: () => unknown): { code?: string; field?: string; message: string } | undefined {
  try {
    f();
  } catch (e) {
    return e as { code?: string; field?: string; message: string };
  }
  return undefined;
}
