import { afterEach, describe, expect, it } from 'vitest';
import {
  InvalidRecordError,
  InvalidResponseError,
  MAX_CURSOR_REPEATS,
  RateLimitWaitError,
  RequestTimeoutError,
  SalesApiError,
  ServiceUnreachableError,
  createSalesApi,
  keyFingerprint,
} from '../../src/api/index.js';
import { peekNextCursor, peekNextCursorInText } from '../../src/api/client.js';
import { SalesyncError } from '../../src/core/errors.js';
import type { RetryOptions, SalesApi } from '../../src/api/types.js';
import type { RateLimiter } from '../../src/core/rate-limiter.js';
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
  sequence,
  startFakeService,
  type FakeService,
  type Handler,
} from './fake-service.js';

const FAST_RETRY: RetryOptions = { limit: 2, baseDelayMs: 1, maxDelayMs: 5, maxRetryAfterMs: 5_000 };
const FINGERPRINT = keyFingerprint(TEST_KEY);

const services: FakeService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()));
});

async function setup(
  handler: Handler,
  options: { limiter?: RateLimiter; retry?: RetryOptions; timeoutMs?: number } = {},
): Promise<{ api: SalesApi; service: FakeService; limiter: ReturnType<typeof recordingLimiter>; lines: string[] }> {
  const service = await startFakeService(handler);
  services.push(service);
  const limiter = recordingLimiter();
  const { logger, lines } = capturedLogger();
  const api = createSalesApi({
    baseUrl: service.baseUrl,
    apiKey: TEST_KEY,
    limiter: options.limiter ?? limiter,
    logger,
    retry: options.retry ?? FAST_RETRY,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
  return { api, service, limiter, lines };
}

/** A list body whose `paging.next` lacks `link`: the cursor can be read, but the envelope breaks the spec. */
function brokenEnvelope(results: unknown[], after: string): unknown {
  return { results, paging: { next: { after } } };
}

async function collect<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const page of pages) out.push(page);
  return out;
}

