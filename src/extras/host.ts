/**
 * A default endpoint name for a URL: its host only. Paths and query strings may carry
 * keys; a host rarely does. `undefined` for anything that is not a parseable URL.
 */
export function hostOf(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    return new URL(url).host || undefined;
  } catch {
    return undefined;
  }
}
