import { describe, expect, test } from 'vitest';
import { call, DEFAULT_KEYS, useSimulators } from './helpers.js';

const start = useSimulators();

function expectEnvelope(body: any, code: string): void {
  expect(body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) });
  expect(body.error.message).toMatch(/[\u3040-\u30ff\u4e00-\u9fff]/); // Japanese text
  if (code !== 'validation_error') expect(body.error.fields).toBeUndefined();
}

describe('authentication', () => {
  test('a request without a key is 401 unauthorized', async () => {
    const sim = await start();
    const reply = await call(sim, 'GET', '/v1/deals/', { key: null });
    expect(reply.status).toBe(401);
    expectEnvelope(reply.body, 'unauthorized');
  });

  test('an unknown key and a non-Bearer scheme are 401', async () => {
    const sim = await start();
    expect((await call(sim, 'GET', '/v1/deals/', { key: 'sk_' + 'x'.repeat(40) })).status).toBe(401);
    const res = await fetch(`${sim.url}/v1/deals/`, { headers: { Authorization: `Basic ${DEFAULT_KEYS.read}` } });
    expect(res.status).toBe(401);
  });

  test('a revoked key is 401 from then on', async () => {
    const sim = await start();
    const key = 'sk_' + 'R'.repeat(42);
    sim.admin.addKey(key, 'read');
    expect((await call(sim, 'GET', '/v1/deals/', { key })).status).toBe(200);
    sim.admin.revokeKey(key);
    const reply = await call(sim, 'GET', '/v1/deals/', { key });
    expect(reply.status).toBe(401);
    expectEnvelope(reply.body, 'unauthorized');
  });

  test('read and analyst keys may read but not write (403 forbidden)', async () => {
    const sim = await start();
    for (const key of [DEFAULT_KEYS.read, DEFAULT_KEYS.analyst]) {
      expect((await call(sim, 'GET', '/v1/companies/', { key })).status).toBe(200);
      expect((await call(sim, 'POST', '/v1/companies/search/', { key, body: {} })).status).toBe(200);
      const create = await call(sim, 'POST', '/v1/companies/', { key, body: { properties: { name: 'x' } } });
      expect(create.status).toBe(403);
      expectEnvelope(create.body, 'forbidden');
      const id = sim.admin.truth().records.companies[0]!.id;
      expect((await call(sim, 'PATCH', `/v1/companies/${id}/`, { key, body: { properties: {} } })).status).toBe(403);
    }
  });

  test('write and admin keys may read and write', async () => {
    const sim = await start();
    for (const key of [DEFAULT_KEYS.write, DEFAULT_KEYS.admin]) {
      expect((await call(sim, 'GET', '/v1/users/', { key })).status).toBe(200);
      const created = await call(sim, 'POST', '/v1/companies/', { key, body: { properties: { name: '新規' } } });
      expect(created.status).toBe(201);
      expect(created.body.id).toMatch(/^[A-Za-z0-9]{18}$/);
    }
  });

  test('the default keys have the documented format', () => {
    for (const key of Object.values(DEFAULT_KEYS)) expect(key).toMatch(/^sk_[A-Za-z0-9]{40,}$/);
  });
});

describe('routing', () => {
  test('a path without its trailing slash is 404 not_found in the envelope', async () => {
    const sim = await start();
    for (const path of ['/v1/deals', '/v1/users', '/v1/deals/properties', '/v1/deals/search']) {
      const reply = await call(sim, path.endsWith('search') ? 'POST' : 'GET', path, { body: path.endsWith('search') ? {} : undefined });
      expect(reply.status, path).toBe(404);
      expectEnvelope(reply.body, 'not_found');
    }
    const id = sim.admin.truth().records.deals[0]!.id;
    expect((await call(sim, 'GET', `/v1/deals/${id}`)).status).toBe(404);
    expect((await call(sim, 'GET', `/v1/deals/${id}/`)).status).toBe(200);
  });

  test('unknown paths, resources and nested endpoints are 404 not_found', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[0]!.id;
    for (const path of ['/v1/widgets/', '/v2/deals/', '/', `/v1/deals/${deal}/meeting-logs/`, '/v1//deals/']) {
      const reply = await call(sim, 'GET', path);
      expect(reply.status, path).toBe(404);
      expectEnvelope(reply.body, 'not_found');
    }
  });

  test('a malformed record id is 400 and an unknown well-formed id is 404', async () => {
    const sim = await start();
    const bad = await call(sim, 'GET', '/v1/deals/abc123/');
    expect(bad.status).toBe(400);
    expect(['invalid_request', 'validation_error']).toContain(bad.body.error.code);
    const missing = await call(sim, 'GET', '/v1/deals/AAAAAAAAAAAAAAAAAA/');
    expect(missing.status).toBe(404);
    expectEnvelope(missing.body, 'not_found');
    expect((await call(sim, 'GET', '/v1/users/AAAAAAAAAAAAAAAAAA/')).status).toBe(404);
    expect((await call(sim, 'GET', '/v1/users/short/')).status).toBe(400);
  });

  test('every response carries a Date header usable as server time', async () => {
    const sim = await start();
    const reply = await call(sim, 'GET', '/v1/deals/');
    const date = Date.parse(reply.headers.get('date') ?? '');
    expect(Math.abs(date - Date.now())).toBeLessThan(5_000);
  });

  test('a body that is not JSON is 400 invalid_request', async () => {
    const sim = await start();
    const res = await fetch(`${sim.url}/v1/deals/search/`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${DEFAULT_KEYS.read}` },
      body: '{not json',
    });
    expect(res.status).toBe(400);
    expectEnvelope(await res.json(), 'invalid_request');
  });

  test('users are listed and fetched with the user shape', async () => {
    const sim = await start();
    const list = await call(sim, 'GET', '/v1/users/');
    expect(list.body.results).toHaveLength(8);
    const user = list.body.results[0];
    expect(Object.keys(user).sort()).toEqual(['email', 'id', 'is_active', 'name']);
    const one = await call(sim, 'GET', `/v1/users/${user.id}/`);
    expect(one.body).toEqual(user);
  });

  test('the users email filter is exact and case-insensitive, with empty results when nothing matches', async () => {
    const sim = await start();
    const user = sim.admin.addUser({ email: 'Hanako.Yamada@Example.co.jp', name: '山田 花子' });
    const exact = await call(sim, 'GET', `/v1/users/?email=${encodeURIComponent('hanako.yamada@example.CO.JP')}`);
    expect(exact.body.results).toEqual([user]);
    const partial = await call(sim, 'GET', `/v1/users/?email=${encodeURIComponent('hanako.yamada@example')}`);
    expect(partial.status).toBe(200);
    expect(partial.body).toEqual({ results: [], paging: { next: null } });
  });
});
