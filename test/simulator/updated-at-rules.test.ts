import { describe, expect, test } from 'vitest';
import { call, DEFAULT_KEYS, micros, useSimulators } from './helpers.js';

const start = useSimulators();
const write = DEFAULT_KEYS.write;

function find(
  sim: Awaited<ReturnType<ReturnType<typeof useSimulators>>>,
  resource: 'deals' | 'companies' | 'contacts' | 'meeting-logs',
  id: string,
) {
  return sim.admin.truth().records[resource].find((r) => r.id === id)!;
}

describe('updated_at rules', () => {
  test('a real change to a core field moves updated_at forward', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[0]!;
    const reply = await call(sim, 'PATCH', `/v1/deals/${deal.id}/`, {
      key: write,
      body: { properties: { amount: (Number(deal.properties['amount']) || 0) + 1 } },
    });
    expect(micros(reply.body.updated_at)).toBeGreaterThan(micros(deal.updated_at));
    expect(reply.body.created_at).toBe(deal.created_at);
  });

  test('a real change to a custom property moves updated_at', async () => {
    const sim = await start();
    const company = sim.admin.truth().records.companies[3]!;
    const reply = await call(sim, 'PATCH', `/v1/companies/${company.id}/`, {
      key: write,
      body: { properties: { cN3bT6uW: `memo ${company.properties['cN3bT6uW']}` } },
    });
    expect(micros(reply.body.updated_at)).toBeGreaterThan(micros(company.updated_at));
  });

  test('saving the same values again does not move updated_at', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[5]!;
    // Everything the API showed, written back as an external sync would (read-only fields left out).
    const { win_probability: _w, activity_count: _a, last_activity_at: _l, ...echo } = deal.properties;
    const reply = await call(sim, 'PATCH', `/v1/deals/${deal.id}/`, { key: write, body: { properties: echo } });
    expect(reply.status).toBe(200);
    expect(reply.body.updated_at).toBe(deal.updated_at);
    expect(find(sim, 'deals', deal.id).updated_at).toBe(deal.updated_at);
  });

  test('the same instant written with another offset is the same value', async () => {
    const sim = await start();
    const log = sim.admin.truth().records['meeting-logs'][0]!;
    const date = new Date(Number(micros(log.properties['meeting_date'] as string) / 1000n));
    const us = String(micros(log.properties['meeting_date'] as string) % 1000n).padStart(3, '0');
    const jst = new Date(date.getTime() + 9 * 3600_000).toISOString().slice(0, 23) + us + '+09:00';
    const reply = await call(sim, 'PATCH', `/v1/meeting-logs/${log.id}/`, { key: write, body: { properties: { meeting_date: jst } } });
    expect(reply.body.updated_at).toBe(log.updated_at);
  });

  test('clearing a value that was never set is not a change', async () => {
    const sim = await start();
    const deal = sim.admin.createRecord('deals', { name: 'x' });
    const reply = await call(sim, 'PATCH', `/v1/deals/${deal.id}/`, { key: write, body: { properties: { dK3mP9xQ: null, amount: null } } });
    expect(reply.body.updated_at).toBe(deal.updated_at);
  });

  test('a link change (PATCH or admin) does not move updated_at, though the value changes', async () => {
    const sim = await start();
    const truth = sim.admin.truth();
    const contact = truth.records.contacts[0]!;
    const other = truth.records.companies.find((c) => c.id !== contact.properties['account_id'])!;
    const reply = await call(sim, 'PATCH', `/v1/contacts/${contact.id}/`, { key: write, body: { properties: { account_id: other.id } } });
    expect(reply.body.properties['account_id']).toBe(other.id);
    expect(reply.body.updated_at).toBe(contact.updated_at);

    const log = truth.records['meeting-logs'][0]!;
    const deal = truth.records.deals.find((d) => d.id !== log.properties['deal_id'])!;
    const moved = sim.admin.changeLink('meeting-logs', log.id, 'deal_id', deal.id);
    expect(moved.properties['deal_id']).toBe(deal.id);
    expect(moved.updated_at).toBe(log.updated_at);
    const owner = truth.users.find((u) => u.id !== truth.records.deals[0]!.properties['owner_id'])!;
    expect(sim.admin.changeLink('deals', truth.records.deals[0]!.id, 'owner_id', owner.id).updated_at).toBe(
      truth.records.deals[0]!.updated_at,
    );
  });

  test('a link change together with a real change moves updated_at', async () => {
    const sim = await start();
    const truth = sim.admin.truth();
    const contact = truth.records.contacts[0]!;
    const other = truth.records.companies.find((c) => c.id !== contact.properties['account_id'])!;
    const reply = await call(sim, 'PATCH', `/v1/contacts/${contact.id}/`, {
      key: write,
      body: { properties: { account_id: other.id, title: `${contact.properties['title']}!` } },
    });
    expect(micros(reply.body.updated_at)).toBeGreaterThan(micros(contact.updated_at));
  });

  test('the prediction batch changes predicted values without moving updated_at', async () => {
    const sim = await start();
    const before = sim.admin.truth();
    const result = sim.admin.runPredictionBatch();
    expect(result.deals + result.companies).toBeGreaterThan(0);
    const after = sim.admin.truth();
    let changed = 0;
    for (const resource of ['deals', 'companies'] as const) {
      const field = resource === 'deals' ? 'win_probability' : 'health_score';
      for (const record of after.records[resource]) {
        const old = before.records[resource].find((r) => r.id === record.id)!;
        expect(record.updated_at).toBe(old.updated_at);
        if (record.properties[field] !== old.properties[field]) changed += 1;
      }
    }
    expect(changed).toBeGreaterThan(0);
  });

  test("recording a meeting log moves the parent deal's activity_count and updated_at", async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[2]!;
    const { activity, parent } = sim.admin.recordActivity('meeting-logs', deal.id);
    expect(activity.properties['deal_id']).toBe(deal.id);
    expect(parent.properties['activity_count']).toBe(Number(deal.properties['activity_count']) + 1);
    expect(micros(parent.updated_at)).toBeGreaterThan(micros(deal.updated_at));
    expect(micros(parent.updated_at)).toBeGreaterThan(micros(activity.created_at));
  });

  test('creating a meeting log through the public API moves the parent deal too', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[4]!;
    await call(sim, 'POST', '/v1/meeting-logs/', { key: write, body: { properties: { deal_id: deal.id, meeting_name: 'x' } } });
    const after = find(sim, 'deals', deal.id);
    expect(micros(after.updated_at)).toBeGreaterThan(micros(deal.updated_at));
    expect(after.properties['activity_count']).toBe(Number(deal.properties['activity_count']) + 1);
  });

  test('recording a contact activity moves the parent contact', async () => {
    const sim = await start();
    const contact = sim.admin.truth().records.contacts[1]!;
    const { parent } = sim.admin.recordActivity('contact-activities', contact.id, { subject: '件名' });
    expect(micros(parent.updated_at)).toBeGreaterThan(micros(contact.updated_at));
    // and the parent comes back through updated_after from the old watermark
    const since = await call(sim, 'GET', `/v1/contacts/?updated_after=${encodeURIComponent(contact.updated_at)}&page_size=200`);
    expect(since.body.results.some((r: any) => r.id === contact.id)).toBe(true);
  });

  test("summaries appear and change without moving the meeting log's updated_at", async () => {
    const sim = await start();
    const log = sim.admin.truth().records['meeting-logs'].find((r) => !sim.admin.truth().summaries[r.id])!;
    const pending = sim.admin.generateSummaries(log.id);
    expect(pending.length).toBeGreaterThan(0);
    expect(pending.every((s) => s.status === 'pending')).toBe(true);
    const done = sim.admin.generateSummaries(log.id);
    expect(done.every((s) => s.status === 'completed')).toBe(true);
    sim.admin.setSummaries(log.id, [{ summary_type: 'overview', result_type: 'text', text: '手動' }]);
    const view = await call(sim, 'GET', `/v1/meeting-logs/${log.id}/`);
    expect(view.body.summaries).toMatchObject([{ summary_type: 'overview', text: '手動', selections: [], status: 'completed' }]);
    expect(view.body.updated_at).toBe(log.updated_at);
  });

  test('every change gets a distinct, increasing updated_at even within one millisecond', async () => {
    const frozen = Date.UTC(2026, 0, 1);
    const sim = await start({ now: () => frozen });
    const stamps: bigint[] = [];
    for (let i = 0; i < 5; i++) stamps.push(micros(sim.admin.createRecord('companies', { name: `c${i}` }).updated_at));
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]! > stamps[i - 1]!).toBe(true);
  });
});

describe('wholeSecondStamps', () => {
  test('changes made within one second share their updated_at; a later second stamps later; the default never ties', async () => {
    let now = Date.UTC(2026, 0, 1, 12, 0, 0, 100);
    for (const wholeSecondStamps of [true, false]) {
      const sim = await start({ wholeSecondStamps, now: () => now });
      const [a, b] = sim.admin.truth().records.deals;
      const first = sim.admin.updateRecord('deals', a!.id, { amount: 1 }).updated_at;
      now += 500;
      const second = sim.admin.updateRecord('deals', b!.id, { amount: 2 }).updated_at;
      now += 1_000;
      const third = sim.admin.updateRecord('deals', a!.id, { amount: 3 }).updated_at;
      if (wholeSecondStamps) {
        expect(micros(second)).toBe(micros(first));
        expect(micros(first) % 1_000_000n).toBe(0n);
      } else expect(micros(second)).toBeGreaterThan(micros(first));
      expect(micros(third)).toBeGreaterThan(micros(second));
    }
  });
});
