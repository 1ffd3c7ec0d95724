import { describe, expect, it } from 'vitest';
import {
  classifyDateTime,
  formatIssuePath,
  isIsoDateTime,
  meetingLogRecordSchema,
  propertyListSchema,
  serviceRecordSchema,
  serviceUserSchema,
} from '../../src/api/schemas.js';
import { checkListBody, checkRecord, isEmptySingleView, parseJson, singleViewRecord } from '../../src/api/validation.js';
import { canonicalInstant } from '../../src/core/time.js';
import { listBody, record, recordId } from './fake-service.js';

/** A list body as the client receives it: JSON text, parsed. */
function received(body: unknown): unknown {
  return JSON.parse(typeof body === 'string' ? body : JSON.stringify(body));
}

/** The rejects of a list whose envelope is valid. */
function rejectsOf(results: unknown[]) {
  const checked = checkListBody(received(listBody(results, null)), serviceRecordSchema);
  if (!checked.ok) throw new Error(`envelope unexpectedly invalid: ${checked.detail}`);
  return checked.data.rejects;
}

describe('record list check', () => {
  it('accepts a page, keeps timestamps exactly as sent and reads the next cursor', () => {
    const checked = checkListBody(received(listBody([record(recordId(1))], 'cursor-2')), serviceRecordSchema);
    expect(checked.ok).toBe(true);
    const data = checked.ok ? checked.data : null;
    expect(data?.results[0]!.created_at).toBe('2024-05-01T09:30:00.123456+09:00');
    expect(data?.results[0]!.updated_at).toBe('2024-05-02T00:00:00.000001Z');
    expect(data?.nextCursor).toBe('cursor-2');
    expect(data?.rejects).toEqual([]);
  });

  it('one record with a bad id is a reject naming the field, with its id as sent and the element as JSON; the others are kept', () => {
    const bad = record('short-id');
    const checked = checkListBody(received(listBody([record(recordId(1)), bad, record(recordId(3))], null)), serviceRecordSchema);
    expect(checked.ok && checked.data.results.map((r) => r.id)).toEqual([recordId(1), recordId(3)]);
    expect(checked.ok && checked.data.rejects).toEqual([
      { id: 'short-id', raw: JSON.stringify(bad), reason: 'id: must match ^[A-Za-z0-9]{18}$' },
    ]);
  });

  it('a reject whose id is not a string has id null; one with a 17-character id keeps it', () => {
    const numericId = { ...record(recordId(1)), id: 12345 };
    const noId = { properties: {}, created_at: '2024-05-01T00:00:00Z', updated_at: '2024-05-01T00:00:00Z' };
    const short = record(recordId(1).slice(1));
    expect(rejectsOf([numericId, noId, 'not a record', null, short]).map((r) => r.id)).toEqual([
      null,
      null,
      null,
      null,
      recordId(1).slice(1),
    ]);
  });

  it('an element that is not an object is a reject of the whole element', () => {
    const [reject] = rejectsOf(['text']);
    expect(reject).toMatchObject({ id: null, raw: '"text"' });
    expect(reject!.reason).toMatch(/^\(root\): .*expected object/);
  });

  it('a broken envelope is an error and nothing of it is used', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ results: [] }, /^paging: /],
      [{ paging: { next: null } }, /^results: /],
      [{ results: {}, paging: { next: null } }, /^results: .*expected array/],
      [{ results: [record(recordId(1))], paging: { next: { after: 'x' } } }, /^paging\.next\.link: /],
      [{ results: [], paging: { next: { after: '', link: '' } } }, /^paging\.next\.after: /],
      [[], /^\(root\): /],
    ];
    for (const [body, detail] of cases) {
      const checked = checkListBody(body, serviceRecordSchema);
      expect(checked.ok).toBe(false);
      expect(!checked.ok && checked.detail).toMatch(detail);
    }
  });

  it('a property value that is an object or an array is a reject naming the property', () => {
    expect(rejectsOf([record(recordId(1), { nested: { a: 1 } }), record(recordId(2), { list: [1] })]).map((r) => r.reason)).toEqual([
      'properties.nested: must be a string, a finite number, a boolean or null',
      'properties.list: must be a string, a finite number, a boolean or null',
    ]);
  });

  it('properties that are not an object, and numbers that overflowed to Infinity, are rejects naming the field', () => {
    const notObject = { ...record(recordId(1)), properties: ['a'] };
    // JSON.parse reads 1e999 as Infinity: built from text, not from an object (JSON.stringify would write null).
    const body = JSON.stringify(listBody([notObject, record(recordId(2), { amount: 1 })], null)).replace('"amount":1', '"amount":1e999');
    const checked = checkListBody(JSON.parse(body), serviceRecordSchema);
    expect(checked.ok && checked.data.rejects.map((r) => [r.id, r.reason])).toEqual([
      [recordId(1), 'properties: must be an object of property values'],
      [recordId(2), 'properties.amount: must be a string, a finite number, a boolean or null'],
    ]);
  });

  it("keeps a property named __proto__ as sent, as an own key of the properties map, and in a reject's raw", () => {
    const body = JSON.stringify(listBody([record(recordId(1), { a: 1 }), record('bad', { a: 1 })], null)).replaceAll(
      '"a":1',
      '"a":1,"__proto__":"kept"',
    );
    const checked = checkListBody(received(body), serviceRecordSchema);
    const properties = checked.ok ? checked.data.results[0]!.properties : {};
    expect(Object.keys(properties)).toEqual(['name', 'a', '__proto__']);
    expect(Object.getOwnPropertyDescriptor(properties, '__proto__')?.value).toBe('kept');
    expect(checked.ok && checked.data.rejects[0]!.raw).toContain('"__proto__":"kept"');
  });

  it('timestamps that are not ISO 8601 date-times (a slash date, a space for T) are rejects, not a broken page', () => {
    const slash = { ...record(recordId(1)), updated_at: '2024/05/01 10:00' };
    const space = { ...record(recordId(2)), created_at: '2024-05-01 09:30:00Z' };
    const reasons = rejectsOf([slash, space, record(recordId(3))]).map((r) => r.reason);
    expect(reasons).toHaveLength(2);
    expect(reasons[0]).toMatch(/^updated_at: must be an ISO 8601 date-time/);
    expect(reasons[1]).toMatch(/^created_at: must be an ISO 8601 date-time/);
  });

  it('a leap second (legal RFC 3339, no instant the warehouse can store) is a reject saying so', () => {
    const leap = { ...record(recordId(1)), updated_at: '2024-12-31T23:59:60Z' };
    expect(rejectsOf([leap]).map((r) => r.reason)).toEqual([
      'updated_at: 2024-12-31T23:59:60Z is not an instant the warehouse can store (a leap second?)',
    ]);
    // Year 0000 is ISO 8601's 1 BC, an instant both the warehouse's reader and DuckDB hold.
    const yearZero = { ...record(recordId(2)), created_at: '0000-06-01T00:00:00Z' };
    expect(rejectsOf([yearZero])).toEqual([]);
  });

  it('keeps the whole properties map and strips unknown envelope members', () => {
    const extraMember = { ...record(recordId(1), { a1B2c3D4: 42, flag: true, cleared: null }), archived: false };
    const checked = checkListBody({ ...(listBody([extraMember], null) as object), total: 9 }, serviceRecordSchema);
    const first = checked.ok ? checked.data.results[0] : undefined;
    expect(first?.properties).toEqual({ name: `record ${recordId(1)}`, a1B2c3D4: 42, flag: true, cleared: null });
    expect(first).not.toHaveProperty('archived');
  });

  it('reports a body that is not JSON as such, and a web page as a sign the base URL names no API', () => {
    expect(parseJson(Buffer.from('{"results": ['))).toMatchObject({ ok: false, detail: expect.stringContaining('not JSON') });
    expect(parseJson(Buffer.from('\n<!DOCTYPE html><html><body>Sign in</body></html>'))).toMatchObject({
      ok: false,
      detail: expect.stringContaining('check SALES_API_BASE_URL names the API'),
    });
  });
});