describe('listing', () => {
  it('follows paging.next.after cursors until the last page, passing updated_after as given', async () => {
    const pages: Record<string, { ids: number[]; next: string | null }> = {
      '': { ids: [1, 2], next: 'c2' },
      c2: { ids: [3, 4], next: 'c3' },
      c3: { ids: [5], next: null },
    };
    const { api, service } = await setup((req, res) => {
      const page = pages[req.query.get('after') ?? '']!;
      sendJson(
        res,
        200,
        listBody(
          page.ids.map((n) => record(recordId(n))),
          page.next,
        ),
        {
          date: 'Wed, 01 May 2024 09:30:05 GMT',
        },
      );
    });
    const updatedAfter = '2024-05-01T09:00:00.123456+09:00';
    const result = await collect(api.listPages('deals', { updatedAfter }));

    expect(result.map((p) => p.results.map((r) => r.id))).toEqual([[recordId(1), recordId(2)], [recordId(3), recordId(4)], [recordId(5)]]);
    expect(result.map((p) => p.nextCursor)).toEqual(['c2', 'c3', null]);
    expect(result[0]!.serverDate).toBe('2024-05-01T09:30:05Z');
    expect(service.requests.map((r) => r.path)).toEqual(['/v1/deals/', '/v1/deals/', '/v1/deals/']);
    expect(service.requests.map((r) => r.query.get('after'))).toEqual([null, 'c2', 'c3']);
    for (const req of service.requests) {
      expect(req.query.get('page_size')).toBe('200');
      expect(req.query.get('updated_after')).toBe(updatedAfter);
      expect(req.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    }
  });

  it('keeps timestamps with microseconds and offsets exactly as sent, and serverDate null without a Date header', async () => {
    const { api } = await setup((_req, res) => {
      res.sendDate = false; // node:http adds a Date header unless told not to
      sendJson(res, 200, listBody([record(recordId(1))], null));
    });
    const page = await api.listPage('contacts', { pageSize: 50 });
    expect(page.results[0]!.created_at).toBe('2024-05-01T09:30:00.123456+09:00');
    expect(page.results[0]!.updated_at).toBe('2024-05-02T00:00:00.000001Z');
    expect(page.serverDate).toBeNull();
  });

  it('continues from a given cursor and page size', async () => {
    const { api, service } = await setup((_req, res) => sendJson(res, 200, listBody([], null)));
    await api.listPage('meeting-logs', { after: 'resume-here', pageSize: 17 });
    expect(service.requests[0]!.path).toBe('/v1/meeting-logs/');
    expect(service.requests[0]!.query.get('after')).toBe('resume-here');
    expect(service.requests[0]!.query.get('page_size')).toBe('17');
    expect(service.requests[0]!.query.has('updated_after')).toBe(false);
  });

  it('follows a cursor the service gave before, flagging the page that named it cursorRepeated', async () => {
    // Page c3 names c2 again (the list moved under the walk); the second time round, c3 leads on to c4.
    let c3Seen = 0;
    const { api, service } = await setup((req, res) => {
      const after = req.query.get('after');
      if (after === null) sendJson(res, 200, listBody([record(recordId(1))], 'c2'));
      else if (after === 'c2') sendJson(res, 200, listBody([record(recordId(2))], 'c3'));
      else if (after === 'c3') sendJson(res, 200, listBody([record(recordId(3))], ++c3Seen === 1 ? 'c2' : 'c4'));
      else sendJson(res, 200, listBody([record(recordId(4))], null));
    });
    const pages = await collect(api.listPages('deals'));
    expect(pages.map((p) => [p.nextCursor, p.cursorRepeated === true])).toEqual([
      ['c2', false],
      ['c3', false],
      ['c2', true],
      ['c3', true],
      ['c4', false],
      [null, false],
    ]);
    expect(service.requests.map((r) => r.query.get('after'))).toEqual([null, 'c2', 'c3', 'c2', 'c3', 'c4']);
  });

  it(`throws invalid_response "loop detected in pagination" past ${MAX_CURSOR_REPEATS} repeated cursors, before yielding that page`, async () => {
    const { api } = await setup((req, res) => {
      const after = req.query.get('after');
      sendJson(res, 200, listBody([record(recordId(1))], after === 'a' ? 'b' : 'a'));
    });
    const yielded: Array<[string | null, boolean]> = [];
    const error = await rejectionOf(
      (async () => {
        for await (const page of api.listPages('deals')) yielded.push([page.nextCursor, page.cursorRepeated === true]);
      })(),
    );
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ code: 'invalid_response', disposition: 'fatal' });
    expect((error as Error).message).toContain('loop detected in pagination');
    // a, b new; then three repeats are followed; the fourth throws.
    expect(MAX_CURSOR_REPEATS).toBe(3);
    expect(yielded).toEqual([
      ['a', false],
      ['b', false],
      ['a', true],
      ['b', true],
      ['a', true],
    ]);
  });

  it("counts a resumed walk's starting cursor as given: a page naming it again is flagged cursorRepeated", async () => {
    const { api } = await setup((req, res) => {
      const after = req.query.get('after');
      sendJson(res, 200, listBody([record(recordId(1))], after === 'start' ? 'start' : null));
    });
    const walk = api.listPages('deals', { after: 'start' });
    const first = await walk.next();
    expect(first.value).toMatchObject({ nextCursor: 'start', cursorRepeated: true });
    await walk.return(undefined);
  });

  it('asks for the next page while the caller still holds the current one, and not past the last', async () => {
    const pages: Record<string, { ids: number[]; next: string | null }> = {
      '': { ids: [1], next: 'c2' },
      c2: { ids: [2], next: null },
    };
    const { api, service } = await setup((req, res) => {
      const page = pages[req.query.get('after') ?? '']!;
      sendJson(
        res,
        200,
        listBody(
          page.ids.map((n) => record(recordId(n))),
          page.next,
        ),
      );
    });
    const walk = api.listPages('deals');
    const first = await walk.next();
    expect(first.value?.nextCursor).toBe('c2');
    // The caller has not asked for page 2 yet, but its request is on its way.
    await expect.poll(() => service.requests.length).toBe(2);
    expect((await walk.next()).value?.nextCursor).toBeNull();
    expect((await walk.next()).done).toBe(true);
    expect(service.requests.map((r) => r.query.get('after'))).toEqual([null, 'c2']);
  });

  it.each([
    ['JSON that breaks the envelope', JSON.stringify(brokenEnvelope([record(recordId(1))], 'c2'))],
    // Only the text shows the cursor: it is read before the body is parsed.
    ['text that is not JSON', '{"results":[,],"paging":{"next":{"after":"c2","link":"http://fake/v1/deals/?after=c2"}}}'],
    // The text does not show it plainly (a nested member first): the parsed body does.
    ['JSON whose text hides the cursor', JSON.stringify({ results: [], paging: { next: { hint: { a: 1 }, after: 'c2' } } })],
  ])('asks for the next page as soon as a response names its cursor, before the page is validated: %s', async (_, firstAnswer) => {
    // Page 1 first comes back bad (a retry follows after a backoff); its cursor is already on its way.
    let firstAttempts = 0;
    const { api, service } = await setup(
      (req, res) => {
        const after = req.query.get('after');
        if (after === null) {
          firstAttempts += 1;
          if (firstAttempts === 1) {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(firstAnswer);
          } else sendJson(res, 200, listBody([record(recordId(1))], 'c2'));
        } else {
          sendJson(res, 200, listBody([record(recordId(2))], null));
        }
      },
      { retry: { ...FAST_RETRY, baseDelayMs: 200, maxDelayMs: 200 } },
    );
    const pages = await collect(api.listPages('deals'));
    expect(pages.map((p) => p.results.map((r) => r.id))).toEqual([[recordId(1)], [recordId(2)]]);
    // Page 2 was asked for once, while page 1 waited for its retry, not after it.
    expect(service.requests.map((r) => r.query.get('after'))).toEqual([null, 'c2', null]);
  });

  it('follows the parsed cursor when the text misleads the guess (a record with a paging object of its own)', async () => {
    const decoy = { ...(record(recordId(1)) as object), properties: { paging: { next: { after: 'decoy' } } } };
    const { api, service } = await setup((req, res) => {
      const after = req.query.get('after');
      if (after === null) {
        // The real paging comes first, so the last "paging" in the text is the record's.
        const { results, paging } = listBody([decoy, record(recordId(2))], 'c2') as { results: unknown[]; paging: unknown };
        sendJson(res, 200, { paging, results });
      } else if (after === 'c2') sendJson(res, 200, listBody([record(recordId(3))], null));
      else sendJson(res, 200, listBody([record(recordId(9))], null));
    });
    const pages = await collect(api.listPages('deals'));
    expect(pages.map((p) => p.nextCursor)).toEqual(['c2', null]);
    expect(pages.flatMap((p) => p.results.map((r) => r.id))).not.toContain(recordId(9));
    expect(pages[1]!.results.map((r) => r.id)).toEqual([recordId(3)]);
    expect(service.requests.filter((r) => r.query.get('after') === 'c2')).toHaveLength(1);
  });

  it('asks for no page beyond the next while the caller holds one', async () => {
    const { api, service } = await setup((req, res) => {
      const after = req.query.get('after');
      const n = after === null ? 1 : Number(after.slice(1));
      sendJson(res, 200, listBody([record(recordId(n))], n < 4 ? `c${n + 1}` : null));
    });
    const walk = api.listPages('deals');
    await walk.next();
    // Page 2 arrives while the caller holds page 1: its cursor is not followed until the caller asks again.
    await expect.poll(() => service.requests.length).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(service.requests.map((r) => r.query.get('after'))).toEqual([null, 'c2']);
    const rest = await collect(walk);
    expect(rest.map((p) => p.results[0]!.id)).toEqual([recordId(2), recordId(3), recordId(4)]);
    expect(service.requests.map((r) => r.query.get('after'))).toEqual([null, 'c2', 'c3', 'c4']);
  });

  it('drops the page asked for early when the retried page names another cursor, and follows the validated one', async () => {
    let firstAttempts = 0;
    const { api, service } = await setup((req, res) => {
      const after = req.query.get('after');
      if (after === null) {
        firstAttempts += 1;
        // The invalid answer names a cursor the valid one does not.
        if (firstAttempts === 1) sendJson(res, 200, brokenEnvelope([record(recordId(1))], 'stale'));
        else sendJson(res, 200, listBody([record(recordId(1))], 'c2'));
      } else if (after === 'stale') {
        setTimeout(() => sendJson(res, 200, listBody([record(recordId(9))], 'stale-2')), 100);
      } else {
        // Slower than the stale answer: the walk is still on when that one would arrive.
        setTimeout(() => sendJson(res, 200, listBody([record(recordId(2))], null)), 300);
      }
    });
    const pages = await collect(api.listPages('deals'));
    expect(pages.map((p) => p.results.map((r) => r.id))).toEqual([[recordId(1)], [recordId(2)]]);
    // Nothing was asked for after the stale page: its request was aborted before it could name a cursor.
    expect(service.requests.map((r) => r.query.get('after'))).not.toContain('stale-2');
  });

  it('does not hand out a page that arrived after the caller aborted', async () => {
    const { api, service } = await setup((req, res) => {
      const after = req.query.get('after');
      sendJson(res, 200, listBody([record(recordId(after === null ? 1 : 2))], after === null ? 'c2' : null));
    });
    const controller = new AbortController();
    const walk = api.listPages('deals', { signal: controller.signal });
    await walk.next();
    // Page 2 was requested ahead; give its answer time to arrive, so the abort comes after it.
    await expect.poll(() => service.requests.length).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    controller.abort(new Error('stop here'));
    await expect(walk.next()).rejects.toThrow('stop here');
  });

  it('lists users with the email filter', async () => {
    const user = { id: recordId(9), email: 'Taro@Example.com', name: '山田太郎', is_active: true };
    const { api, service } = await setup((_req, res) => sendJson(res, 200, listBody([user], null)));
    const pages = await collect(api.listUserPages({ email: 'taro@example.com' }));
    expect(pages[0]!.results).toEqual([user]);
    expect(service.requests[0]!.path).toBe('/v1/users/');
    expect(service.requests[0]!.query.get('email')).toBe('taro@example.com');
  });

  it('reads one page of users without asking for the next (the connection check)', async () => {
    const user = { id: recordId(9), email: 'taro@example.com', name: '山田太郎', is_active: true };
    const { api, service } = await setup((_req, res) => sendJson(res, 200, listBody([user], 'c2')));
    const page = await api.listUserPage({ pageSize: 1 });
    expect(page).toMatchObject({ results: [user], nextCursor: 'c2' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(service.requests.map((r) => r.query.get('page_size'))).toEqual(['1']);
  });
});

describe('per-record validation of pages', () => {
  it('one invalid record in a page is rejected with its id and reason, the other 199 are kept, without a retry', async () => {
    const results: unknown[] = Array.from({ length: 200 }, (_, n) => record(recordId(n + 1)));
    const bad = record(recordId(57), { amount: { value: 1 } });
    results[56] = bad;
    const { api, service } = await setup((_req, res) => sendJson(res, 200, listBody(results, 'c2')));
    const page = await api.listPage('deals');
    expect(page.results).toHaveLength(199);
    expect(page.results.map((r) => r.id)).not.toContain(recordId(57));
    expect(page.rejects).toEqual([
      { id: recordId(57), raw: JSON.stringify(bad), reason: 'properties.amount: must be a string, a finite number, a boolean or null' },
    ]);
    expect(page.nextCursor).toBe('c2');
    expect(service.requests).toHaveLength(1);
  });

  it('a walk hands out a page with a malformed id (17 characters) as a reject and goes on to the next page', async () => {
    const short = record(recordId(2).slice(1));
    const { api } = await setup((req, res) => {
      const after = req.query.get('after');
      if (after === null) sendJson(res, 200, listBody([record(recordId(1)), short], 'c2'));
      else sendJson(res, 200, listBody([record(recordId(3))], null));
    });
    const pages = await collect(api.listPages('deals'));
    expect(pages.map((p) => p.results.map((r) => r.id))).toEqual([[recordId(1)], [recordId(3)]]);
    expect(pages.map((p) => p.rejects)).toEqual([
      [{ id: recordId(2).slice(1), raw: JSON.stringify(short), reason: 'id: must match ^[A-Za-z0-9]{18}$' }],
      [],
    ]);
  });

  it('a leap-second updated_at and a space for T are rejects naming the field, not a failed page', async () => {
    const leap = { ...record(recordId(1)), updated_at: '2024-12-31T23:59:60Z' };
    const spaced = { ...record(recordId(2)), created_at: '2024-05-01 09:30:00.123456+09:00' };
    const { api, service } = await setup((_req, res) => sendJson(res, 200, listBody([leap, spaced, record(recordId(3))], null)));
    const page = await api.listPage('deals');
    expect(page.results.map((r) => r.id)).toEqual([recordId(3)]);
    expect(page.rejects.map((r) => [r.id, r.reason])).toEqual([
      [recordId(1), 'updated_at: 2024-12-31T23:59:60Z is not an instant the warehouse can store (a leap second?)'],
      [recordId(2), expect.stringMatching(/^created_at: must be an ISO 8601 date-time/)],
    ]);
    expect(service.requests).toHaveLength(1);
  });

  it('rejects invalid records of a search answer and keeps the others', async () => {
    const bad = { ...record(recordId(2)), properties: null };
    const { api, service } = await setup((_req, res) => sendJson(res, 200, listBody([record(recordId(1)), bad], null)));
    const page = await api.search('meeting-logs', { page: 1, page_size: 100 });
    expect(page.results.map((r) => r.id)).toEqual([recordId(1)]);
    expect(page.rejects).toEqual([
      { id: recordId(2), raw: JSON.stringify(bad), reason: 'properties: must be an object of property values' },
    ]);
    expect(service.requests).toHaveLength(1);
  });

  it('a user with name null is rejected by listUserPages and listUserPage, the others kept', async () => {
    const users = [1, 2, 3].map((n) => ({ id: recordId(n), email: `u${n}@example.com`, name: `U${n}`, is_active: n !== 2 }));
    const nameless = { ...users[1]!, name: null };
    const { api, service } = await setup((_req, res) => sendJson(res, 200, listBody([users[0], nameless, users[2]], null)));
    const walked = await collect(api.listUserPages());
    const single = await api.listUserPage();
    for (const page of [walked[0]!, single]) {
      expect(page.results).toEqual([users[0], users[2]]);
      expect(page.rejects).toEqual([{ id: recordId(2), raw: JSON.stringify(nameless), reason: expect.stringMatching(/^name: .*string/) }]);
    }
    expect(walked).toHaveLength(1);
    expect(service.requests).toHaveLength(2);
  });
});

describe('single views', () => {
  it('gets a meeting log with its summaries', async () => {
    const summary = {
      summary_type: 'overview',
      result_type: 'text',
      text: '要約です',
      selections: [],
      reason: '',
      status: 'completed',
      updated_at: '2024-05-01T10:00:00.654321+09:00',
    };
    const { api, service } = await setup((_req, res) =>
      sendJson(res, 200, { ...record(recordId(3), { deal_id: recordId(4) }), summaries: [summary] }),
    );
    const log = await api.getMeetingLog(recordId(3));
    expect(service.requests[0]!.path).toBe(`/v1/meeting-logs/${recordId(3)}/`);
    expect(log.summaries).toEqual([summary]);
    expect(log.properties.deal_id).toBe(recordId(4));
  });

  it('takes a yielding token for a meeting log read with `yielding`, a level one otherwise', async () => {
    const asked: Array<boolean | undefined> = [];
    const limiter: RateLimiter = {
      acquire: async (keyIds, options) => {
        asked.push(options?.yielding);
        return { keyId: keyIds[0]!, waitedMs: 0 };
      },
      observe: () => undefined,
      pause: () => undefined,
    };
    const { api } = await setup((_req, res) => sendJson(res, 200, { ...record(recordId(3)), summaries: [] }), { limiter });
    await api.getMeetingLog(recordId(3), undefined, { yielding: true });
    await api.getMeetingLog(recordId(3));
    expect(asked).toEqual([true, false]);
  });

  it('gets a record and a user by id', async () => {
    const user = { id: recordId(5), email: 'a@example.com', name: 'A', is_active: false };
    const { api, service } = await setup((req, res) => sendJson(res, 200, req.path.startsWith('/v1/users/') ? user : record(recordId(6))));
    expect((await api.getRecord('companies', recordId(6))).id).toBe(recordId(6));
    expect(await api.getUser(recordId(5))).toEqual(user);
    expect(service.requests.map((r) => r.path)).toEqual([`/v1/companies/${recordId(6)}/`, `/v1/users/${recordId(5)}/`]);
  });

  it.each([
    [
      'getRecord',
      (api: SalesApi) => api.getRecord('deals', recordId(1)),
      'deals',
      `/v1/deals/${recordId(1)}/`,
      { ...record(recordId(1)), updated_at: '2024-12-31T23:59:60Z' },
      'updated_at: 2024-12-31T23:59:60Z is not an instant the warehouse can store (a leap second?)',
    ],
    [
      'getMeetingLog',
      (api: SalesApi) => api.getMeetingLog(recordId(1)),
      'meeting-logs',
      `/v1/meeting-logs/${recordId(1)}/`,
      { ...record(recordId(1), { x: [1] }), summaries: [] },
      'properties.x: must be a string, a finite number, a boolean or null',
    ],
    [
      'getUser',
      (api: SalesApi) => api.getUser(recordId(1)),
      'users',
      `/v1/users/${recordId(1)}/`,
      { id: recordId(1), email: 'a@example.com', name: null, is_active: true },
      expect.stringMatching(/^name: /),
    ],
  ] as const)(
    '%s: a valid JSON body that breaks the record schema throws invalid_record at once, naming the record',
    async (_name, get, resource, path, body, reason) => {
      const { api, service } = await setup((_req, res) => sendJson(res, 200, body));
      const error = await rejectionOf(get(api));
      expect(error).toBeInstanceOf(InvalidRecordError);
      expect(error).toBeInstanceOf(SalesyncError);
      expect(error).toMatchObject({
        code: 'invalid_record',
        disposition: 'fatal',
        context: { id: recordId(1), raw: JSON.stringify(body), reason, path },
      });
      const { message } = error as Error;
      expect(message.startsWith(`${resource} ${recordId(1)}: ${(error as InvalidRecordError).reason}`)).toBe(true);
      expect(service.requests).toHaveLength(1);
    },
  );

  it('a single view whose body is not JSON is retried, then fails with a retriable invalid_response', async () => {
    const { api, service } = await setup((_req, res) => sendJson(res, 200, JSON.stringify(record(recordId(1))).slice(0, 40)));
    const error = await rejectionOf(api.getRecord('deals', recordId(1)));
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ code: 'invalid_response', disposition: 'retriable' });
    expect(service.requests).toHaveLength(3);
  });

  it.each([
    ['a 400 whose envelope says not_found', 400, JSON.stringify(errorBody('not_found', 'レコードが見つかりません'))],
    ['a 500 whose envelope says not_found', 500, JSON.stringify(errorBody('not_found', 'レコードが見つかりません'))],
    ['a 200 whose body is the envelope of not_found', 200, JSON.stringify(errorBody('not_found', 'レコードが見つかりません'))],
  ])('a single view answered with %s throws not_found without retrying', async (_label, status, body) => {
    const { api, service } = await setup((_req, res) => res.writeHead(status, { 'content-type': 'text/plain' }).end(body));
    for (const get of [
      () => api.getMeetingLog(recordId(1)),
      () => api.getRecord('contacts', recordId(1)),
      () => api.getUser(recordId(1)),
    ]) {
      const error = await rejectionOf(get());
      expect(error).toBeInstanceOf(SalesApiError);
      expect(error).toMatchObject({ code: 'not_found', status, disposition: 'fatal' });
    }
    expect(service.requests).toHaveLength(3);
  });

  it.each([
    ['a bare 404 without an envelope', ''],
    ['a 404 with an HTML body', '<html>Not Found</html>'],
  ])('a single view answered with %s is no word of the service: http_404, never not_found, and not retried', async (_label, body) => {
    const { api, service } = await setup((_req, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end(body));
    for (const get of [() => api.getMeetingLog(recordId(1)), () => api.getRecord('contacts', recordId(1))]) {
      const error = await rejectionOf(get());
      expect(error).toBeInstanceOf(SalesApiError);
      expect(error).toMatchObject({ code: 'http_404', status: 404, disposition: 'fatal' });
      expect((error as Error).message).toMatch(/without the service's error envelope.*SALES_API_BASE_URL.*nothing was taken as deleted/);
    }
    expect(service.requests).toHaveLength(2);
  });

  it('lists property definitions with the server date, options defaulting to []', async () => {
    const { api, service } = await setup((_req, res) =>
      sendJson(
        res,
        200,
        {
          results: [{ api_name: 'name', display_name: '商談名', property_type: 'text', is_core: true, is_required_on_create: true }],
        },
        { date: 'Thu, 02 May 2024 00:00:00 GMT' },
      ),
    );
    const { definitions, serverDate } = await api.listProperties('deals');
    expect(service.requests[0]!.path).toBe('/v1/deals/properties/');
    expect(definitions).toEqual([
      { api_name: 'name', display_name: '商談名', property_type: 'text', is_core: true, is_required_on_create: true, options: [] },
    ]);
    expect(serverDate).toBe('2024-05-02T00:00:00Z');
  });

  const definition = (apiName: string) => ({
    api_name: apiName,
    display_name: apiName,
    property_type: 'text',
    is_core: false,
    is_required_on_create: false,
  });

  it("follows paging.next of a property definitions listing to its last page, the server date the first answer's", async () => {
    const pages: Record<string, { names: string[]; next: string | null; date: string }> = {
      '': { names: ['a1', 'a2'], next: 'p2', date: 'Thu, 02 May 2024 00:00:00 GMT' },
      p2: { names: ['a3'], next: 'p3', date: 'Thu, 02 May 2024 00:00:01 GMT' },
      p3: { names: ['a4'], next: null, date: 'Thu, 02 May 2024 00:00:02 GMT' },
    };
    const { api, service } = await setup((req, res) => {
      const page = pages[req.query.get('after') ?? '']!;
      sendJson(res, 200, listBody(page.names.map(definition), page.next), { date: page.date });
    });
    const { definitions, serverDate } = await api.listProperties('companies');
    expect(definitions.map((d) => d.api_name)).toEqual(['a1', 'a2', 'a3', 'a4']);
    expect(serverDate).toBe('2024-05-02T00:00:00Z');
    expect(service.requests.map((r) => [r.path, r.query.get('after')])).toEqual([
      ['/v1/companies/properties/', null],
      ['/v1/companies/properties/', 'p2'],
      ['/v1/companies/properties/', 'p3'],
    ]);
  });

  it.each([
    ['a bare list', [definition('a1'), definition('a2')]],
    ['a list under another name', { data: [definition('a1'), definition('a2')] }],
  ])("reads property definitions given as %s (the spec shows only deals' shape)", async (_shape, body) => {
    const { api } = await setup((_req, res) => sendJson(res, 200, body));
    expect((await api.listProperties('contacts')).definitions.map((d) => d.api_name)).toEqual(['a1', 'a2']);
  });

  it('lists property definitions again from the first page, once, when the service refuses a cursor on the way', async () => {
    let refusals = 0;
    const { api, service, lines } = await setup((req, res) => {
      const after = req.query.get('after');
      if (after === null) return sendJson(res, 200, listBody([definition('a1')], `p2-${refusals}`));
      if (after === 'p2-0') {
        refusals += 1;
        return sendJson(res, 400, errorBody('invalid_request', 'カーソルが不正です。'));
      }
      return sendJson(res, 200, listBody([definition('a2')], null));
    });
    expect((await api.listProperties('deals')).definitions.map((d) => d.api_name)).toEqual(['a1', 'a2']);
    expect(service.requests.map((r) => r.query.get('after'))).toEqual([null, 'p2-0', null, 'p2-1']);
    expect(lines.join('\n')).toMatch(/refused a cursor of the property definitions listing/);
  });

  it('fails a property definitions listing that sends its cursors round in circles', async () => {
    const { api } = await setup((_req, res) => sendJson(res, 200, listBody([definition('a1')], 'again')));
    const error = await rejectionOf(api.listProperties('deals'));
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect((error as Error).message).toMatch(/loop detected in pagination/);
  });
});

describe('retries', () => {
  it('retries a 5xx and succeeds, taking a limiter token for every attempt', async () => {
    const { api, service, limiter, lines } = await setup(
      sequence(
        (_req, res) => sendJson(res, 503, errorBody('internal_error', '一時的なエラー')),
        (_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>'),
        (_req, res) => sendJson(res, 200, listBody([record(recordId(1))], null)),
      ),
    );
    const page = await api.listPage('deals');
    expect(page.results).toHaveLength(1);
    expect(service.requests).toHaveLength(3);
    expect(limiter.acquired).toEqual([FINGERPRINT, FINGERPRINT, FINGERPRINT]);
    expect(api.stats()).toMatchObject({ requests: 3, retries: 2, rateLimited: 0 });
    const warns = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40);
    expect(warns.map((w) => w.reason)).toEqual(['status 503', 'status 502']);
    // With one key the logger's binding names it: each attempt line carries it once, not twice.
    const attempts = lines.filter((l) => l.includes('"msg":"sales api attempt"'));
    expect(attempts).toHaveLength(3);
    for (const line of attempts) expect(line.split('"keyFingerprint"')).toHaveLength(2);
  });

  it('gives up on a persistent 5xx with the retriable service error after limit + 1 attempts', async () => {
    const { api, service } = await setup((_req, res) => sendJson(res, 500, errorBody('internal_error', '障害')));
    const error = await rejectionOf(api.listPage('deals'));
    expect(error).toBeInstanceOf(SalesApiError);
    expect(error).toMatchObject({ code: 'internal_error', status: 500, disposition: 'retriable', serviceMessage: '障害' });
    expect(service.requests).toHaveLength(3);
  });

  it('gives up on a persistent 200 carrying the internal_error envelope with the retriable service error, not a malformed answer', async () => {
    const { api, service } = await setup((_req, res) => sendJson(res, 200, errorBody('internal_error', '障害')));
    const error = await rejectionOf(api.listPage('deals'));
    expect(error).toBeInstanceOf(SalesApiError);
    expect(error).toMatchObject({ code: 'internal_error', status: 200, disposition: 'retriable', serviceMessage: '障害' });
    expect(service.requests).toHaveLength(3);
  });

  it('retries a POST search like a GET, sending the body each time', async () => {
    const request = {
      filter_groups: [{ conditions: [{ field: 'deal_id', operator: 'equals' as const, value: recordId(2) }] }],
      page: 1,
      page_size: 100,
    };
    const { api, service } = await setup(
      sequence(
        (_req, res) => sendJson(res, 500, errorBody('internal_error', '障害')),
        (_req, res) => sendJson(res, 200, listBody([record(recordId(1))], null)),
      ),
    );
    const page = await api.search('meeting-logs', request);
    expect(page.results[0]!.id).toBe(recordId(1));
    expect(service.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/meeting-logs/search/',
      'POST /v1/meeting-logs/search/',
    ]);
    for (const req of service.requests) expect(JSON.parse(req.body)).toEqual(request);
  });

  it('retries a connection reset', async () => {
    const { api, service } = await setup(
      sequence(
        (_req, res) => res.socket?.destroy(),
        (_req, res) => sendJson(res, 200, listBody([], null)),
      ),
    );
    await expect(api.listPage('deals')).resolves.toMatchObject({ results: [] });
    expect(service.requests).toHaveLength(2);
  });

  it('waits out a 429 for Retry-After seconds and pauses the limiter for the whole key', async () => {
    const { api, service, limiter } = await setup(
      sequence(
        (_req, res) => sendJson(res, 429, errorBody('rate_limited', '制限超過'), { 'retry-after': '1' }),
        (_req, res) => sendJson(res, 200, listBody([], null)),
      ),
      { retry: { ...FAST_RETRY, limit: 0 } }, // a 429 does not spend the retry limit
    );
    const started = Date.now();
    await api.listPage('deals');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(limiter.paused).toEqual([{ keyId: FINGERPRINT, ms: 1000 }]);
    expect(service.requests).toHaveLength(2);
    expect(api.stats()).toMatchObject({ requests: 2, retries: 1, rateLimited: 1 });
  });

  it.each([503, 403])(
    'reads rate_limited under status %i as a 429: waits out its Retry-After with the key paused, spending no retry',
    async (status) => {
      const { api, service, limiter } = await setup(
        sequence(
          (_req, res) => sendJson(res, status, errorBody('rate_limited', '制限超過'), { 'retry-after': '1' }),
          (_req, res) => sendJson(res, 200, listBody([], null)),
        ),
        { retry: { ...FAST_RETRY, limit: 0 } },
      );
      const started = Date.now();
      await api.listPage('deals');
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(limiter.paused).toEqual([{ keyId: FINGERPRINT, ms: 1000 }]);
      expect(service.requests).toHaveLength(2);
      expect(api.stats()).toMatchObject({ requests: 2, rateLimited: 1 });
    },
  );

  it('fails at once with a one-line rate_limited saying how long Retry-After asked, without pausing the key that long', async () => {
    const { api, service, limiter } = await setup((_req, res) =>
      sendJson(res, 429, errorBody('rate_limited', '制限超過'), { 'retry-after': '3600' }),
    );
    const started = Date.now();
    const error = await rejectionOf(api.listPage('deals'));
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(error).toBeInstanceOf(RateLimitWaitError);
    expect(error).toMatchObject({ code: 'rate_limited', disposition: 'retriable', source: 'Retry-After', maxRetryAfterMs: 5_000 });
    expect((error as RateLimitWaitError).waitMs).toBeGreaterThan(3_590_000);
    const { message } = error as Error;
    expect(message).not.toContain('\n');
    expect(message).toMatch(
      /^GET \/v1\/deals\/: the service asked key sk_…[0-9a-f]{8} to wait 1 h \(Retry-After, on 429 GET \/v1\/deals\/\)/,
    );
    expect(message).toContain('(SALES_API_MAX_WAIT)');
    expect(message).toContain('the next run resumes from its checkpoint');
    expect(service.requests).toHaveLength(1);
    // A pause of an hour would hold every other request of the process: the key is set aside instead.
    expect(limiter.paused).toEqual([]);
    // The next request on that key fails the same way without being sent.
    expect(await rejectionOf(api.listPage('companies'))).toMatchObject({ code: 'rate_limited', path: '/v1/companies/' });
    expect(service.requests).toHaveLength(1);
  });

  it('answers a 429 with Retry-After: 0 with the backoff, and pauses the whole key for it (never for 0 ms)', async () => {
    const { api, service, limiter } = await setup(
      sequence(
        (_req, res) => sendJson(res, 429, errorBody('rate_limited', '制限超過'), { 'retry-after': '0' }),
        (_req, res) => sendJson(res, 200, listBody([], null)),
      ),
      { retry: { ...FAST_RETRY, baseDelayMs: 200, maxDelayMs: 1_000 } },
    );
    const started = Date.now();
    await api.listPage('deals');
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(service.requests).toHaveLength(2);
    expect(limiter.paused).toHaveLength(1);
    expect(limiter.paused[0]!.ms).toBeGreaterThanOrEqual(100);
  });

  it('returns a page answered with X-RateLimit-Remaining 0 and a far reset, then fails the next request at once without sending it', async () => {
    const { api, service, limiter } = await setup((_req, res) =>
      sendJson(res, 200, listBody([record(recordId(1))], null), {
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 86_400),
      }),
    );
    expect((await api.listPage('deals')).results).toHaveLength(1);
    // The limiter hears that the window is empty, but not the reset a day off: it would pause the key for a day.
    expect(limiter.observed[0]!.observation).toMatchObject({ remaining: 0, resetAt: undefined });
    const started = Date.now();
    const error = await rejectionOf(api.listPage('companies'));
    expect(Date.now() - started).toBeLessThan(500);
    expect(error).toBeInstanceOf(RateLimitWaitError);
    expect(error).toMatchObject({ code: 'rate_limited', source: 'X-RateLimit-Reset', path: '/v1/companies/' });
    expect((error as Error).message).toContain('to wait 24 h (X-RateLimit-Remaining 0 until X-RateLimit-Reset, on 200 GET /v1/deals/)');
    expect(service.requests).toHaveLength(1);
  });

  it("reads an HTTP-date Retry-After against the server's Date header, not the local clock", async () => {
    const serverNow = Date.now() - 30 * 60_000;
    const { api, limiter } = await setup(
      sequence(
        (_req, res) =>
          sendJson(res, 429, errorBody('rate_limited', '制限超過'), {
            date: new Date(serverNow).toUTCString(),
            'retry-after': new Date(serverNow + 2_000).toUTCString(),
          }),
        (_req, res) => sendJson(res, 200, listBody([], null)),
      ),
    );
    await api.listPage('deals');
    // Read against the local clock, that date lies 30 minutes in the past: no wait at all.
    expect(limiter.paused[0]!.ms).toBeGreaterThanOrEqual(1_000);
    expect(limiter.paused[0]!.ms).toBeLessThanOrEqual(3_000);
  });

  it('retries a truncated JSON body, then fails with a retriable invalid_response', async () => {
    const { api, service } = await setup((_req, res) => sendJson(res, 200, `{"results":[${JSON.stringify(record(recordId(1)))},{"id":"R0`));
    const error = await rejectionOf(api.listPage('deals'));
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ code: 'invalid_response', disposition: 'retriable' });
    expect((error as Error).message).toContain('GET /v1/deals/');
    expect((error as Error).message).toContain('not JSON');
    expect(service.requests).toHaveLength(3);
  });

  it('retries a page whose envelope breaks the spec, then fails with a fatal invalid_response naming the field', async () => {
    const { api, service } = await setup((_req, res) => sendJson(res, 200, brokenEnvelope([record(recordId(1))], 'c2')));
    const error = await rejectionOf(api.listPage('deals'));
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ code: 'invalid_response', disposition: 'fatal', detail: expect.stringMatching(/^paging\.next\.link: /) });
    expect((error as Error).message).toContain('GET /v1/deals/');
    expect((error as Error).message).toContain('paging.next.link');
    expect(service.requests).toHaveLength(3);
  });

  it('fails the page when results is not an array, using nothing of it', async () => {
    const { api, service } = await setup((_req, res) =>
      sendJson(res, 200, { results: { 0: record(recordId(1)) }, paging: { next: null } }),
    );
    const error = await rejectionOf(api.listPage('deals'));
    expect(error).toMatchObject({ code: 'invalid_response', detail: expect.stringMatching(/^results: /) });
    expect(service.requests).toHaveLength(3);
  });

  it('stops at a timeout after retries with a timeout error', async () => {
    const { api, service } = await setup(() => undefined /* never answers */, { timeoutMs: 100 });
    const error = await rejectionOf(api.listPage('deals'));
    expect(error).toBeInstanceOf(RequestTimeoutError);
    expect(error).toMatchObject({ code: 'timeout', disposition: 'retriable', timeoutMs: 100 });
    expect(service.requests).toHaveLength(3);
  });
});

