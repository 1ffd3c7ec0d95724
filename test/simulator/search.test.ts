import { describe, expect, test } from 'vitest';
import type { Simulator } from '../../src/simulator/index.js';
import { call, useSimulators } from './helpers.js';

const start = useSimulators();

async function search(sim: Simulator, resource: string, body: unknown) {
  return call(sim, 'POST', `/v1/${resource}/search/`, { body });
}

async function ids(sim: Simulator, resource: string, conditions: unknown[]): Promise<string[]> {
  const reply = await search(sim, resource, { filter_groups: [{ conditions }], page_size: 200 });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.results.map((r: any) => r.id).sort();
}

function expected(
  sim: Simulator,
  resource: 'deals' | 'companies' | 'contacts' | 'meeting-logs',
  keep: (p: Record<string, any>) => boolean,
): string[] {
  return sim.admin
    .truth()
    .records[resource].filter((r) => keep(r.properties))
    .map((r) => r.id)
    .sort();
}

function expectFieldError(reply: { status: number; body: any }, name: string): void {
  expect(reply.status).toBe(400);
  expect(reply.body.error.code).toBe('validation_error');
  expect(reply.body.error.fields.map((f: any) => f.name)).toContain(name);
}

describe('search', () => {
  test('an empty body returns all records, 100 per page by default, with paging', async () => {
    const sim = await start({ size: { deals: 130 } });
    const first = await search(sim, 'deals', {});
    expect(first.status).toBe(200);
    expect(first.body.results).toHaveLength(100);
    expect(first.body.paging.next).toEqual({ after: '2', link: `${sim.url}/v1/deals/search/` });
    const second = await search(sim, 'deals', { page: 2 });
    expect(second.body.results).toHaveLength(30);
    expect(second.body.paging.next).toBeNull();
  });

  test('text contains and equals are case-insensitive; not_contains and not_equals negate', async () => {
    const sim = await start();
    const company = sim.admin.createRecord('companies', { name: 'Acme Widgets KK' });
    expect(await ids(sim, 'companies', [{ field: 'name', operator: 'contains', value: 'acme WIDGETS' }])).toContain(company.id);
    expect(await ids(sim, 'companies', [{ field: 'name', operator: 'equals', value: 'ACME widgets kk' }])).toEqual([company.id]);
    expect(await ids(sim, 'companies', [{ field: 'name', operator: 'not_equals', value: 'acme widgets kk' }])).not.toContain(company.id);
    expect(await ids(sim, 'companies', [{ field: 'name', operator: 'not_contains', value: 'widgets' }])).not.toContain(company.id);
  });

  test('is_empty matches records with no stored value at all, and explicit nulls', async () => {
    const sim = await start();
    const got = await ids(sim, 'deals', [{ field: 'region01', operator: 'is_empty' }]);
    const want = expected(sim, 'deals', (p) => p['region01'] === undefined || p['region01'] === null || p['region01'] === '');
    expect(got).toEqual(want);
    expect(want.length).toBeGreaterThan(0);
    const notEmpty = await ids(sim, 'deals', [{ field: 'region01', operator: 'is_not_empty' }]);
    expect(notEmpty.length + got.length).toBe(60);
  });

  test('number operators compare numerically, range is inclusive and is_null matches missing values', async () => {
    const sim = await start();
    const amounts = sim.admin
      .truth()
      .records.deals.map((d) => d.properties['amount'])
      .filter((a): a is number => typeof a === 'number')
      .sort((a, b) => a - b);
    const mid = amounts[Math.floor(amounts.length / 2)]!;
    expect(await ids(sim, 'deals', [{ field: 'amount', operator: 'gte', value: mid }])).toEqual(
      expected(sim, 'deals', (p) => typeof p['amount'] === 'number' && p['amount'] >= mid),
    );
    expect(await ids(sim, 'deals', [{ field: 'amount', operator: 'lt', value: mid }])).toEqual(
      expected(sim, 'deals', (p) => typeof p['amount'] === 'number' && p['amount'] < mid),
    );
    expect(await ids(sim, 'deals', [{ field: 'amount', operator: 'eq', value: mid }])).toEqual(
      expected(sim, 'deals', (p) => p['amount'] === mid),
    );
    expect(await ids(sim, 'deals', [{ field: 'amount', operator: 'range', value: [amounts[0], mid] }])).toEqual(
      expected(sim, 'deals', (p) => typeof p['amount'] === 'number' && p['amount'] <= mid),
    );
    expect(await ids(sim, 'deals', [{ field: 'dK3mP9xQ', operator: 'is_null' }])).toEqual(
      expected(sim, 'deals', (p) => p['dK3mP9xQ'] == null),
    );
  });

  test('select matches the internal value exactly, never the label', async () => {
    const sim = await start();
    const won = await ids(sim, 'deals', [{ field: 'stage', operator: 'equals', value: 'stg_won' }]);
    expect(won).toEqual(expected(sim, 'deals', (p) => p['stage'] === 'stg_won'));
    expect(won.length).toBeGreaterThan(0);
    expect(await ids(sim, 'deals', [{ field: 'stage', operator: 'equals', value: '受注' }])).toEqual([]);
    expect(await ids(sim, 'deals', [{ field: 'stage', operator: 'equals', value: 'STG_WON' }])).toEqual([]);
    expect(await ids(sim, 'deals', [{ field: 'stage', operator: 'in', value: ['stg_won', 'stg_lost'] }])).toEqual(
      expected(sim, 'deals', (p) => p['stage'] === 'stg_won' || p['stage'] === 'stg_lost'),
    );
    expect(await ids(sim, 'deals', [{ field: 'Region01', operator: 'not_in', value: ['reg_kanto'] }])).toEqual(
      expected(sim, 'deals', (p) => p['Region01'] !== 'reg_kanto'),
    );
  });

  test('date operators work on dates and datetimes, including date-only values against datetimes', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals.find((d) => d.properties['close_date'])!;
    const day = deal.properties['close_date'] as string;
    expect(await ids(sim, 'deals', [{ field: 'close_date', operator: 'date_eq', value: day }])).toEqual(
      expected(sim, 'deals', (p) => p['close_date'] === day),
    );
    expect(await ids(sim, 'deals', [{ field: 'close_date', operator: 'date_after', value: day }])).toEqual(
      expected(sim, 'deals', (p) => p['close_date'] != null && p['close_date'] > day),
    );
    expect(await ids(sim, 'deals', [{ field: 'close_date', operator: 'date_on_or_before', value: day }])).toEqual(
      expected(sim, 'deals', (p) => p['close_date'] != null && p['close_date'] <= day),
    );
    const created = sim.admin.createRecord('meeting-logs', { deal_id: deal.id, meeting_date: '2030-05-05T23:30:00+09:00' });
    // 2030-05-05T23:30+09:00 is 2030-05-05T14:30Z: on 2030-05-05 in UTC
    expect(await ids(sim, 'meeting-logs', [{ field: 'meeting_date', operator: 'date_eq', value: '2030-05-05' }])).toEqual([created.id]);
    expect(
      await ids(sim, 'meeting-logs', [{ field: 'meeting_date', operator: 'date_range', value: ['2030-05-05T14:30:00Z', '2030-12-31'] }]),
    ).toEqual([created.id]);
    expect(await ids(sim, 'meeting-logs', [{ field: 'meeting_date', operator: 'date_after', value: '2030-05-05T14:30:00Z' }])).toEqual([]);
  });

  test('boolean eq and ne', async () => {
    const sim = await start();
    expect(await ids(sim, 'deals', [{ field: 'dB4hJ6sU', operator: 'eq', value: true }])).toEqual(
      expected(sim, 'deals', (p) => p['dB4hJ6sU'] === true),
    );
    expect(await ids(sim, 'deals', [{ field: 'dB4hJ6sU', operator: 'ne', value: true }])).toEqual(
      expected(sim, 'deals', (p) => p['dB4hJ6sU'] !== true),
    );
  });

  test('conditions in a group are ANDed and groups are ORed', async () => {
    const sim = await start();
    const reply = await search(sim, 'deals', {
      filter_groups: [
        {
          name: 'won big',
          conditions: [
            { field: 'stage', operator: 'equals', value: 'stg_won' },
            { field: 'amount', operator: 'gte', value: 10_000_000 },
          ],
        },
        { conditions: [{ field: 'stage', operator: 'equals', value: 'stg_lost' }] },
      ],
      page_size: 200,
    });
    expect(reply.body.results.map((r: any) => r.id).sort()).toEqual(
      expected(sim, 'deals', (p) => (p['stage'] === 'stg_won' && p['amount'] >= 10_000_000) || p['stage'] === 'stg_lost'),
    );
  });

  test('meeting logs of one deal are found with deal_id equals', async () => {
    const sim = await start();
    const log = sim.admin.truth().records['meeting-logs'][0]!;
    const dealId = log.properties['deal_id'] as string;
    expect(await ids(sim, 'meeting-logs', [{ field: 'deal_id', operator: 'equals', value: dealId }])).toEqual(
      expected(sim, 'meeting-logs', (p) => p['deal_id'] === dealId),
    );
  });

  test('sort_by with sort_order sorts by several keys', async () => {
    const sim = await start();
    const reply = await search(sim, 'deals', { sort_by: ['stage', 'amount'], sort_order: ['asc', 'desc'], page_size: 200 });
    const rows = reply.body.results.map((r: any) => r.properties);
    for (let i = 1; i < rows.length; i++) {
      const [a, b] = [rows[i - 1], rows[i]];
      expect(a.stage <= b.stage).toBe(true);
      if (a.stage === b.stage && a.amount !== null && b.amount !== null) expect(a.amount >= b.amount).toBe(true);
    }
  });

  test('more than 10 filter groups is 400', async () => {
    const sim = await start();
    const group = { conditions: [{ field: 'name', operator: 'contains', value: 'a' }] };
    expect((await search(sim, 'deals', { filter_groups: Array(10).fill(group) })).status).toBe(200);
    expectFieldError(await search(sim, 'deals', { filter_groups: Array(11).fill(group) }), 'filter_groups');
  });

  test('a group without conditions is 400', async () => {
    const sim = await start();
    expectFieldError(await search(sim, 'deals', { filter_groups: [{ conditions: [] }] }), 'filter_groups[0].conditions');
  });

  test('page * page_size above 10,000 is 400; exactly 10,000 is allowed', async () => {
    const sim = await start();
    expect((await search(sim, 'deals', { page: 50, page_size: 200 })).status).toBe(200);
    expectFieldError(await search(sim, 'deals', { page: 51, page_size: 200 }), 'page');
    expectFieldError(await search(sim, 'deals', { page: 101 }), 'page');
  });

  test('page and page_size bounds are enforced', async () => {
    const sim = await start();
    expectFieldError(await search(sim, 'deals', { page: 0 }), 'page');
    expectFieldError(await search(sim, 'deals', { page_size: 0 }), 'page_size');
    expectFieldError(await search(sim, 'deals', { page_size: 201 }), 'page_size');
  });

  test('an operator not available for the property type is 400', async () => {
    const sim = await start();
    const cases: Array<[string, string]> = [
      ['name', 'gt'],
      ['amount', 'contains'],
      ['stage', 'contains'],
      ['close_date', 'eq'],
      ['dB4hJ6sU', 'equals'],
      ['name', 'is_null'],
      ['amount', 'bogus'],
    ];
    for (const [field, operator] of cases) {
      const reply = await search(sim, 'deals', { filter_groups: [{ conditions: [{ field, operator, value: 1 }] }] });
      expectFieldError(reply, 'filter_groups[0].conditions[0].operator');
    }
  });

  test('value shapes per operator kind are checked', async () => {
    const sim = await start();
    const bad = [
      { field: 'amount', operator: 'range', value: 5 },
      { field: 'stage', operator: 'in', value: 'stg_won' },
      { field: 'name', operator: 'contains' },
      { field: 'amount', operator: 'is_null', value: 3 },
      { field: 'amount', operator: 'gt', value: 'many' },
      { field: 'close_date', operator: 'date_eq', value: 'tomorrow' },
    ];
    for (const condition of bad) {
      const reply = await search(sim, 'deals', { filter_groups: [{ conditions: [condition] }] });
      expectFieldError(reply, 'filter_groups[0].conditions[0].value');
    }
  });

  test('an unknown field and mismatched sort_by/sort_order lengths are 400', async () => {
    const sim = await start();
    expectFieldError(
      await search(sim, 'deals', { filter_groups: [{ conditions: [{ field: 'nope', operator: 'equals', value: 'x' }] }] }),
      'filter_groups[0].conditions[0].field',
    );
    expectFieldError(await search(sim, 'deals', { sort_by: ['name', 'amount'], sort_order: ['asc'] }), 'sort_order');
  });

  test('contacts search rejects custom properties but supports core fields and account.name', async () => {
    const sim = await start();
    expectFieldError(
      await search(sim, 'contacts', { filter_groups: [{ conditions: [{ field: 'kW3eR9tY', operator: 'contains', value: 'a' }] }] }),
      'filter_groups[0].conditions[0].field',
    );
    const truth = sim.admin.truth();
    const contact = truth.records.contacts.find((c) => c.properties['account_id'])!;
    const company = truth.records.companies.find((c) => c.id === contact.properties['account_id'])!;
    const got = await ids(sim, 'contacts', [{ field: 'account.name', operator: 'equals', value: company.properties['name'] }]);
    const companyIds = new Set(truth.records.companies.filter((c) => c.properties['name'] === company.properties['name']).map((c) => c.id));
    expect(got).toEqual(expected(sim, 'contacts', (p) => companyIds.has(p['account_id'])));
    expect(got).toContain(contact.id);
    expect((await ids(sim, 'contacts', [{ field: 'last_name', operator: 'is_not_empty' }])).length).toBeGreaterThan(0);
  });
});
