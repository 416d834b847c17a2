/**
 * Strips what must never travel into an error's details: URLs (which carry keys in
 * their paths and queries) inside strings, at any depth. Long strings are cut, deep or
 * wide structures are summarised, so an answer attached to an error stays small.
 */

const URL_LIKE = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;
const MAX_STRING = 512;
const MAX_ITEMS = 32;
const MAX_DEPTH = 6;

export function redactUrls(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') {
    const s = value.replace(URL_LIKE, '<url>');
    return s.length > MAX_STRING ? `${s.slice(0, MAX_STRING)}…(${s.length} chars)` : s;
  }
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DEPTH) return Array.isArray(value) ? `[array of ${value.length}]` : '[object]';
  if (Array.isArray(value)) {
    const out = value.slice(0, MAX_ITEMS).map((v) => redactUrls(v, depth + 1));
    if (value.length > MAX_ITEMS) out.push(`…(${value.length - MAX_ITEMS} more)`);
    return out;
  }
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [k, v] of Object.entries(value)) {
    if (n++ >= MAX_ITEMS) break;
    // Defined, not assigned: a node's `{"__proto__": {...}}` (an own key, as JSON.parse makes it)
    // assigned would become the copy's prototype, and the key vanish from what the error shows.
    Object.defineProperty(out, k, { value: redactUrls(v, depth + 1), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * A canonical text of a value, for telling equal values apart from unequal ones (the keys of
 * coalesced requests): JSON text with object keys sorted, so the same params written with
 * their fields in another order are one request. It is not JSON: a bigint is written `12n`,
 * which no JSON value reads as, so `12n` and `"12n"` differ. Otherwise as `JSON.stringify`: `toJSON` is called, `undefined` and functions are left out of
 * objects and are `null` in arrays, and a cycle throws a `TypeError`.
 */
export function stableJson(value: unknown): string {
  return canonical(value, []) ?? 'undefined';
}

function canonical(value: unknown, parents: unknown[]): string | undefined {
  if (typeof value === 'object' && value !== null && typeof (value as { toJSON?: unknown }).toJSON === 'function') value = (value as { toJSON: () => unknown }).toJSON();
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return JSON.stringify(value);
    case 'bigint':
      return `${value}n`;
    case 'object':
      break;
    default:
      return undefined; // undefined, functions, symbols
  }
  if (value === null) return 'null';
  if (parents.includes(value)) throw new TypeError('a value to compare refers to itself');
  parents.push(value);
  let out: string;
  if (Array.isArray(value)) {
    out = `[${value.map((v) => canonical(v, parents) ?? 'null').join(',')}]`;
  } else {
    const o = value as Record<string, unknown>;
    const parts: string[] = [];
    for (const k of Object.keys(o).sort()) {
      const v = canonical(o[k], parents);
      if (v !== undefined) parts.push(`${JSON.stringify(k)}:${v}`);
    }
    out = `{${parts.join(',')}}`;
  }
  parents.pop();
  return out;
}
