/**
 * The client against the simulator over real HTTP, when the service is unkind about rate limits: a 429 with
 * `Retry-After: 0`, a clock half an hour off ours, a window spent until tomorrow, and a base URL pasted with `/v1`.
 * The in-process limiter is the real one, so a pause that is too short or too long shows in the timings.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RateLimitWaitError, createSalesApi, type SalesApi } from '../../src/api/index.js';
import type { RetryOptions } from '../../src/api/types.js';
import { TokenBucketLimiter } from '../../src/limiter/index.js';
import { createSimulator, DEFAULT_KEYS, type Simulator, type SimulatorOptions } from '../../src/simulator/index.js';
import { capturedLogger, rejectionOf } from './fake-service.js';

const SMALL = { deals: 5, companies: 5, contacts: 5, meetingLogs: 5, contactActivities: 5, users: 2 };
const MIN30 = 30 * 60_000;

const running: Simulator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

async function start(options: SimulatorOptions = {}): Promise<Simulator> {
  const sim = createSimulator({ size: SMALL, ...options });
  running.push(sim);
  await sim.listen(0);
  return sim;
}

function client(baseUrl: string, retry: RetryOptions = {}): SalesApi {
  return createSalesApi({
    baseUrl,
    apiKey: DEFAULT_KEYS.read,
    limiter: new TokenBucketLimiter(),
    logger: capturedLogger().logger,
    retry: { baseDelayMs: 50, maxDelayMs: 1_000, ...retry },
  });
}

const timed = async <T>(work: Promise<T>): Promise<{ value: T; ms: number }> => {
  const started = Date.now();
  const value = await work;
  return { value, ms: Date.now() - started };
};

describe('Retry-After: 0', () => {
  it('does not burst: three 429s with Retry-After 0 are answered with a growing backoff, not three requests at once', async () => {
    const sim = await start();
    // A gateway's 429: Retry-After 0 and the key's window not reported empty, so only our own backoff spaces them.
    sim.admin.setFaults({ rateLimitRetryAfterSeconds: 0, rateLimitRemaining: 900 });
    sim.admin.failNext(3, 'rateLimit');
    const api = client(sim.url, { baseDelayMs: 200 });
    const page = api.listPage('deals');
    // Backoffs are in [100, 200] ms, then [200, 400] ms: within 250 ms at most two requests can have gone out.
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(sim.admin.stats().total).toBeLessThanOrEqual(2);
    expect((await page).results.length).toBeGreaterThan(0);
    expect(sim.admin.stats().byStatus).toMatchObject({ 429: 3, 200: 1 });
  });
});

describe('a service clock off ours', () => {
  it('a reset 1 s ahead on a service clock 30 minutes ahead of ours is waited about 2 s, not 30 minutes', async () => {
    const sim = await start({ clock: { dateSkewMs: MIN30 } });
    sim.admin.setFaults({ rateLimitRetryAfterSeconds: 0, rateLimitResetSeconds: 1 });
    sim.admin.failNext(1, 'rateLimit');
    const { value, ms } = await timed(client(sim.url).listPage('deals'));
    expect(value.results.length).toBeGreaterThan(0);
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(5_000);
  });

  it('a reset 1 s ahead on a service clock 30 minutes behind ours is still waited, not taken as long past', async () => {
    const sim = await start({ clock: { dateSkewMs: -MIN30 } });
    sim.admin.setFaults({ rateLimitRetryAfterSeconds: 0, rateLimitResetSeconds: 1 });
    sim.admin.failNext(1, 'rateLimit');
    const { value, ms } = await timed(client(sim.url).listPage('deals'));
    expect(value.results.length).toBeGreaterThan(0);
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(5_000);
  });
});

describe('a wait longer than maxRetryAfterMs', () => {
  it('a 429 with Retry-After 0 and a window spent until tomorrow fails fast with one rate_limited line, and so does the next request, unsent', async () => {
    const sim = await start({ clock: { dateSkewMs: -MIN30 } });
    sim.admin.setFaults({ rateLimitRetryAfterSeconds: 0, rateLimitResetSeconds: 86_400 });
    sim.admin.failNext(1, 'rateLimit');
    const api = client(sim.url);
    const { value: error, ms } = await timed(rejectionOf(api.listPage('deals')));
    expect(ms).toBeLessThan(1_000);
    expect(error).toBeInstanceOf(RateLimitWaitError);
    expect(error).toMatchObject({ code: 'rate_limited', disposition: 'retriable', source: 'X-RateLimit-Reset' });
    const { message } = error as Error;
    expect(message).not.toContain('\n');
    expect(message).toContain('to wait 24 h (X-RateLimit-Remaining 0 until X-RateLimit-Reset, on 429 GET /v1/deals/)');
    expect(message).toContain('longer than the 2 min the client waits by itself (SALES_API_MAX_WAIT)');
    expect(message).toContain('the next run resumes from its checkpoint');
    expect(message).not.toContain(DEFAULT_KEYS.read.slice(3));

    expect(await rejectionOf(api.listPage('companies'))).toMatchObject({ code: 'rate_limited', path: '/v1/companies/' });
    expect(sim.admin.stats().total).toBe(1);
  });

  it('a 200 that spends the window with its reset past maxRetryAfterMs is returned; the next request fails at once, unsent', async () => {
    const sim = await start({ perKeyPerMinute: 2, clock: { dateSkewMs: MIN30 } });
    const api = client(sim.url, { maxRetryAfterMs: 5_000 });
    await api.listPage('deals');
    expect((await api.listPage('deals')).results.length).toBeGreaterThan(0);
    const { value: error, ms } = await timed(rejectionOf(api.listPage('deals')));
    expect(ms).toBeLessThan(500);
    expect(error).toMatchObject({ code: 'rate_limited', source: 'X-RateLimit-Reset' });
    // The window resets about a minute after the first request, on the service's clock: not 31 minutes.
    expect((error as RateLimitWaitError).waitMs).toBeGreaterThan(55_000);
    expect((error as RateLimitWaitError).waitMs).toBeLessThan(62_000);
    expect(sim.admin.stats().total).toBe(2);
  });
});

describe('a base URL pasted with /v1', () => {
  it.each(['/v1', '/v1/'])('works with %s at the end: requests go to /v1/deals/, not /v1/v1/deals/', async (suffix) => {
    const sim = await start();
    const page = await client(`${sim.url}${suffix}`).listPage('deals');
    expect(page.results.length).toBeGreaterThan(0);
    expect(sim.admin.stats().byPath).toEqual({ 'GET /v1/deals/': 1 });
  });
});