describe('single record check', () => {
  it('a record that breaks its schema is a reject with its id, the body as JSON and the field', () => {
    const bad = { ...record(recordId(1)), updated_at: '2024-12-31T23:59:60Z' };
    expect(checkRecord(bad, serviceRecordSchema)).toEqual({
      ok: false,
      reject: {
        id: recordId(1),
        raw: JSON.stringify(bad),
        reason: 'updated_at: 2024-12-31T23:59:60Z is not an instant the warehouse can store (a leap second?)',
      },
    });
  });

  it('a single view is the record itself, or the one member of an object, or the one element of a list body', () => {
    const one = record(recordId(1));
    expect(singleViewRecord(one)).toBe(one);
    expect(singleViewRecord({ data: one })).toBe(one);
    expect(singleViewRecord({ record: one })).toBe(one);
    expect(singleViewRecord({ results: [one], paging: { next: null } })).toBe(one);
    // A record whose properties hold one object is still the record: it has an id of its own.
    const nested = { id: recordId(2), properties: { data: one } };
    expect(singleViewRecord(nested)).toBe(nested);
    // Anything else is left for the schema to refuse: no record, two, or an object without an id.
    for (const other of [{ results: [] }, { results: [one, one] }, { data: one, meta: {} }, { data: { name: 'x' } }, [one], null]) {
      expect(singleViewRecord(other)).toBe(other);
      expect(checkRecord(singleViewRecord(other), serviceRecordSchema).ok).toBe(false);
    }
  });

  it('takes a single view given as an empty list for no record (not_found), and nothing else', () => {
    expect(isEmptySingleView({ results: [], paging: { next: null } })).toBe(true);
    expect(isEmptySingleView({ results: [] })).toBe(true);
    const one = { id: recordId(1), properties: {}, created_at: '2024-01-01T00:00:00Z', updated_at: '2024-01-01T00:00:00Z' };
    for (const other of [{ results: [one] }, { id: recordId(1), results: [] }, { data: [] }, [], {}, null])
      expect(isEmptySingleView(other)).toBe(false);
  });
});