describe('fatal answers', () => {
  it('maps 401 to unauthorized without retrying', async () => {
    const { api, service } = await setup((_req, res) => sendJson(res, 401, errorBody('unauthorized', '認証に失敗しました')));
    const error = await rejectionOf(api.listPage('deals'));
    expect(error).toBeInstanceOf(SalesApiError);
    expect(error).toMatchObject({
      code: 'unauthorized',
      status: 401,
      disposition: 'fatal',
      serviceMessage: '認証に失敗しました',
      method: 'GET',
      path: '/v1/deals/',
    });
    expect((error as Error).message).toContain(FINGERPRINT);
    expect((error as Error).message).toContain('SALES_API_KEY');
    expect(service.requests).toHaveLength(1);
    expect(api.stats()).toMatchObject({ requests: 1, retries: 0 });
  });

  it.each([
    [403, 'forbidden', 'role is too low'],
    [404, 'not_found', 'deleted'],
    [400, 'invalid_request', 'bad request'],
  ])('maps %i %s to a fatal error without retrying', async (status, code, phrase) => {
    const { api, service } = await setup((_req, res) => sendJson(res, status, errorBody(code, 'エラー')));
    const error = await rejectionOf(api.getRecord('deals', recordId(1)));
    expect(error).toMatchObject({ code, status, disposition: 'fatal' });
    expect((error as Error).message).toContain(phrase);
    expect(service.requests).toHaveLength(1);
  });

  it('lists the field errors of a rejected search', async () => {
    const fields = [{ name: 'page', code: 'out_of_range', message: '上限を超えています' }];
    const { api } = await setup((_req, res) => sendJson(res, 400, errorBody('validation_error', '入力が不正です', fields)));
    const error = await rejectionOf(api.search('deals', { page: 101, page_size: 100 }));
    expect(error).toMatchObject({ code: 'validation_error', fields, path: '/v1/deals/search/', method: 'POST' });
    expect((error as Error).message).toContain('page (out_of_range: "上限を超えています")');
  });
});

