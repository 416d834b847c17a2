/**
 * Classification of API-key providers' messages (Etherscan and the many explorers and
 * data APIs that copy its wording), so users stop copying regular expressions around.
 *
 * | message (any case, common variants)                               | classification |
 * |-------------------------------------------------------------------|----------------|
 * | "Max calls per sec rate limit reached (5/sec)", "… 5 calls per second", "rate limit of 10 requests per second" | `rate-limited`, `ceilingPerSecond: 5` (wins over a per-day number in the same message) |
 * | "Max daily rate limit reached", "daily limit exceeded", "daily quota", "per day" limits | `rate-limited`, `dailyQuotaExhausted: true` |
 * | a limit that is not on calls ("block gas limit", "block range", a `limit` parameter), a revert | `undefined` |
 * | "Max rate limit reached", "rate limit exceeded", "too many requests" (no number) | `rate-limited` |
 * | "Invalid API Key", "Missing/Invalid API Key", "API key not found", "banned" key | `permanent`, `disableEndpoint: true` |
 * | anything else                                                     | `undefined`: decide yourself |
 *
 * It reads a string, an `Error`'s `message`, or a parsed JSON body's `result`, `message`
 * or `error` field (Etherscan answers HTTP 200 with `{ status: "0", message: "NOTOK",
 * result: "Max rate limit reached" }`). Returning `undefined` for what it does not
 * recognise lets it sit in front of another classifier:
 *
 * ```ts
 * classify: (err) => classifyApiKeyMessage(err) ?? classifyFetchError(err)
 * ```
 *
 * Which level of a group a per-second number describes is left to the pool (it compares
 * the number with the levels in force); pass `ceilingScope` yourself when your provider
 * says.
 */
import type { Classification } from '../base/classify.js';

const PER_SECOND = [
  // "(5/sec)", "(5 / s)", "(2.5/second)"
  /\(\s*(\d+(?:\.\d+)?)\s*\/\s*s(?:ec(?:ond)?s?)?\s*\)/,
  // "5 calls per second", "10 requests/sec", "limit of 3 req per sec", "5 rps"
  /(\d+(?:\.\d+)?)\s*(?:calls?|requests?|reqs?|queries)?\s*(?:per\s*|\/\s*)s(?:ec(?:ond)?)?\b/,
  /(\d+(?:\.\d+)?)\s*rps\b/,
];
/** A daily limit named as such: "daily …", "day/limit", "24 hours". */
const DAILY = /\bdaily\b|\bday\/limit\b|\b24\s*h(?:ours?)?\b/;
/** A rate stated per day ("100,000 calls per day"): the limit hit only when no per-second one is named. */
const PER_DAY = /\bper[\s-]*day\b|\/\s*day\b/;
/** Words that make a message about the rate of calls whatever else it says. */
const RATE = /rate[\s-]*limit|too many requests|throttl|quota/;
/** A limit on calls: "request limit reached", "limit of 3 requests/sec", "limited to 5 calls per second". */
const CALL_LIMIT = /\b(?:calls?|requests?|reqs?|queries|credits?)\b[^.;]*\b(?:limit|exceed|reached)|\b(?:limit|exceed)\w*\b[^.;]*\b(?:calls?|requests?|reqs?|queries|credits?)\b/;
const LIMIT_HIT = /\blimit\b|exceed|reached|exhausted/;
/**
 * Limits that are not on calls (gas, a block range, a page size, a `limit` parameter, a
 * contract's own rule): "exceeds block gas limit", "Log response size exceeded", "limit must
 * be between 1 and 100", "transfer amount exceeds balance". Without a rate word such a
 * message is left to the next classifier.
 */
const NOT_CALLS = /\b(?:gas|range|size|entity|payload|body|length|offset|page|results?|records?|logs?|memory|depth|balance|amount|allowance|supply|withdraw\w*|transfer\w*|deposit\w*)\b|\blimit\s+(?:must|should|param\w*|value|argument)\b|\binvalid\s+limit\b/;
/** A contract's or a node's answer, never a key's: "execution reverted: … limit exceeded". */
const REVERT = /\brevert/;
const INVALID_KEY = /invalid[\s_-]*api[\s_-]*key|api[\s_-]*key[^.]*\b(?:invalid|not found|not valid|banned|revoked|disabled|expired)\b|missing[\s/]*(?:or[\s]*)?(?:invalid[\s]*)?api[\s_-]*key|\binvalid[\s_-]*key\b(?!\s*["'`:=(\[])(?!\s+(?:in|for|of|at|on)\b)|unknown[\s_-]*api[\s_-]*key/;

/** The text an error, a message or a parsed JSON body carries, if any. */
function textOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value !== 'object' || value === null) return undefined;
  const o = value as Record<string, unknown>;
  for (const field of ['result', 'message', 'error']) {
    const v = o[field];
    // `message: "NOTOK"` says nothing: prefer a field that does.
    if (typeof v === 'string' && v !== '' && v !== 'NOTOK') return v;
    if (typeof v === 'object' && v !== null) {
      const inner = textOf(v);
      if (inner !== undefined) return inner;
    }
  }
  return undefined;
}

/**
 * Classifies an API-key provider's message (a string, an `Error`, or a parsed JSON body);
 * `undefined` when it is none of the known kinds.
 */
export function classifyApiKeyMessage(messageOrError: unknown): Classification | undefined {
  const text = textOf(messageOrError);
  if (text === undefined) return undefined;
  const m = text.toLowerCase();
  if (REVERT.test(m)) return undefined;
  if (INVALID_KEY.test(m)) return { class: 'permanent', disableEndpoint: true };
  const daily = DAILY.test(m);
  const aboutCalls = RATE.test(m) || (!NOT_CALLS.test(m) && (CALL_LIMIT.test(m) || (daily && LIMIT_HIT.test(m))));
  if (!aboutCalls) return undefined;
  if (daily) return { class: 'rate-limited', dailyQuotaExhausted: true };
  // A per-second number wins over a per-day one: "5/sec reached; your plan allows 100,000 per day".
  for (const re of PER_SECOND) {
    const hit = re.exec(m);
    if (hit === null) continue;
    const n = Number(hit[1]);
    if (Number.isFinite(n) && n > 0) return { class: 'rate-limited', ceilingPerSecond: n };
  }
  if (PER_DAY.test(m)) return { class: 'rate-limited', dailyQuotaExhausted: true };
  return { class: 'rate-limited' };
}
