/**
 * The fetch adapter's pure parts where the twenty-eighth session's first mutation run of
 * them found nothing holding them: statuses refused by the endpoint (not the request),
 * `Retry-After` under a second and at the present instant, what `classifyResponse` accepts,
 * the errors' messages and what they show, and URL redaction (metaMessages, cycles, a bare
 * host, fields left writable).
 */
import { describe, expect, test } from 'vitest';
import { classifyResponse, classifyStatus, HttpStatusError, isHttpStatusError, parseRetryAfter, ResponseBodyError } from '../../src/fetch/index.js';
import { redactError, redactUrls } from '../../src/extras/redact.js';

describe('classifyStatus', () => {
  test.each([
    [401, undefined, 'unsupported'],
    [403, undefined, 'unsupported'],
    [405, undefined, 'unsupported'],
    [402, undefined, 'unsupported'], // Payment Required: a plan out of credit (dRPC's free tier)
    [400, undefined, 'permanent'],
    [404, undefined, 'permanent'],
    [399, undefined, 'ok'],
    [500, 1_000, 'transient'],
    [502, 1_000, 'transient'],
    [504, 2_000, 'transient'],
    [503, 1_000, { class: 'rate-limited', retryAfterMs: 1_000 }],
  ] as const)('%i (retry-after %j) → %j', (status, hint, want) => {
    expect(classifyStatus(status, hint)).toEqual(want);
  });
});

describe('classifyResponse', () => {
  const res = (status: number, ra?: string) => new Response(null, { status, headers: ra === undefined ? {} : { 'retry-after': ra } });
  test('400 is the first failing status, read with its header', () => {
    expect(classifyResponse(res(400))).toBe('permanent');
    expect(classifyResponse(res(299))).toBe('ok');
    expect(classifyResponse(res(401))).toBe('unsupported');
  });

  test.each([[null], [undefined], [5], ['429'], [{ status: '429', headers: new Headers() }], [{ status: 429 }], [{ status: 429, headers: {} }], [{ status: 429, headers: null }]])(
    '%j is INVALID_OPTIONS naming res',
    (value) => {
      let error: unknown;
      try {
        classifyResponse(value as never);
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({ code: 'INVALID_OPTIONS', field: 'res' });
      expect((error as Error).message).toMatch(/^res: .*a Response \(\{ status, headers \}\)/);
    },
  );
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  test.each([
    ['0.5', 1_000],
    ['0.001', 1_000],
    ['1', 1_000],
    ['1.25', 1_250],
    ['2.125', 2_125],
    ['Wed, 01 Jan 2025 00:00:00 GMT', undefined],
  ])('%j → %j', (value, want) => {
    expect(parseRetryAfter(value, now)).toBe(want);
  });

  // A date 500 ms ahead is a one-second wait. (This row was "00:00:00.5 GMT" against `now`: not an
  // HTTP-date, which has whole seconds, and no hint since dates are read strictly.)
  test('a date within the next second → 1000', () => {
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:01 GMT', now + 500)).toBe(1_000);
  });
});

describe('the errors', () => {
  test('HttpStatusError names its endpoint when it has one; its response is not shown', () => {
    const response = new Response(null, { status: 503 });
    const named = new HttpStatusError(503, { endpoint: 'node-1', response, retryAfterMs: 5 });
    expect(named.message).toBe('endpoint "node-1" answered HTTP 503');
    expect(new HttpStatusError(418).message).toBe('HTTP 418');
    expect(named.response).toBe(response);
    expect(Object.keys(named)).not.toContain('response');
    expect(JSON.stringify(named)).not.toContain('response');
  });

  test('ResponseBodyError says what failed and keeps its cause', () => {
    const cause = new SyntaxError('Unexpected end of JSON input');
    const e = new ResponseBodyError(200, 'node-1', cause);
    expect(e.message).toBe('endpoint "node-1" answered HTTP 200 with a body that could not be read');
    expect(e.cause).toBe(cause);
  });

  test('isHttpStatusError: false for null, undefined and plain values', () => {
    for (const v of [null, undefined, 0, 'HTTP 500', {}, new Error('HTTP 500')]) expect(isHttpStatusError(v)).toBe(false);
    expect(isHttpStatusError(new HttpStatusError(500))).toBe(true);
  });
});

describe('redaction', () => {
  test('a bare scheme and host stays as it is; a path is cut', () => {
    expect(redactUrls('see https://a.example.com and https://b.example.com/v3/SECRET?k=1')).toBe('see https://a.example.com and https://b.example.com/…');
  });

  test("viem's metaMessages are redacted, what is not a string kept", () => {
    const e = Object.assign(new Error('x'), { metaMessages: ['URL: https://node.example.com/v2/SECRET', 7, null] });
    redactError(e);
    expect(e.metaMessages).toEqual(['URL: https://node.example.com/…', 7, null]);
  });

  test('a cause chain that loops ends; a null cause is the end; eight levels are redacted', () => {
    const loop = new Error('https://a.example.com/SECRET') as Error & { cause?: unknown };
    loop.cause = loop;
    expect(redactError(loop).message).toBe('https://a.example.com/…');
    const ended = Object.assign(new Error('https://a.example.com/SECRET'), { cause: null });
    expect(redactError(ended).message).toBe('https://a.example.com/…');
    let chain: Error | undefined;
    const levels: Error[] = [];
    for (let i = 0; i < 8; i++) levels.unshift((chain = new Error(`https://x.example.com/${i}`, chain === undefined ? {} : { cause: chain })));
    redactError(levels[0]!);
    expect(levels.map((l) => l.message)).toEqual(Array.from({ length: 8 }, () => 'https://x.example.com/…'));
  });

  test('a redacted field can still be written and deleted, and keeps its enumerability', () => {
    const e = Object.assign(new Error('https://a.example.com/SECRET'), { url: 'https://a.example.com/SECRET' });
    redactError(e);
    expect(Object.keys(e)).toContain('url');
    expect(Object.keys(e)).not.toContain('message');
    e.message = 'changed';
    expect(e.message).toBe('changed');
    expect(delete (e as { url?: string }).url).toBe(true);
    expect('url' in e).toBe(false);
  });
});
