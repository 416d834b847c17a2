/**
 * Redaction of URLs in errors that adapters hand to the pool.
 *
 * Libraries under the adapters (viem's HTTP transport, a fetch implementation) put the
 * request URL in their errors: in `message`, `details`, `url`, the stack. A provider's
 * URL often carries an API key in its path or query. The adapters pass every error they
 * forward through `redactError`, which rewrites each URL it finds along the error's cause
 * chain to its scheme and host (`https://eth.example.com/…`), in place, so the error keeps
 * its class, code and every other field (viem's revert decoding still works).
 */

const URL_PATTERN = /\b([a-z][a-z0-9+.-]*):\/\/(?:[^\s/?#@"'`<>]*@)?([^\s/?#"'`<>]*)[^\s"'`<>]*/gi;
/**
 * Fields that may hold a URL. `input` and `base`: Node's `ERR_INVALID_URL` (`new URL(input, base)`)
 * keeps both, and undici throws one for a redirect whose `Location` cannot be parsed, with the
 * request's URL, key and all, as its base (and the query in the input).
 */
const FIELDS = ['message', 'shortMessage', 'details', 'url', 'input', 'base', 'stack', 'docsPath'] as const;

/** `text` with every URL cut to its scheme and host (user info, path, query and fragment dropped). */
export function redactUrls(text: string): string {
  return text.replace(URL_PATTERN, (whole: string, scheme: string, host: string) => {
    const cut = `${scheme}://${host}`;
    return whole === cut ? whole : `${cut}/…`;
  });
}

/** Redacts the URLs in `error` and its causes (in place, up to 8 deep); returns `error`. */
export function redactError<E>(error: E): E {
  let e: unknown = error;
  for (let depth = 0; depth < 8 && typeof e === 'object' && e !== null; depth++) {
    const o = e as Record<string, unknown>;
    for (const f of FIELDS) {
      const v = o[f];
      if (typeof v === 'string') rewrite(o, f, redactUrls(v));
    }
    const meta = o['metaMessages'];
    if (Array.isArray(meta)) rewrite(o, 'metaMessages', meta.map((m: unknown) => (typeof m === 'string' ? redactUrls(m) : m)));
    e = o['cause'];
  }
  return error;
}

function rewrite(o: Record<string, unknown>, field: string, value: unknown): void {
  if (o[field] === value) return;
  try {
    Object.defineProperty(o, field, { value, writable: true, configurable: true, enumerable: Object.prototype.propertyIsEnumerable.call(o, field) });
  } catch {
    // A frozen error keeps its text; nothing else can be done without replacing it.
  }
}
