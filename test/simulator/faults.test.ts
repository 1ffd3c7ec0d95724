import { describe, expect, test } from 'vitest';
import { call, DEFAULT_KEYS, useSimulators } from './helpers.js';
import { createSimulator } from '../../src/simulator/index.js';

const start = useSimulators();

describe('faults', () => {
  test('failNext error answers 5xx internal_error for the next n requests only', async () => {
    const sim = await start();
    sim.admin.failNext(2, 'error503');
    for (let i = 0; i < 2; i++) {
      const reply = await call(sim, 'GET', '/v1/deals/');
      expect(reply.status).toBe(503);
      expect(reply.body.error.code).toBe('internal_error');
    }
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(200);
    expect(sim.admin.stats().faults).toEqual({ error503: 2 });
  });

  test('failNext with a path prefix faults only matching requests', async () => {
    const sim = await start();
    sim.admin.failNext(1, 'error', '/v1/companies/');
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(200);
    expect([500, 502, 503]).toContain((await call(sim, 'GET', '/v1/companies/')).status);
    expect((await call(sim, 'GET', '/v1/companies/')).status).toBe(200);
  });

  test('a reset destroys the socket without a response', async () => {
    const sim = await start();
    sim.admin.failNext(1, 'reset');
    await expect(fetch(`${sim.url}/v1/deals/`, { headers: { Authorization: `Bearer ${DEFAULT_KEYS.read}` } })).rejects.toThrow();
  });

  test('malformed answers 200 with truncated JSON', async () => {
    const sim = await start();
    sim.admin.failNext(1, 'malformed');
    const res = await fetch(`${sim.url}/v1/deals/`, { headers: { Authorization: `Bearer ${DEFAULT_KEYS.read}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const text = await res.text();
    expect(() => JSON.parse(text)).toThrow();
  });

  test('html answers 502 with an HTML body', async () => {
    const sim = await start();
    sim.admin.failNext(1, 'html');
    const res = await fetch(`${sim.url}/v1/deals/`, { headers: { Authorization: `Bearer ${DEFAULT_KEYS.read}` } });
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await res.text()).toMatch(/<html>/);
  });

  test('a scripted forbidden fault answers 403 with the forbidden envelope on the matching path only', async () => {
    const sim = await start();
    sim.admin.failNext(1, 'forbidden', '/v1/meeting-logs/');
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(200);
    const reply = await call(sim, 'GET', '/v1/meeting-logs/');
    expect(reply.status).toBe(403);
    expect(reply.body.error.code).toBe('forbidden');
    expect(sim.admin.stats().faults).toEqual({ forbidden: 1 });
  });

  test('a spurious 429 carries Retry-After: 1 and the rate_limited envelope', async () => {
    const sim = await start();
    sim.admin.failNext(1, 'rateLimit');
    const reply = await call(sim, 'GET', '/v1/deals/');
    expect(reply.status).toBe(429);
    expect(reply.headers.get('retry-after')).toBe('1');
    expect(reply.body.error.code).toBe('rate_limited');
  });

  test('a spurious 429 takes Retry-After, Remaining and Reset from the fault settings: Retry-After 0, a window spent until tomorrow', async () => {
    const t = Date.UTC(2026, 0, 1, 0, 0, 0, 250);
    const sim = await start({ now: () => t, clock: { dateSkewMs: -30 * 60_000 } });
    sim.admin.setFaults({ rateLimitRetryAfterSeconds: 0, rateLimitResetSeconds: 86_400 });
    sim.admin.failNext(1, 'rateLimit');
    const reply = await call(sim, 'GET', '/v1/deals/');
    expect(reply.status).toBe(429);
    expect(reply.headers.get('retry-after')).toBe('0');
    expect(reply.headers.get('x-ratelimit-remaining')).toBe('0');
    // On the service's clock (the Date header's), a day after its current second.
    const serverSecond = Math.ceil((t - 30 * 60_000) / 1000);
    expect(reply.headers.get('x-ratelimit-reset')).toBe(String(serverSecond + 86_400));
    expect(Date.parse(reply.headers.get('date')!)).toBe(Math.floor((t - 30 * 60_000) / 1000) * 1000);

    sim.admin.setFaults({ rateLimitRetryAfterSeconds: 0, rateLimitRemaining: 900 });
    sim.admin.failNext(1, 'rateLimit');
    const gateway = await call(sim, 'GET', '/v1/deals/');
    expect([gateway.headers.get('retry-after'), gateway.headers.get('x-ratelimit-remaining')]).toEqual(['0', '900']);
    expect(gateway.headers.get('x-ratelimit-reset')).toBe(String(serverSecond));
  });

  test('the spurious 429 knobs take whole numbers of at least 0, over HTTP too', async () => {
    const sim = await start();
    for (const bad of [{ rateLimitRetryAfterSeconds: -1 }, { rateLimitRemaining: 1.5 }, { rateLimitResetSeconds: '60' }]) {
      expect(() => sim.admin.setFaults(bad as never), JSON.stringify(bad)).toThrow(/whole number of at least 0/);
      const res = await fetch(`${sim.url}/_admin/faults`, {
        method: 'PUT',
        body: JSON.stringify(bad),
        headers: { 'Content-Type': 'application/json' },
      });
      expect(res.status).toBe(400);
    }
  });

  test('a timeout holds the request until the client gives up', async () => {
    const sim = await start();
    sim.admin.failNext(1, 'timeout');
    const began = Date.now();
    await expect(
      fetch(`${sim.url}/v1/deals/`, { headers: { Authorization: `Bearer ${DEFAULT_KEYS.read}` }, signal: AbortSignal.timeout(300) }),
    ).rejects.toThrow();
    expect(Date.now() - began).toBeGreaterThanOrEqual(250);
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(200);
  });

  test('close() returns promptly while a timeout fault holds a request and keep-alive sockets are open', async () => {
    const sim = createSimulator({ size: { deals: 5, companies: 5, contacts: 5, meetingLogs: 5, contactActivities: 5, users: 2 } });
    await sim.listen(0);
    await call(sim, 'GET', '/v1/deals/'); // leaves a keep-alive socket
    sim.admin.failNext(1, 'timeout');
    const held = fetch(`${sim.url}/v1/deals/`, { headers: { Authorization: `Bearer ${DEFAULT_KEYS.read}` } }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 50));
    const began = Date.now();
    await sim.close();
    expect(Date.now() - began).toBeLessThan(1_000);
    expect(await held).toBeInstanceOf(Error);
  });

  test('latency delays answers by about latencyMs', async () => {
    const sim = await start({ faults: { latencyMs: 150 } });
    const began = Date.now();
    expect((await call(sim, 'GET', '/v1/users/')).status).toBe(200);
    expect(Date.now() - began).toBeGreaterThanOrEqual(140);
  });

  test('a faulted create never reaches the handler and creates nothing', async () => {
    const sim = await start();
    const before = sim.admin.truth().records.companies.length;
    for (const kind of ['error', 'reset', 'malformed', 'html', 'rateLimit'] as const) {
      sim.admin.failNext(1, kind);
      await call(sim, 'POST', '/v1/companies/', { key: DEFAULT_KEYS.write, body: { properties: { name: 'x' } } }).catch(() => null);
    }
    expect(sim.admin.truth().records.companies.length).toBe(before);
  });

  test('random fault rates are drawn from a seeded PRNG: same seed, same sequence', async () => {
    const run = async (): Promise<number[]> => {
      const sim = await start({ faults: { errorRate: 0.3, rateLimitRate: 0.2, htmlErrorRate: 0.1, seed: 42 } });
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) statuses.push((await call(sim, 'GET', '/v1/users/')).status);
      return statuses;
    };
    const a = await run();
    const b = await run();
    expect(a).toEqual(b);
    expect(a.filter((s) => s === 200).length).toBeGreaterThan(5);
    expect(a.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(a.filter((s) => s >= 500).length).toBeGreaterThan(0);
  });

  test('clearFaults stops random faults', async () => {
    const sim = await start({ faults: { errorRate: 1 } });
    expect((await call(sim, 'GET', '/v1/users/')).status).toBeGreaterThanOrEqual(500);
    sim.admin.clearFaults();
    expect((await call(sim, 'GET', '/v1/users/')).status).toBe(200);
  });

  test('the admin surface is never faulted', async () => {
    const sim = await start({ faults: { errorRate: 1 } });
    expect((await fetch(`${sim.url}/_admin/truth`)).status).toBe(200);
  });
});