describe('connection failures', () => {
  it('maps ECONNREFUSED after retries to service_unreachable naming the host', async () => {
    const port = await freePort();
    const limiter = recordingLimiter();
    const api = createSalesApi({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: TEST_KEY,
      limiter,
      logger: capturedLogger().logger,
      retry: FAST_RETRY,
    });
    const error = await rejectionOf(api.listPage('deals'));
    expect(error).toBeInstanceOf(ServiceUnreachableError);
    expect(error).toMatchObject({ code: 'service_unreachable', networkCode: 'ECONNREFUSED', disposition: 'retriable' });
    expect((error as Error).message).toContain(`127.0.0.1:${port}`);
    expect((error as Error).message).toContain('SALES_API_BASE_URL');
    expect(limiter.acquired).toHaveLength(3);
  });
});

describe('rate-limit headers', () => {
  it('hands X-RateLimit-* of every answer, errors included, to limiter.observe (the reset as sent, without a Date header)', async () => {
    const { api, limiter } = await setup(
      sequence(
        (_req, res) => {
          res.sendDate = false; // node:http adds a Date header unless told not to
          sendJson(res, 503, errorBody('internal_error', '障害'), { 'x-ratelimit-remaining': '5' });
        },
        (_req, res) => {
          res.sendDate = false;
          sendJson(res, 200, listBody([], null), { 'x-ratelimit-remaining': '4' });
        },
      ),
    );
    await api.listPage('deals');
    expect(limiter.observed).toEqual([
      { keyId: FINGERPRINT, observation: { limit: 1000, remaining: 5, resetAt: 1714555860 } },
      { keyId: FINGERPRINT, observation: { limit: 1000, remaining: 4, resetAt: 1714555860 } },
    ]);
  });

  it.each([
    ['30 minutes ahead of', 30],
    ['30 minutes behind', -30],
  ])('moves X-RateLimit-Reset onto the local clock by the Date header of a server clock %s ours', async (_label, minutes) => {
    const { api, limiter } = await setup((_req, res) => {
      const serverNow = Date.now() + minutes * 60_000;
      sendJson(res, 200, listBody([], null), {
        date: new Date(serverNow).toUTCString(),
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(Math.floor(serverNow / 1000) + 3),
      });
    });
    await api.listPage('deals');
    const { resetAt } = limiter.observed[0]!.observation;
    const waitMs = resetAt! * 1000 - Date.now();
    // 3 s on the server's clock, give or take the second the Date header drops: never 30 minutes more or less.
    expect(waitMs).toBeGreaterThan(1_500);
    expect(waitMs).toBeLessThanOrEqual(4_000);
  });

  it('counts the time spent waiting for tokens as throttledMs', async () => {
    const { api } = await setup((_req, res) => sendJson(res, 200, listBody([], null)), {
      limiter: recordingLimiter(25),
    });
    await api.listPage('deals');
    await api.listPage('deals');
    expect(api.stats().throttledMs).toBe(50);
  });
});

