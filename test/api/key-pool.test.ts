import { afterEach, describe, expect, it } from 'vitest';
import { createSalesApi, keyFingerprint, SalesApiError } from '../../src/api/index.js';
import type { RateLimiter } from '../../src/core/rate-limiter.js';
import { loadConfig, requireService } from '../../src/config.js';
import { TokenBucketLimiter } from '../../src/limiter/index.js';
import { createSimulator, type FaultSettings, type Simulator } from '../../src/simulator/index.js';
import {
  TEST_KEY,
  capturedLogger,
  errorBody,
  listBody,
  record,
  recordId,
  rejectionOf,
  sendJson,
  startFakeService,
  type FakeService,
  type Handler,
} from './fake-service.js';

const KEY_A = TEST_KEY;
const KEY_B = `sk_${'Zy9xW8vU7t'.repeat(5)}`;
const KEY_C = `sk_${'Qq1Rr2Ss3T'.repeat(5)}`;

const services: FakeService[] = [];
const sims: Simulator[] = [];
afterEach(async () => {
  await Promise.all([...services.splice(0), ...sims.splice(0)].map((s) => s.close()));
});

/** Round-robins over whatever keys it is offered, and records each offer. */
function rotatingLimiter(): RateLimiter & { offered: string[][]; poolKeys: Array<number | undefined> } {
  let turn = 0;
  const offered: string[][] = [];
  const poolKeys: Array<number | undefined> = [];
  return {
    offered,
    poolKeys,
    async acquire(keyIds, options) {
      offered.push([...keyIds]);
      poolKeys.push(options?.poolKeys);
      return { keyId: keyIds[turn++ % keyIds.length]!, waitedMs: 0 };
    },
    observe: () => undefined,
    pause: () => undefined,
  };
}

const bearer = (key: string) => `Bearer ${key}`;

async function serve(handler: Handler): Promise<FakeService> {
  const service = await startFakeService(handler);
  services.push(service);
  return service;
}

const ok: Handler = (_req, res) => sendJson(res, 200, listBody([record(recordId(1))], null));

