import { describe, expect, test } from 'vitest';
import { call, DEFAULT_KEYS, useSimulators } from './helpers.js';

const start = useSimulators();
const write = DEFAULT_KEYS.write;

function fieldsOf(body: any): Array<{ name: string; code: string }> {
  expect(body.error.code).toBe('validation_error');
  for (const f of body.error.fields) expect(f.message).toEqual(expect.any(String));
  return body.error.fields.map((f: any) => ({ name: f.name, code: f.code }));
}

describe('create', () => {
  test('creating a deal returns the full envelope with id, properties and equal timestamps', async () => {
    const sim = await start();
    const reply = await call(sim, 'POST', '/v1/deals/', {
      key: write,
      body: { properties: { name: '新規商談', amount: 1200000, stage: 'stg_won', close_date: '2025-03-31' } },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.id).toMatch(/^[A-Za-z0-9]{18}$/);
    expect(reply.body.properties).toMatchObject({ name: '新規商談', amount: 1200000, stage: 'stg_won', close_date: '2025-03-31' });
    expect(reply.body.created_at).toBe(reply.body.updated_at);
    expect(reply.body.created_at).toMatch(/\.\d{6}(Z|\+09:00)$/);
    expect(sim.admin.truth().records.deals.some((d) => d.id === reply.body.id)).toBe(true);
  });

  test('a missing required property is validation_error with field code required', async () => {
    const sim = await start();
    const deal = await call(sim, 'POST', '/v1/deals/', { key: write, body: { properties: { amount: 5 } } });
    expect(deal.status).toBe(400);
    expect(fieldsOf(deal.body)).toContainEqual({ name: 'properties.name', code: 'required' });
    const company = await call(sim, 'POST', '/v1/companies/', { key: write, body: { properties: { name: null } } });
    expect(fieldsOf(company.body)).toContainEqual({ name: 'properties.name', code: 'required' });
  });

  test('a contact needs last_name or email; either alone is enough', async () => {
    const sim = await start();
    const none = await call(sim, 'POST', '/v1/contacts/', { key: write, body: { properties: { first_name: '太郎' } } });
    expect(none.status).toBe(400);
    expect(fieldsOf(none.body).map((f) => f.code)).toContain('required');
    for (const properties of [{ last_name: '山田' }, { email: 'taro@example.com' }]) {
      expect((await call(sim, 'POST', '/v1/contacts/', { key: write, body: { properties } })).status).toBe(201);
    }
  });

  test('unknown api_names, wrong types, values outside the options and missing links are reported per field', async () => {
    const sim = await start();
    const reply = await call(sim, 'POST', '/v1/deals/', {
      key: write,
      body: {
        properties: {
          name: 'x',
          nonexistent: 1,
          amount: '100',
          stage: '受注', // the label, not the internal value
          account_id: 'AAAAAAAAAAAAAAAAAA',
          close_date: '2025/01/01',
          dB4hJ6sU: 'yes',
        },
      },
    });
    expect(reply.status).toBe(400);
    expect(fieldsOf(reply.body)).toEqual(
      expect.arrayContaining([
        { name: 'properties.nonexistent', code: 'unknown_property' },
        { name: 'properties.amount', code: 'invalid_type' },
        { name: 'properties.stage', code: 'invalid_value' },
        { name: 'properties.account_id', code: 'not_found' },
        { name: 'properties.close_date', code: 'invalid_value' },
        { name: 'properties.dB4hJ6sU', code: 'invalid_type' },
      ]),
    );
    expect(sim.admin.truth().records.deals).toHaveLength(60); // nothing was created
  });

  test('api_names are case-sensitive: Region01 and region01 are two properties', async () => {
    const sim = await start();
    const props = await call(sim, 'GET', '/v1/deals/properties/');
    const names = props.body.results.map((p: any) => p.api_name);
    expect(names).toContain('Region01');
    expect(names).toContain('region01');
    const reply = await call(sim, 'POST', '/v1/deals/', {
      key: write,
      body: { properties: { name: 'x', Region01: 'reg_kanto', region01: '自由記述' } },
    });
    expect(reply.body.properties).toMatchObject({ Region01: 'reg_kanto', region01: '自由記述' });
    const wrongCase = await call(sim, 'POST', '/v1/deals/', { key: write, body: { properties: { name: 'x', REGION01: 'a' } } });
    expect(fieldsOf(wrongCase.body)).toContainEqual({ name: 'properties.REGION01', code: 'unknown_property' });
  });

  test('predicted and aggregate values are read-only for clients', async () => {
    const sim = await start();
    const reply = await call(sim, 'POST', '/v1/deals/', { key: write, body: { properties: { name: 'x', win_probability: 50 } } });
    expect(fieldsOf(reply.body)).toContainEqual({ name: 'properties.win_probability', code: 'invalid_value' });
  });

  test('a body without properties is a validation_error naming properties', async () => {
    const sim = await start();
    const reply = await call(sim, 'POST', '/v1/companies/', { key: write, body: { name: 'x' } });
    expect(fieldsOf(reply.body)).toEqual([{ name: 'properties', code: 'required' }]);
  });
});

describe('partial update', () => {
  test('PATCH changes only the sent keys and an explicit null clears a value', async () => {
    const sim = await start();
    const deal = sim.admin.createRecord('deals', { name: '元', amount: 100, dK3mP9xQ: 7 });
    const reply = await call(sim, 'PATCH', `/v1/deals/${deal.id}/`, { key: write, body: { properties: { amount: null } } });
    expect(reply.status).toBe(200);
    expect(reply.body.properties).toMatchObject({ name: '元', amount: null, dK3mP9xQ: 7 });
  });

  test('null for a required property in a PATCH is 400', async () => {
    const sim = await start();
    const deal = sim.admin.truth().records.deals[0]!;
    const reply = await call(sim, 'PATCH', `/v1/deals/${deal.id}/`, { key: write, body: { properties: { name: null } } });
    expect(reply.status).toBe(400);
    expect(fieldsOf(reply.body)).toContainEqual({ name: 'properties.name', code: 'required' });
  });

  test('PATCH of an unknown id is 404 and of a malformed id 400', async () => {
    const sim = await start();
    expect((await call(sim, 'PATCH', '/v1/deals/AAAAAAAAAAAAAAAAAA/', { key: write, body: { properties: {} } })).status).toBe(404);
    expect((await call(sim, 'PATCH', '/v1/deals/nope/', { key: write, body: { properties: {} } })).status).toBe(400);
  });
});

describe('property definitions', () => {
  test('each resource lists core and custom definitions with the documented fields', async () => {
    const sim = await start();
    for (const resource of ['deals', 'companies', 'contacts', 'meeting-logs', 'contact-activities']) {
      const reply = await call(sim, 'GET', `/v1/${resource}/properties/`);
      expect(reply.status).toBe(200);
      for (const def of reply.body.results) {
        expect(Object.keys(def).sort()).toEqual(
          ['api_name', 'display_name', 'is_core', 'is_required_on_create', 'options', 'property_type'].sort(),
        );
        if (!def.is_core) expect(def.api_name).toMatch(/^[A-Za-z0-9]{8}$/);
      }
      const types = new Set(reply.body.results.filter((d: any) => !d.is_core).map((d: any) => d.property_type));
      expect(types.has('number') && types.has('boolean') && types.has('select')).toBe(true);
    }
  });

  test('select options carry an internal value distinct from the label', async () => {
    const sim = await start();
    const reply = await call(sim, 'GET', '/v1/deals/properties/');
    const stage = reply.body.results.find((d: any) => d.api_name === 'stage');
    expect(stage.property_type).toBe('select');
    expect(stage.options).toContainEqual({ value: 'stg_won', label: '受注' });
    const types = reply.body.results.map((d: any) => d.property_type);
    expect(types).toEqual(expect.arrayContaining(['text', 'number', 'date', 'datetime', 'boolean', 'select', 'multi_select']));
  });

  test('definition changes made by the admin show in the properties endpoint', async () => {
    const sim = await start();
    const added = sim.admin.addProperty('companies', { display_name: '新項目', property_type: 'text' });
    expect(added.api_name).toMatch(/^[A-Za-z0-9]{8}$/);
    sim.admin.renameProperty('companies', added.api_name, '改名');
    sim.admin.changePropertyType('companies', 'cX4pL7mQ', 'text');
    sim.admin.updatePropertyOptions('companies', 'cR8tN2vB', [{ value: 'tier_s', label: 'Sランク' }]);
    sim.admin.removeProperty('companies', 'cN3bT6uW');
    const defs = (await call(sim, 'GET', '/v1/companies/properties/')).body.results;
    expect(defs.find((d: any) => d.api_name === added.api_name).display_name).toBe('改名');
    expect(defs.find((d: any) => d.api_name === 'cX4pL7mQ').property_type).toBe('text');
    expect(defs.find((d: any) => d.api_name === 'cR8tN2vB').options).toEqual([{ value: 'tier_s', label: 'Sランク' }]);
    expect(defs.some((d: any) => d.api_name === 'cN3bT6uW')).toBe(false);
    const values = sim.admin
      .truth()
      .records.companies.map((c) => c.properties['cX4pL7mQ'])
      .filter((v) => v != null);
    expect(values.every((v) => typeof v === 'string')).toBe(true);
  });
});