describe('abort', () => {
  it('stops waiting for a retry promptly with the signal reason', async () => {
    const { api } = await setup((_req, res) => sendJson(res, 503, errorBody('internal_error', '障害')), {
      retry: { limit: 5, baseDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const pending = rejectionOf(api.listPage('deals', { signal: controller.signal }));
    setTimeout(() => controller.abort(reason), 100);
    const started = Date.now();
    expect(await pending).toBe(reason);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('aborts a request in flight with the signal reason', async () => {
    const { api } = await setup(() => undefined);
    const controller = new AbortController();
    const reason = new Error('cancelled by operator');
    const pending = rejectionOf(api.getRecord('deals', recordId(1), controller.signal));
    setTimeout(() => controller.abort(reason), 50);
    expect(await pending).toBe(reason);
  });

  it('rejects with the reason of an already aborted signal without sending', async () => {
    const { api, service } = await setup((_req, res) => sendJson(res, 200, listBody([], null)));
    const reason = new Error('already stopped');
    const error = await rejectionOf(api.listPage('deals', { signal: AbortSignal.abort(reason) }));
    expect(error).toBe(reason);
    expect(service.requests).toHaveLength(0);
  });
});

describe('peekNextCursor', () => {
  it('reads paging.next.after of an unvalidated body, and null for anything that is not a non-empty string', () => {
    expect(peekNextCursor({ results: 'anything', paging: { next: { after: 'c2', link: '' } } })).toBe('c2');
    for (const body of [
      null,
      'text',
      [],
      {},
      { paging: null },
      { paging: { next: null } },
      { paging: { next: { after: '' } } },
      { paging: { next: { after: 7 } } },
    ]) {
      expect(peekNextCursor(body)).toBeNull();
    }
  });
});

describe('peekNextCursorInText', () => {
  const peek = (text: string) => peekNextCursorInText(Buffer.from(text));

  it('reads paging.next.after from the text of a list body, whatever comes before it in next', () => {
    expect(peek(JSON.stringify({ results: [{ id: 'x' }], paging: { next: { after: 'c2', link: 'l' } } }))).toBe('c2');
    expect(peek('{"results":[],"paging" : { "next" : { "link" : "l?after=x", "after" : "c\\/3\\"" } }}')).toBe('c/3"');
    expect(peek(JSON.stringify({ paging: { next: { after: 'first' } }, results: [] }))).toBe('first');
  });

  it('finds nothing in a paging written inside a string, an empty cursor, the last page, or another shape', () => {
    for (const body of [
      JSON.stringify({ results: [{ note: '"paging":{"next":{"after":"inside"}}' }], paging: { next: null } }),
      JSON.stringify({ results: [], paging: { next: { after: '' } } }),
      JSON.stringify({ results: [], paging: { next: { after: 7 } } }),
      JSON.stringify({ results: [], paging: { next: { link: { nested: true }, after: 'c2' } } }),
      JSON.stringify({ results: [] }),
      '',
    ]) {
      expect(peek(body)).toBeNull();
    }
  });
});