describe('a pool of API keys', () => {
  it('offers every key to the limiter and sends each request on the key it granted', async () => {
    const service = await serve(ok);
    const limiter = rotatingLimiter();
    const { logger } = capturedLogger();
    const api = createSalesApi({ baseUrl: service.baseUrl, apiKeys: [KEY_A, KEY_B], limiter, logger });
    for (let i = 0; i < 4; i++) await api.listPage('deals');

    expect(limiter.offered[0]).toEqual([keyFingerprint(KEY_A), keyFingerprint(KEY_B)]);
    expect(service.requests.map((r) => r.headers.authorization)).toEqual([bearer(KEY_A), bearer(KEY_B), bearer(KEY_A), bearer(KEY_B)]);
    expect(api.keyFingerprint).toBe(keyFingerprint(KEY_A));
    expect(api.keyFingerprints).toEqual([keyFingerprint(KEY_A), keyFingerprint(KEY_B)]);
    expect(api.stats()).toMatchObject({ requests: 4, retries: 0 });
  });

  it('drops a key answering 401 (logged by fingerprint only) and retries the request on another', async () => {
    const service = await serve((req, res) =>
      req.headers.authorization === bearer(KEY_B) ? sendJson(res, 401, errorBody('unauthorized', 'APIキーが無効です。')) : ok(req, res),
    );
    const limiter = rotatingLimiter();
    const { logger, lines } = capturedLogger();
    const api = createSalesApi({ baseUrl: service.baseUrl, apiKeys: [KEY_B, KEY_A, KEY_C], limiter, logger });

    const page = await api.listPage('deals');
    expect(page.results).toHaveLength(1);
    for (let i = 0; i < 3; i++) await api.listPage('deals');

    const warning = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 40);
    expect(warning).toMatchObject({ keyFingerprint: keyFingerprint(KEY_B), keysLeft: 2 });
    expect(lines.join('\n')).not.toContain(KEY_B);
    // Only the two good keys are offered once the bad one answered 401.
    expect(limiter.offered.at(-1)).toEqual([keyFingerprint(KEY_A), keyFingerprint(KEY_C)]);
    expect(service.requests.filter((r) => r.headers.authorization === bearer(KEY_B))).toHaveLength(1);
  });

  it('fails with unauthorized, naming the last key by fingerprint, when every key is rejected', async () => {
    const service = await serve((_req, res) => sendJson(res, 401, errorBody('unauthorized', 'APIキーが無効です。')));
    const { logger } = capturedLogger();
    const api = createSalesApi({ baseUrl: service.baseUrl, apiKeys: [KEY_A, KEY_B], limiter: rotatingLimiter(), logger });
    const error = await rejectionOf(api.listPage('deals'));
    expect(error).toBeInstanceOf(SalesApiError);
    expect(error).toMatchObject({ code: 'unauthorized', disposition: 'fatal' });
    const { message } = error as Error;
    expect(message).toMatch(/sk_…[0-9a-f]{8}/);
    expect(message).not.toContain(KEY_A);
    expect(message).not.toContain(KEY_B);
    expect(service.requests).toHaveLength(2);
  });

  it('sets aside a key told to wait an hour and sends the request again at once on another; fails with rate_limited once every key waits', async () => {
    const service = await serve((req, res) =>
      req.headers.authorization === bearer(KEY_A)
        ? sendJson(res, 429, errorBody('rate_limited', '制限超過'), { 'retry-after': '3600' })
        : ok(req, res),
    );
    const limiter = rotatingLimiter();
    const { logger, lines } = capturedLogger();
    const api = createSalesApi({ baseUrl: service.baseUrl, apiKeys: [KEY_A, KEY_B], limiter, logger });

    expect((await api.listPage('deals')).results).toHaveLength(1);
    expect(service.requests.map((r) => r.headers.authorization)).toEqual([bearer(KEY_A), bearer(KEY_B)]);
    expect(limiter.offered.at(-1)).toEqual([keyFingerprint(KEY_B)]);
    const warning = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 40);
    expect(warning).toMatchObject({ keyFingerprint: keyFingerprint(KEY_A), source: 'Retry-After' });

    // The organization's budget spent: every key answers the same.
    const spent = await serve((_req, res) => sendJson(res, 429, errorBody('rate_limited', '制限超過'), { 'retry-after': '3600' }));
    const pool = createSalesApi({ baseUrl: spent.baseUrl, apiKeys: [KEY_A, KEY_C], limiter: rotatingLimiter(), logger });
    const error = await rejectionOf(pool.listPage('deals'));
    expect(error).toMatchObject({ code: 'rate_limited', source: 'Retry-After' });
    expect((error as Error).message).toContain('the service asked every key; the first to free up, sk_…');
    expect(spent.requests).toHaveLength(2);
  });

  it("pauses every key of the pool on a 429 the key's own window does not explain (the organization's limit), only that key otherwise", async () => {
    let refusal: Record<string, string> | null = { 'retry-after': '1', 'x-ratelimit-remaining': '700' };
    const service = await serve((_req, res) => {
      const headers = refusal;
      refusal = null;
      return headers ? sendJson(res, 429, errorBody('rate_limited', '制限超過'), headers) : ok(_req, res);
    });
    const paused: string[] = [];
    const limiter = { ...rotatingLimiter(), pause: (keyId: string) => void paused.push(keyId) };
    const { logger } = capturedLogger();
    const api = createSalesApi({ baseUrl: service.baseUrl, apiKeys: [KEY_A, KEY_B], limiter, logger });
    expect((await api.listPage('deals')).results).toHaveLength(1);
    expect(paused.sort()).toEqual([keyFingerprint(KEY_A), keyFingerprint(KEY_B)].sort());

    // The key's own window spent: that key alone.
    paused.length = 0;
    refusal = { 'retry-after': '1', 'x-ratelimit-remaining': '0' };
    expect((await api.listPage('deals')).results).toHaveLength(1);
    expect(paused).toHaveLength(1);
  });

  it('checks the format of every key before any request, naming its position and never its value', () => {
    const { logger } = capturedLogger();
    const bad = 'sk_short';
    let caught: unknown;
    try {
      createSalesApi({ baseUrl: 'http://127.0.0.1:1', apiKeys: [KEY_A, bad], limiter: rotatingLimiter(), logger });
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: 'invalid_api_key_format' });
    expect((caught as Error).message).toMatch(/^key 2 of 2: /);
    expect((caught as Error).message).not.toContain(bad);
  });

  it('spreads real traffic over two keys through the in-process limiter', async () => {
    const service = await serve(ok);
    const { logger } = capturedLogger();
    const limiter = new TokenBucketLimiter({ perKeyPerMinute: 60, perOrgPerMinute: 10_000, burst: 5 });
    const api = createSalesApi({ baseUrl: service.baseUrl, apiKeys: [KEY_A, KEY_B], limiter, logger });
    // Ten requests fit in two bursts of five without waiting.
    const started = Date.now();
    await Promise.all(Array.from({ length: 10 }, () => api.listPage('deals')));
    expect(Date.now() - started).toBeLessThan(900);
    const byKey = (key: string) => service.requests.filter((r) => r.headers.authorization === bearer(key)).length;
    expect([byKey(KEY_A), byKey(KEY_B)]).toEqual([5, 5]);
  });
});

