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
    out[k] = redactUrls(v, depth + 1);
  }
  return out;
}

/** JSON text of a value, with bigints as decimal strings (JSON-RPC results never hold one, users' values might). */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)) ?? 'undefined';
}
