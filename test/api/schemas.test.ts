import { describe, expect, it } from 'vitest';
import { parseBody } from '../../src/api/client.js';
import {
  formatIssuePath,
  isIsoDateTime,
  meetingLogRecordSchema,
  propertyListSchema,
  recordListSchema,
  serviceUserSchema,
} from '../../src/api/schemas.js';
import { listBody, record, recordId } from './fake-service.js';

describe('record list schema', () => {
  it('accepts a page and keeps timestamps exactly as sent', () => {
    const body = listBody([record(recordId(1))], 'cursor-2');
    const parsed = recordListSchema.parse(body);
    expect(parsed.results[0]!.created_at).toBe('2024-05-01T09:30:00.123456+09:00');
    expect(parsed.results[0]!.updated_at).toBe('2024-05-02T00:00:00.000001Z');
    expect(parsed.paging.next).toEqual({ after: 'cursor-2', link: 'http://fake/v1/deals/?after=cursor-2' });
  });

  it('names the bad id by its path: results[3].id', () => {
    const results = [1, 2, 3].map((n) => record(recordId(n)));
    results.push(record('short-id'));
    const outcome = parseBody(JSON.stringify(listBody(results, null)), recordListSchema);
    expect(outcome).toEqual({ ok: false, json: true, detail: 'results[3].id: must match ^[A-Za-z0-9]{18}$' });
  });

  it('rejects an envelope without results or paging', () => {
    expect(recordListSchema.safeParse({ results: [] }).success).toBe(false);
    expect(recordListSchema.safeParse({ paging: { next: null } }).success).toBe(false);
    expect(recordListSchema.safeParse({ results: {}, paging: { next: null } }).success).toBe(false);
    expect(recordListSchema.safeParse({ results: [], paging: { next: { after: 'x' } } }).success).toBe(false);
  });

  it('rejects property values that are objects or arrays', () => {
    const bad = record(recordId(1), { nested: { a: 1 } });
    const outcome = parseBody(JSON.stringify(listBody([bad], null)), recordListSchema);
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && outcome.detail).toMatch(/^results\[0\]\.properties\.nested: /);
  });

  it('rejects properties that are not an object, and numbers that overflowed to Infinity', () => {
    const notObject = { ...record(recordId(1)), properties: ['a'] };
    const arrayOutcome = parseBody(JSON.stringify(listBody([notObject], null)), recordListSchema);
    expect(!arrayOutcome.ok && arrayOutcome.detail).toBe('results[0].properties: must be an object of property values');
    const body = JSON.stringify(listBody([record(recordId(1), { amount: 1 })], null)).replace('"amount":1', '"amount":1e999');
    const overflow = parseBody(body, recordListSchema);
    expect(!overflow.ok && overflow.detail).toBe('results[0].properties.amount: must be a string, a finite number, a boolean or null');
  });

  it('keeps a property named __proto__ as sent, as an own key of the properties map', () => {
    const body = JSON.stringify(listBody([record(recordId(1), { a: 1 })], null)).replace('"a":1', '"a":1,"__proto__":"kept"');
    const outcome = parseBody(body, recordListSchema);
    expect(outcome.ok).toBe(true);
    const properties = outcome.ok ? outcome.data.results[0]!.properties : {};
    expect(Object.keys(properties)).toEqual(['name', 'a', '__proto__']);
    expect(Object.getOwnPropertyDescriptor(properties, '__proto__')?.value).toBe('kept');
  });

  it('rejects timestamps that are not ISO 8601 date-times', () => {
    const bad = { ...record(recordId(1)), updated_at: '2024/05/01 10:00' };
    const outcome = parseBody(JSON.stringify(listBody([bad], null)), recordListSchema);
    expect(!outcome.ok && outcome.detail).toMatch(/^results\[0\]\.updated_at: must be an ISO 8601 date-time/);
  });

  it('keeps the whole properties map and strips unknown envelope members', () => {
    const extraMember = { ...record(recordId(1), { a1B2c3D4: 42, flag: true, cleared: null }), archived: false };
    const parsed = recordListSchema.parse({ ...listBody([extraMember], null) as object, total: 9 });
    expect(parsed.results[0]!.properties).toEqual({
      name: `record ${recordId(1)}`,
      a1B2c3D4: 42,
      flag: true,
      cleared: null,
    });
    expect(parsed.results[0]).not.toHaveProperty('archived');
  });

  it('reports a body that is not JSON as such', () => {
    expect(parseBody('{"results": [', recordListSchema)).toMatchObject({ ok: false, json: false });
  });
});

describe('isIsoDateTime', () => {
  it.each([
    '2024-05-01T09:30:00Z',
    '2024-05-01T09:30:00.123456789+09:00',
    '2024-02-29T23:59:59-05:30',
    '2024-05-01T09:30:00+0900',
  ])('accepts %s', (value) => expect(isIsoDateTime(value)).toBe(true));

  it.each([
    '2024-05-01',
    '2024-05-01T09:30:00',
    '2023-02-29T00:00:00Z',
    '2024-13-01T00:00:00Z',
    '2024-05-01T24:00:00Z',
    'not a date',
  ])('rejects %s', (value) => expect(isIsoDateTime(value)).toBe(false));
});

describe('meeting log single view', () => {
  const summary = {
    summary_type: 'next_action',
    result_type: 'select',
    text: null,
    selections: [{ value: 'follow_up', level: 1, order: 0 }],
    reason: '',
    status: 'done',
    updated_at: '2024-05-01T10:00:00.5+09:00',
  };

  it('requires summaries with the spec shape', () => {
    expect(meetingLogRecordSchema.parse({ ...record(recordId(1)), summaries: [summary] }).summaries).toEqual([summary]);
    expect(meetingLogRecordSchema.safeParse(record(recordId(1))).success).toBe(false);
    const badLevel = { ...summary, selections: [{ value: 'x', level: 1.5, order: 0 }] };
    expect(meetingLogRecordSchema.safeParse({ ...record(recordId(1)), summaries: [badLevel] }).success).toBe(false);
  });
});

describe('property definitions', () => {
  it('default options to [] when absent or null', () => {
    const base = { display_name: '商談名', property_type: 'text', is_core: true, is_required_on_create: true };
    const parsed = propertyListSchema.parse({
      results: [
        { api_name: 'name', ...base },
        { api_name: 'stage', ...base, options: null },
        { api_name: 'x1Y2z3W4', ...base, property_type: 'select', options: [{ value: 'a', label: 'A' }] },
      ],
    });
    expect(parsed.results.map((d) => d.options)).toEqual([[], [], [{ value: 'a', label: 'A' }]]);
  });
});

describe('users', () => {
  it('require the user shape', () => {
    const user = { id: recordId(7), email: 'a@example.com', name: '山田', is_active: true };
    expect(serviceUserSchema.parse(user)).toEqual(user);
    expect(serviceUserSchema.safeParse({ ...user, is_active: 'yes' }).success).toBe(false);
  });
});

describe('formatIssuePath', () => {
  it('writes indexes in brackets and odd keys quoted', () => {
    expect(formatIssuePath(['results', 3, 'id'])).toBe('results[3].id');
    expect(formatIssuePath(['results', 0, 'properties', 'a.b'])).toBe('results[0].properties["a.b"]');
    expect(formatIssuePath([])).toBe('(root)');
  });
});
