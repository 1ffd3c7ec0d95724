/**
 * The API key must never leave the Authorization header: not in an error's message, context, cause chain or
 * inspection, and not in a log line. Each failure kind the client can produce is forced here and searched.
 */
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createSalesApi } from '../../src/api/index.js';
import { SalesyncError } from '../../src/core/errors.js';
import {
  TEST_KEY,
  capturedLogger,
  errorBody,
  freePort,
  listBody,
  record,
  recordId,
  recordingLimiter,
  rejectionOf,
  sendJson,
  startFakeService,
  type FakeService,
  type Handler,
} from './fake-service.js';

/** The secret part of the key: finding it anywhere, with or without the prefix, is a leak. */
const SECRET = TEST_KEY.slice(3);

const services: FakeService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()));
});

function expectNoKey(error: unknown, lines: string[]): void {
  const renderings = [
    JSON.stringify(error),
    String(error),
    inspect(error, { depth: 10, showHidden: true }),
    error instanceof Error ? (error.stack ?? '') : '',
    lines.join('\n'),
  ];
  for (const text of renderings) expect(text).not.toContain(SECRET);
  // No got error (which holds the request headers) rides along as a cause.
  expect((error as Error).cause).toBeUndefined();
}

async function failureOf(handler: Handler | null, extra: { timeoutMs?: number } = {}) {
  let baseUrl: string;
  if (handler) {
    const service = await startFakeService(handler);
    services.push(service);
    baseUrl = service.baseUrl;
  } else {
    baseUrl = `http://127.0.0.1:${await freePort()}`;
  }
  const { logger, lines } = capturedLogger();
  const api = createSalesApi({
    baseUrl,
    apiKey: TEST_KEY,
    limiter: recordingLimiter(),
    logger,
    retry: { limit: 1, baseDelayMs: 1, maxDelayMs: 2, maxRetryAfterMs: 1000 },
    timeoutMs: extra.timeoutMs ?? 5_000,
  });
  const error = await rejectionOf(
    (async () => {
      for await (const page of api.listPages('deals')) void page;
    })(),
  );
  return { error, lines };
}

describe('the API key never leaks', () => {
  const echo =
    (status: number, code: string): Handler =>
    (req, res) =>
      // A careless service repeating the Authorization header back must not get the key into our error.
      sendJson(res, status, errorBody(code, `キー ${String(req.headers.authorization)} は拒否されました`));

  const cases: Array<[string, Handler | null, string, { timeoutMs?: number }?]> = [
    ['401 unauthorized (service echoes the header)', echo(401, 'unauthorized'), 'unauthorized'],
    ['403 forbidden', echo(403, 'forbidden'), 'forbidden'],
    [
      '400 validation_error with fields',
      (req, res) =>
        sendJson(
          res,
          400,
          errorBody('validation_error', '不正', [
            { name: String(req.headers.authorization), code: 'invalid_value', message: String(req.headers.authorization) },
          ]),
        ),
      'validation_error',
    ],
    ['404 not_found', echo(404, 'not_found'), 'not_found'],
    ['an unknown code', echo(418, 'teapot'), 'teapot'],
    [
      '429 with a Retry-After too long',
      (_req, res) => sendJson(res, 429, errorBody('rate_limited', '制限'), { 'retry-after': '3600' }),
      'rate_limited',
    ],
    ['500 after retries', echo(500, 'internal_error'), 'internal_error'],
    [
      'an HTML 502 echoing the header',
      (req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end(`<p>${String(req.headers.authorization)}</p>`),
      'http_502',
    ],
    ['a truncated body', (_req, res) => sendJson(res, 200, '{"results":['), 'invalid_response'],
    [
      'a page whose envelope breaks the spec',
      (req, res) => sendJson(res, 200, { results: String(req.headers.authorization), paging: { next: null } }),
      'invalid_response',
    ],
    ['a pagination loop', (_req, res) => sendJson(res, 200, listBody([record(recordId(1))], 'same')), 'invalid_response'],
    ['a reset connection', (_req, res) => res.socket?.destroy(), 'service_unreachable'],
    ['a refused connection', null, 'service_unreachable'],
    ['a timeout', () => undefined, 'timeout', { timeoutMs: 50 }],
  ];

  it.each(cases)('on %s', async (_label, handler, code, extra) => {
    const { error, lines } = await failureOf(handler, extra ?? {});
    expect(error).toBeInstanceOf(SalesyncError);
    expect((error as SalesyncError).code).toBe(code);
    expect(lines.length).toBeGreaterThan(0);
    expectNoKey(error, lines);
  });

  it('on a malformed key rejected before any request', () => {
    const malformed = `sk_${SECRET.slice(0, 30)}!`;
    const { logger, lines } = capturedLogger();
    let error: unknown;
    try {
      createSalesApi({ baseUrl: 'http://127.0.0.1:1', apiKey: malformed, limiter: recordingLimiter(), logger });
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'invalid_api_key_format' });
    for (const text of [JSON.stringify(error), String(error), inspect(error, { depth: 10, showHidden: true })]) {
      expect(text).not.toContain(SECRET.slice(0, 30));
    }
    expect(lines).toEqual([]);
  });

  it('in a reject or an invalid_record error, when the service echoes the key into a record', async () => {
    const echoing = (req: { headers: { authorization?: string | undefined } }) =>
      record('bad-id', { note: `got ${String(req.headers.authorization)} and ${SECRET}` });
    const service = await startFakeService((req, res) =>
      sendJson(res, 200, req.path === '/v1/deals/' ? listBody([echoing(req)], null) : echoing(req)),
    );
    services.push(service);
    const { logger, lines } = capturedLogger();
    const api = createSalesApi({ baseUrl: service.baseUrl, apiKey: TEST_KEY, limiter: recordingLimiter(), logger });
    const page = await api.listPage('deals');
    expect(page.rejects).toHaveLength(1);
    expect(JSON.stringify(page.rejects)).not.toContain(SECRET);
    expect(page.rejects[0]!.raw).toContain('Bearer sk_…(redacted) and …(redacted)');
    const error = await rejectionOf(api.getRecord('deals', recordId(1)));
    expect(error).toMatchObject({ code: 'invalid_record' });
    expectNoKey(error, lines);
  });

  it('in the debug and warn lines of a successful run with retries', async () => {
    let n = 0;
    const { lines } = await (async () => {
      const service = await startFakeService((_req, res) =>
        ++n === 1 ? sendJson(res, 503, errorBody('internal_error', '障害')) : sendJson(res, 200, listBody([], null)),
      );
      services.push(service);
      const captured = capturedLogger();
      const api = createSalesApi({
        baseUrl: service.baseUrl,
        apiKey: TEST_KEY,
        limiter: recordingLimiter(),
        logger: captured.logger,
        retry: { limit: 1, baseDelayMs: 1, maxDelayMs: 2 },
      });
      await api.listPage('deals');
      return captured;
    })();
    expect(lines.some((l) => l.includes('"level":20'))).toBe(true);
    expect(lines.some((l) => l.includes('"level":40'))).toBe(true);
    expect(lines.join('\n')).not.toContain(SECRET);
  });
});
