import { describe, expect, test } from 'vitest';
import { createSimulator } from '../../src/simulator/index.js';
import { call, DEFAULT_KEYS, micros, SMALL, useSimulators } from './helpers.js';

const start = useSimulators();

describe('determinism', () => {
  test('the same seed gives the same truth; another seed gives other data', () => {
    const a = createSimulator({ seed: 7, size: SMALL }).admin.truth();
    const b = createSimulator({ seed: 7, size: SMALL }).admin.truth();
    const c = createSimulator({ seed: 8, size: SMALL }).admin.truth();
    expect(a).toEqual(b);
    expect(c.records.deals.map((d) => d.id)).not.toEqual(a.records.deals.map((d) => d.id));
  });

  test('the same seed and mutation seed give the same changes', () => {
    const now = () => Date.UTC(2026, 0, 1);
    const a = createSimulator({ seed: 3, size: SMALL, now });
    const b = createSimulator({ seed: 3, size: SMALL, now });
    expect(a.admin.mutateRandom(50, 9)).toEqual(b.admin.mutateRandom(50, 9));
    expect(a.admin.truth()).toEqual(b.admin.truth());
  });

  test('default sizes and links: every record links to an existing parent', () => {
    const truth = createSimulator().admin.truth();
    expect(truth.records.deals).toHaveLength(500);
    expect(truth.records.companies).toHaveLength(200);
    expect(truth.records.contacts).toHaveLength(800);
    expect(truth.records['meeting-logs']).toHaveLength(300);
    expect(truth.records['contact-activities']).toHaveLength(400);
    expect(truth.users).toHaveLength(20);
    const has = (list: Array<{ id: string }>) => new Set(list.map((r) => r.id));
    const companies = has(truth.records.companies);
    const deals = has(truth.records.deals);
    const contacts = has(truth.records.contacts);
    const users = has(truth.users);
    for (const d of truth.records.deals) {
      if (d.properties['account_id']) expect(companies.has(d.properties['account_id'] as string)).toBe(true);
      if (d.properties['owner_id']) expect(users.has(d.properties['owner_id'] as string)).toBe(true);
    }
    for (const c of truth.records.contacts)
      if (c.properties['account_id']) expect(companies.has(c.properties['account_id'] as string)).toBe(true);
    for (const l of truth.records['meeting-logs']) expect(deals.has(l.properties['deal_id'] as string)).toBe(true);
    for (const a of truth.records['contact-activities']) expect(contacts.has(a.properties['contact_id'] as string)).toBe(true);
    // aggregates agree with the activities
    const counts = new Map<string, number>();
    for (const l of truth.records['meeting-logs'])
      counts.set(l.properties['deal_id'] as string, (counts.get(l.properties['deal_id'] as string) ?? 0) + 1);
    for (const d of truth.records.deals) expect(d.properties['activity_count']).toBe(counts.get(d.id) ?? 0);
  });

  test('100k records generate in a few seconds', () => {
    const began = performance.now();
    const sim = createSimulator({
      size: { deals: 25_000, companies: 15_000, contacts: 30_000, meetingLogs: 20_000, contactActivities: 10_000, users: 50 },
    });
    // ~1.5 s alone on a 2-core machine; the margin absorbs parallel test files.
    expect(performance.now() - began).toBeLessThan(6_000);
    expect(sim.admin.mutateRandom(3, 1)).toHaveLength(3);
  });
});

