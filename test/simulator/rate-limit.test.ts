import { describe, expect, test } from 'vitest';
import { call, DEFAULT_KEYS, useSimulators } from './helpers.js';

const start = useSimulators();
const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);

function clock() {
  let now = T0;
  return { now: () => now, at: (ms: number) => (now = T0 + ms) };
}

function limitHeaders(reply: { headers: Headers }) {
  return {
    limit: reply.headers.get('x-ratelimit-limit'),
    remaining: reply.headers.get('x-ratelimit-remaining'),
    reset: reply.headers.get('x-ratelimit-reset'),
  };
}

describe('rate limits', () => {
  test('every response to a key carries X-RateLimit-Limit, Remaining and Reset, errors included', async () => {
    const c = clock();
    const sim = await start({ perKeyPerMinute: 5, now: c.now });
    const ok = await call(sim, 'GET', '/v1/deals/');
    expect(limitHeaders(ok)).toEqual({ limit: '5', remaining: '4', reset: String(Math.ceil((T0 + 60_000) / 1000)) });
    const notFound = await call(sim, 'GET', '/v1/nothing/');
    expect(notFound.status).toBe(404);
    expect(limitHeaders(notFound).remaining).toBe('3');
    const forbidden = await call(sim, 'POST', '/v1/deals/', { body: { properties: { name: 'x' } } });
    expect(forbidden.status).toBe(403);
    expect(limitHeaders(forbidden).remaining).toBe('2');
    const unauthorized = await call(sim, 'GET', '/v1/deals/', { key: null });
    expect(unauthorized.status).toBe(401);
    expect(limitHeaders(unauthorized).limit).toBe('5');
  });

  test('over the per-key limit the answer is 429 rate_limited with an integer Retry-After', async () => {
    const c = clock();
    const sim = await start({ perKeyPerMinute: 3, now: c.now });
    for (const ms of [0, 10_000, 20_000]) {
      c.at(ms);
      expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(200);
    }
    c.at(30_000);
    const limited = await call(sim, 'GET', '/v1/deals/');
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(limited.headers.get('retry-after')).toBe('30');
    expect(limitHeaders(limited).remaining).toBe('0');
    expect(sim.admin.stats().rateLimited).toBe(1);
  });

  test('the window slides: a request leaves it exactly 60 s after it was counted', async () => {
    const c = clock();
    const sim = await start({ perKeyPerMinute: 3, now: c.now });
    for (const ms of [0, 1_000, 2_000]) {
      c.at(ms);
      await call(sim, 'GET', '/v1/deals/');
    }
    c.at(59_999);
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(429);
    c.at(60_000);
    const again = await call(sim, 'GET', '/v1/deals/');
    expect(again.status).toBe(200);
    // 1 s, 2 s and 60 s are in the window now; the next slot opens at 61 s
    c.at(60_500);
    const limited = await call(sim, 'GET', '/v1/deals/');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limitHeaders(limited).reset).toBe(String(Math.ceil((T0 + 61_000) / 1000)));
  });

  test('no 60 s span holds more than the limit, whatever the burst pattern', async () => {
    const c = clock();
    const sim = await start({ perKeyPerMinute: 4, now: c.now });
    const accepted: number[] = [];
    for (let ms = 0; ms < 180_000; ms += 7_000) {
      c.at(ms);
      for (let i = 0; i < 3; i++) if ((await call(sim, 'GET', '/v1/users/')).status === 200) accepted.push(ms);
    }
    for (const t of accepted) expect(accepted.filter((u) => u > t - 60_000 && u <= t).length).toBeLessThanOrEqual(4);
    expect(accepted.length).toBeGreaterThan(8);
  });

  test('a 429 does not consume budget', async () => {
    const c = clock();
    const sim = await start({ perKeyPerMinute: 2, now: c.now });
    await call(sim, 'GET', '/v1/deals/');
    await call(sim, 'GET', '/v1/deals/');
    for (let i = 0; i < 5; i++) expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(429);
    c.at(60_000);
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(200);
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(200);
  });

  test('the organization limit counts all keys together', async () => {
    const c = clock();
    const sim = await start({ perKeyPerMinute: 3, perOrgPerMinute: 4, now: c.now });
    for (let i = 0; i < 3; i++) expect((await call(sim, 'GET', '/v1/deals/', { key: DEFAULT_KEYS.read })).status).toBe(200);
    expect((await call(sim, 'GET', '/v1/deals/', { key: DEFAULT_KEYS.write })).status).toBe(200);
    const limited = await call(sim, 'GET', '/v1/deals/', { key: DEFAULT_KEYS.admin });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // the admin key's own window is empty, so its headers say so
    expect(limitHeaders(limited).remaining).toBe('3');
  });

  test('X-RateLimit-Reset is on the service clock: dateSkewMs moves it with the Date header, while the window counts on now', async () => {
    const c = clock();
    const skew = 30 * 60_000;
    const sim = await start({ perKeyPerMinute: 2, now: c.now, clock: { dateSkewMs: skew } });
    const first = await call(sim, 'GET', '/v1/deals/');
    expect(limitHeaders(first).reset).toBe(String(Math.ceil((T0 + skew + 60_000) / 1000)));
    expect(Number(limitHeaders(first).reset) * 1000 - Date.parse(first.headers.get('date')!)).toBe(60_000);
    const unauthorized = await call(sim, 'GET', '/v1/deals/', { key: null });
    expect(limitHeaders(unauthorized).reset).toBe(String(Math.ceil((T0 + skew + 60_000) / 1000)));
    c.at(10_000);
    expect(limitHeaders(await call(sim, 'GET', '/v1/deals/')).remaining).toBe('0');
    // Changing the skew moves no request in or out of the window.
    sim.admin.setClock({ dateSkewMs: -skew });
    c.at(59_999);
    const limited = await call(sim, 'GET', '/v1/deals/');
    expect(limited.status).toBe(429);
    expect(limitHeaders(limited).reset).toBe(String(Math.ceil((T0 - skew + 60_000) / 1000)));
    c.at(60_000);
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(200);
  });

  test('the admin surface is not rate limited', async () => {
    const c = clock();
    const sim = await start({ perKeyPerMinute: 1, perOrgPerMinute: 1, now: c.now });
    for (let i = 0; i < 5; i++) expect((await fetch(`${sim.url}/_admin/stats`)).status).toBe(200);
  });
});
