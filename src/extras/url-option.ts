/**
 * The check adapters give a base URL option: an absolute URL with one of the allowed
 * schemes, or an `INVALID_OPTIONS` naming the field. The URL itself is never echoed (it
 * may carry a key in its path or query).
 */
import { invalidOption } from '../base/errors.js';

export function checkUrlOption(field: string, value: unknown, schemes: readonly string[] = ['http:', 'https:']): void {
  const expected = `an absolute ${schemes.map((s) => s.slice(0, -1)).join('/')} URL`;
  if (typeof value !== 'string') throw invalidOption(field, expected, value);
  let protocol: string | undefined;
  try {
    protocol = new URL(value).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol === undefined || !schemes.includes(protocol)) throw invalidOption(field, expected, value);
}