describe('admin', () => {
  test('truth matches what the public API returns, timestamp strings included', async () => {
    const sim = await start();
    const truth = sim.admin.truth();
    const list = await call(sim, 'GET', '/v1/companies/?page_size=200');
    expect(list.body.results).toEqual(truth.records.companies);
    const props = await call(sim, 'GET', '/v1/companies/properties/');
    expect(props.body.results).toEqual(truth.properties.companies);
    const users = await call(sim, 'GET', '/v1/users/');
    expect(users.body.results).toEqual(truth.users);
  });

  test('truth is a deep copy', async () => {
    const sim = await start();
    const truth = sim.admin.truth();
    truth.records.deals[0]!.properties['name'] = 'mutated';
    truth.properties.deals[0]!.options.push({ value: 'x', label: 'x' });
    expect(sim.admin.truth().records.deals[0]!.properties['name']).not.toBe('mutated');
    expect(sim.admin.truth().properties.deals[0]!.options).toHaveLength(0);
  });

  test('deleted records vanish from lists, searches and single fetches', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[0]!;
    sim.admin.deleteRecord('deals', deal.id);
    expect((await call(sim, 'GET', `/v1/deals/${deal.id}/`)).status).toBe(404);
    const list = await call(sim, 'GET', '/v1/deals/?page_size=200');
    expect(list.body.results.some((r: any) => r.id === deal.id)).toBe(false);
  });

  test('setUserActive and addUser show through the users endpoint', async () => {
    const sim = await start();
    const user = sim.admin.truth().users[0]!;
    sim.admin.setUserActive(user.id, !user.is_active);
    expect((await call(sim, 'GET', `/v1/users/${user.id}/`)).body.is_active).toBe(!user.is_active);
  });

  test('mutateRandom reports what it did, and only the changes it says moved updated_at did', async () => {
    const sim = await start();
    const before = sim.admin.truth();
    const watermark = before.records.deals
      .concat(before.records.companies, before.records.contacts, before.records['meeting-logs'], before.records['contact-activities'])
      .map((r) => micros(r.updated_at))
      .reduce((a, b) => (a > b ? a : b));
    const report = sim.admin.mutateRandom(80, 5);
    expect(report).toHaveLength(80);
    expect(new Set(report.map((r) => r.kind))).toEqual(
      new Set(['update', 'same-value', 'create', 'activity', 'link', 'summaries', 'delete']),
    );
    const after = sim.admin.truth();
    const deleted = new Set(report.filter((r) => r.kind === 'delete').map((r) => r.id));
    const moved = new Set(report.filter((r) => r.movedUpdatedAt).map((r) => r.id));
    for (const r of report) if (r.parentId) moved.add(r.parentId);
    for (const resource of ['deals', 'companies', 'contacts', 'meeting-logs', 'contact-activities'] as const) {
      for (const record of after.records[resource]) {
        const isNew = micros(record.updated_at) > watermark;
        if (!deleted.has(record.id)) expect(isNew, `${resource} ${record.id}`).toBe(moved.has(record.id));
      }
    }
    expect(report.filter((r) => r.kind === 'same-value').every((r) => !r.movedUpdatedAt)).toBe(true);
  });

  test('the HTTP admin surface drives the same operations', async () => {
    const sim = await start();
    const post = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${sim.url}/_admin/${path}`, {
        method,
        headers: { 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const created = await post('POST', 'records/companies', { properties: { name: 'HTTP社' } });
    expect(created.status).toBe(200);
    const updated = await post('PATCH', `records/companies/${created.body.id}`, { properties: { industry: 'IT' } });
    expect(updated.body.properties.industry).toBe('IT');
    const deal = sim.admin.truth().records.deals[0]!;
    const activity = await post('POST', 'activities/meeting-logs', { parent_id: deal.id });
    expect(activity.body.parent.properties.activity_count).toBe(Number(deal.properties['activity_count']) + 1);
    const link = await post('POST', `records/deals/${deal.id}/link`, { property: 'account_id', id: created.body.id });
    expect(link.body.properties.account_id).toBe(created.body.id);
    expect((await post('POST', 'predictions/run')).body).toEqual({ deals: expect.any(Number), companies: expect.any(Number) });
    const summaries = await post('POST', `summaries/${activity.body.activity.id}/generate`);
    expect(summaries.body.length).toBeGreaterThan(0);
    expect((await post('PUT', `summaries/${activity.body.activity.id}`, { summaries: [] })).body).toEqual([]);
    const prop = await post('POST', 'properties/deals', { api_name: 'newProp1', display_name: '新', property_type: 'number' });
    expect(prop.body.api_name).toBe('newProp1');
    expect((await post('PATCH', 'properties/deals/newProp1', { display_name: '改' })).body.display_name).toBe('改');
    expect((await post('DELETE', 'properties/deals/newProp1')).status).toBe(200);
    const user = await post('POST', 'users', { email: 'x@example.com', name: 'X' });
    expect((await post('PATCH', `users/${user.body.id}`, { is_active: false })).body.is_active).toBe(false);
    const key = 'sk_' + 'H'.repeat(41);
    await post('POST', 'keys', { key, role: 'write' });
    expect((await call(sim, 'GET', '/v1/deals/', { key })).status).toBe(200);
    await post('DELETE', `keys/${key}`);
    expect((await call(sim, 'GET', '/v1/deals/', { key })).status).toBe(401);
    await post('POST', 'faults/next', { count: 1, kind: 'error500' });
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(500);
    await post('PUT', 'faults', { errorRate: 1 });
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBeGreaterThanOrEqual(500);
    await post('DELETE', 'faults');
    expect((await call(sim, 'GET', '/v1/deals/')).status).toBe(200);
    const mutations = await post('POST', 'mutate', { count: 5, seed: 2 });
    expect(mutations.body).toHaveLength(5);
    const stats = await post('GET', 'stats');
    expect(stats.body.byRoute['GET /v1/deals/']).toBeGreaterThan(0);
    expect((await post('GET', 'truth')).body.records.companies.some((c: any) => c.id === created.body.id)).toBe(true);
    const bad = await post('PATCH', `records/companies/${created.body.id}`, { properties: { name: null } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_error');
    expect((await post('GET', 'nothing')).status).toBe(404);
  });

  test('stats count requests per key, status and route', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[0]!;
    await call(sim, 'GET', '/v1/deals/?page_size=10');
    await call(sim, 'GET', '/v1/deals/');
    await call(sim, 'GET', `/v1/deals/${deal.id}/`);
    await call(sim, 'GET', '/v1/deals/', { key: DEFAULT_KEYS.write });
    await call(sim, 'GET', '/v1/deals/', { key: null });
    const stats = sim.admin.stats();
    expect(stats.total).toBe(5);
    expect(stats.byRoute['GET /v1/deals/']).toBe(4);
    expect(stats.byRoute['GET /v1/deals/{id}/']).toBe(1);
    expect(stats.byKey[DEFAULT_KEYS.read]).toEqual({ '200': 3 });
    expect(stats.byKey['-']).toEqual({ '401': 1 });
    expect(stats.byStatus).toEqual({ '200': 4, '401': 1 });
    sim.admin.resetStats();
    expect(sim.admin.stats().total).toBe(0);
  });
});