describe('timestamps the warehouse can store', () => {
  it("agree with canonicalInstant, the warehouse's own reading: every date-time accepted has a canonical instant", () => {
    const cases = [
      '2024-05-01T09:30:00Z',
      '2024-05-01T09:30:00.123456789+09:00',
      '2024-02-29T23:59:59-05:30',
      '2024-05-01T09:30:00+0900',
      '2024-05-01t09:30:00z',
      '2024-12-31T23:59:60Z',
      '2016-12-31T23:59:60.5+00:00',
      '0000-01-01T00:00:00Z',
      '0001-01-01T00:00:00Z',
      '0001-01-01T00:00:00+01:00',
      '9999-12-31T23:59:59-01:00',
      '2024-06-30T08:59:60+09:00',
    ];
    for (const value of cases) {
      expect(classifyDateTime(value) === 'instant', value).toBe(canonicalInstant(value) !== null);
    }
    expect(canonicalInstant('2024-12-31T23:59:60Z')).toBeNull();
    expect(classifyDateTime('2024-12-31T23:59:60Z')).toBe('unstorable');
  });
});

describe('isIsoDateTime', () => {
  it.each([
    '2024-05-01T09:30:00Z',
    '2024-05-01T09:30:00.123456789+09:00',
    '2024-02-29T23:59:59-05:30',
    '2024-05-01T09:30:00+0900',
    '2024-05-01t09:30:00.5z',
    '2024-12-31T23:59:60Z', // a leap second is legal RFC 3339 (the schema rejects it for the warehouse's sake)
  ])('accepts %s', (value) => expect(isIsoDateTime(value)).toBe(true));

  it.each([
    '2024-05-01',
    '2024-05-01T09:30:00',
    '2023-02-29T00:00:00Z',
    '2024-13-01T00:00:00Z',
    '2024-05-01T24:00:00Z',
    '2024-05-01T23:60:00Z',
    '2024-05-01T23:59:61Z',
    '2024-05-01 09:30:00Z',
    '2024-05-01T09:30:00+24:00',
    '2024-05-01T09:30:00+09:60',
    '2024-05-01T09:30:00+0960',
    '2024-05-01T09:30:00.Z',
    '2024-05-01T09:30Z',
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

  it('a user with name null in a list is a reject naming the field; the others are kept', () => {
    const users = [1, 2, 3].map((n) => ({ id: recordId(n), email: `u${n}@example.com`, name: `U${n}`, is_active: true }));
    const nameless = { ...users[1]!, name: null };
    const checked = checkListBody(received(listBody([users[0], nameless, users[2]], null)), serviceUserSchema);
    expect(checked.ok && checked.data.results).toEqual([users[0], users[2]]);
    expect(checked.ok && checked.data.rejects).toEqual([
      { id: recordId(2), raw: JSON.stringify(nameless), reason: expect.stringMatching(/^name: /) },
    ]);
  });
});

describe('formatIssuePath', () => {
  it('writes indexes in brackets and odd keys quoted', () => {
    expect(formatIssuePath(['results', 3, 'id'])).toBe('results[3].id');
    expect(formatIssuePath(['results', 0, 'properties', 'a.b'])).toBe('results[0].properties["a.b"]');
    expect(formatIssuePath([])).toBe('(root)');
  });
});