describe('a pool of keys over a service that accepts a cursor only on the key it was given to', () => {
  async function boundService(cursorsBoundToKey: boolean | 'forbidden' = true, faults: FaultSettings = {}): Promise<Simulator> {
    const sim = createSimulator({
      seed: 5,
      size: { deals: 650, companies: 1, contacts: 1, meetingLogs: 1, contactActivities: 1, users: 1 },
      keys: [KEY_A, KEY_B, KEY_C].map((key) => ({ key, role: 'read' as const })),
      cursorsBoundToKey,
      faults,
    });
    await sim.listen(0);
    sims.push(sim);
    return sim;
  }

  it.each([
    [true, '400'],
    ['forbidden', '403'],
  ] as const)(
    'learns it from the first refusal (%s: %s) and sends each page on the key its cursor came on: every record, one request more',
    async (bound, status) => {
      const sim = await boundService(bound);
      const { logger, lines } = capturedLogger();
      const api = createSalesApi({ baseUrl: sim.url, apiKeys: [KEY_A, KEY_B, KEY_C], limiter: rotatingLimiter(), logger });
      const ids: string[] = [];
      for (const _walk of [1, 2]) for await (const page of api.listPages('deals')) ids.push(...page.results.map((r) => r.id));
      const truth = sim.admin.truth().records.deals.map((r) => r.id);
      expect(ids.sort()).toEqual([...truth, ...truth].sort());
      // Two walks of four pages: eight answers, and the one refusal that taught the pool.
      const stats = sim.admin.stats();
      expect(stats.byStatus).toEqual({ '200': 8, [status]: 1 });
      expect(api.stats()).toMatchObject({ requests: 9, retries: 1 });
      const warnings = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 40);
      expect(warnings).toHaveLength(1);
      expect(String(warnings[0]!.msg)).toContain('each list page now goes out on the key its cursor came on');
    },
  );

  it("offers a page its cursor's key alone, and tells the limiter the pool the walk spends (a lane's share is of every key)", async () => {
    const sim = await boundService();
    const { logger } = capturedLogger();
    const limiter = rotatingLimiter();
    const api = createSalesApi({ baseUrl: sim.url, apiKeys: [KEY_A, KEY_B, KEY_C], limiter, logger });
    for await (const page of api.listPages('deals')) expect(page.results.length).toBeGreaterThan(0);
    // The first page, the refused second, then the second and the rest on their cursors' keys.
    expect(limiter.offered.map((offer) => offer.length)).toEqual([3, 3, 1, 1, 1]);
    expect(limiter.poolKeys).toEqual([3, 3, 3, 3, 3]);
  });

  it("a page whose cursor's key is told to wait longer than the client waits fails at once with that wait, not sent on another key", async () => {
    const sim = await boundService(true, { rateLimitRetryAfterSeconds: 3600 });
    const { logger } = capturedLogger();
    const api = createSalesApi({ baseUrl: sim.url, apiKeys: [KEY_A, KEY_B, KEY_C], limiter: rotatingLimiter(), logger });
    let pages = 0;
    const walk = async () => {
      for await (const _page of api.listPages('deals')) if (++pages === 2) sim.admin.failNext(1, 'rateLimit', '/v1/deals/');
    };
    const error = await rejectionOf(walk());
    expect(error).toMatchObject({ code: 'rate_limited', context: { keyFingerprint: keyFingerprint(KEY_A) } });
    expect((error as Error).message).toContain("the only one it takes this page's cursor on");
    // The first page, the refusal that taught the pool, the second page, the third's 429: nothing sent to be refused.
    expect(sim.admin.stats().byStatus).toEqual({ '200': 2, '400': 1, '429': 1 });
  });

  it('a new client given a cursor with the key it came on (a checkpoint) walks on from it; without that key, it fails', async () => {
    const sim = await boundService();
    const { logger } = capturedLogger();
    const make = () => createSalesApi({ baseUrl: sim.url, apiKeys: [KEY_A, KEY_B, KEY_C], limiter: rotatingLimiter(), logger });
    const first = await make().listPage('deals');
    const walkOn = async (afterKey: string | null) => {
      const ids: string[] = [];
      const api = make();
      // A new rotating limiter starts with the first key, which gave the cursor: spend it (on a request that names no
      // cursor of deals), so the walk starts on another.
      await api.listProperties('deals');
      for await (const page of api.listPages('deals', { after: first.nextCursor!, afterKey })) ids.push(...page.results.map((r) => r.id));
      return ids;
    };
    expect(await walkOn(keyFingerprint(KEY_A))).toHaveLength(450);
    await expect(walkOn(null)).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('a cursor refused on its own key too (it expired, on a service that binds nothing) teaches nothing: pages go out on any key again', async () => {
    const sim = await boundService(false);
    const { logger } = capturedLogger();
    const limiter = rotatingLimiter();
    const api = createSalesApi({ baseUrl: sim.url, apiKeys: [KEY_A, KEY_B, KEY_C], limiter, logger });
    const first = await api.listPage('deals');
    sim.admin.expireCursors();
    await expect(api.listPage('deals', { after: first.nextCursor! })).rejects.toMatchObject({ code: 'invalid_request' });
    const offeredBefore = limiter.offered.length;
    for await (const page of api.listPages('deals')) expect(page.results.length).toBeGreaterThan(0);
    expect(limiter.offered.slice(offeredBefore).map((offer) => offer.length)).toEqual([3, 3, 3, 3]);
  });

  it("a cursor refused on its own key too fails the request with the service's answer, after one try on that key", async () => {
    const sim = await boundService();
    const { logger } = capturedLogger();
    const api = createSalesApi({ baseUrl: sim.url, apiKeys: [KEY_A, KEY_B, KEY_C], limiter: rotatingLimiter(), logger });
    const first = await api.listPage('deals');
    sim.admin.expireCursors();
    const error = await rejectionOf(api.listPage('deals', { after: first.nextCursor! }));
    expect(error).toMatchObject({ code: 'invalid_request', status: 400 });
    // The first page, the cursor on the next key, then on the key it came on: no more.
    expect(sim.admin.stats().byStatus).toEqual({ '200': 1, '400': 2 });
  });
});

describe('SALES_API_KEY with several keys', () => {
  it('splits a comma-separated list, trimming spaces, first key first', () => {
    const service = requireService(loadConfig({ SALES_API_BASE_URL: 'http://x', SALES_API_KEY: ` ${KEY_A} , ${KEY_B},` }));
    expect(service.apiKeys).toEqual([KEY_A, KEY_B]);
    expect(service.apiKey).toBe(KEY_A);
  });

  it("reads the lanes' shares and rejects a share outside (0, 1]", () => {
    expect(loadConfig({})).toMatchObject({ backfillShare: 0.5, summariesShare: 0.25, redisUrl: null, redisPrefix: 'salesync' });
    expect(loadConfig({ SALESYNC_BACKFILL_SHARE: '0.3', SALESYNC_SUMMARIES_SHARE: '1' })).toMatchObject({
      backfillShare: 0.3,
      summariesShare: 1,
    });
    expect(() => loadConfig({ SALESYNC_BACKFILL_SHARE: '1.5' })).toThrow(/SALESYNC_BACKFILL_SHARE/);
    expect(() => loadConfig({ SALESYNC_SUMMARIES_SHARE: '0' })).toThrow(/SALESYNC_SUMMARIES_SHARE/);
  });
});
