import { describe, expect, it } from 'vitest';
import type { ServiceRecord } from '../../src/core/types.js';
import { canonicalJson, contentHash, ndjsonKey, recordColumns, recordEncoder, recordToRow } from '../../src/warehouse/rows.js';
import type { ColumnPlan } from '../../src/warehouse/types.js';

const record = (over: Partial<ServiceRecord> = {}): ServiceRecord => ({
  id: 'D00000000000000001',
  properties: { name: 'A', amount: 10, account_id: 'C00000000000000001' },
  created_at: '2025-01-01T09:00:00+09:00',
  updated_at: '2025-06-01T00:00:00.123456Z',
  ...over,
});

describe('content hash', () => {
  it('canonical JSON sorts keys at every level and keeps arrays in order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe('{"a":{"c":null,"d":[2,1]},"b":1}');
    // A property may be named __proto__ (an own key, as JSON.parse makes it): it is content like any other.
    expect(canonicalJson(JSON.parse('{"b":1,"__proto__":"x"}'))).toBe('{"__proto__":"x","b":1}');
  });

  it('does not depend on the order the service sent properties in, nor on the offset of the same instant', () => {
    const reordered = record({
      properties: { account_id: 'C00000000000000001', amount: 10, name: 'A' },
      created_at: '2025-01-01T00:00:00Z',
    });
    expect(contentHash(reordered)).toBe(contentHash(record()));
  });

  it('changes with a link, a predicted value, a cleared value or a moved timestamp', () => {
    const base = contentHash(record());
    expect(contentHash(record({ properties: { name: 'A', amount: 10, account_id: 'C00000000000000002' } }))).not.toBe(base);
    expect(contentHash(record({ properties: { name: 'A', amount: 11, account_id: 'C00000000000000001' } }))).not.toBe(base);
    expect(contentHash(record({ properties: { name: 'A', amount: 10, account_id: null } }))).not.toBe(base);
    expect(contentHash(record({ properties: { name: 'A', amount: 10 } }))).not.toBe(base);
    expect(contentHash(record({ updated_at: '2025-06-01T00:00:00.123457Z' }))).not.toBe(base);
    // A number and its text are different values.
    expect(contentHash(record({ properties: { name: 'A', amount: '10', account_id: 'C00000000000000001' } }))).not.toBe(base);
  });

  it("a batch encoder writes each record as the reference row and its key line as that row's id, updated_at and hash, whatever key orders, shapes and misfit values follow each other", () => {
    const plan: ColumnPlan[] = [
      { apiName: 'name', columnName: 'name', propertyType: 'text', sqlType: 'VARCHAR' },
      { apiName: 'amount', columnName: 'amount', propertyType: 'number', sqlType: 'DOUBLE' },
      { apiName: 'close', columnName: 'close', propertyType: 'date', sqlType: 'DATE' },
      { apiName: 'seen', columnName: 'seen', propertyType: 'datetime', sqlType: 'TIMESTAMPTZ' },
      { apiName: 'won', columnName: 'won', propertyType: 'bool', sqlType: 'BOOLEAN' },
      { apiName: 'extra', columnName: 'extra', propertyType: 'shape', sqlType: 'JSON' },
      { apiName: '__proto__', columnName: 'proto', propertyType: 'text', sqlType: 'VARCHAR' },
      { apiName: '10', columnName: 'ten', propertyType: 'number', sqlType: 'DOUBLE' },
    ];
    const batch = [
      record(),
      record({ id: 'D00000000000000002', properties: { account_id: 'C00000000000000001', amount: 10, name: 'A' } }),
      record({ id: 'D00000000000000003', properties: { amount: 10, name: 'A' } }),
      record({ id: 'D00000000000000004', properties: { account_id: 'x', amount: 10, name: 'A' } }), // sorted as sent
      record({ id: 'D00000000000000005', properties: { account_id: 'x', amount: 10, name: 'A' } }),
      // Every column's type as it comes, then each as text, as the wrong type, and as null.
      record({
        id: 'D00000000000000006',
        properties: {
          name: 'Ünïcode "quoted" \\ \u2028 😀',
          amount: -0,
          close: '2026-02-28',
          seen: '2026-01-02T03:04:05+09:00',
          won: true,
          extra: 'x',
        },
      }),
      record({
        id: 'D00000000000000007',
        properties: { name: 42, amount: ' 1e3 ', close: '2026-02-30', seen: '2026-01-02T03:04:05.1234567Z', won: 'TRUE', extra: 1.5 },
      }),
      record({
        id: 'D00000000000000008',
        properties: { name: true, amount: 'lots', close: 20260228, seen: 1767290645, won: 1, extra: null },
      }),
      record({ id: 'D00000000000000009', properties: { name: null, amount: null, close: null, seen: null, won: null } }),
      // Nested values are outside the type but may come from a service: nested keys are sorted for the hash too.
      record({
        id: 'D00000000000000010',
        properties: JSON.parse(
          '{"name":"A","nested":{"b":1,"a":[{"d":2,"c":1}]},"extra":{"y":1,"x":2},"amount":10}',
        ) as ServiceRecord['properties'],
      }),
      // Keys an object would treat specially: `__proto__` as an own key, array indices (listed first by any object).
      record({
        id: 'D00000000000000011',
        properties: JSON.parse('{"b":"B","__proto__":"P","10":7,"2":"two","a":"A"}') as ServiceRecord['properties'],
      }),
      // Two key lists that read alike when joined on NUL, sorting differently.
      record({ id: 'D00000000000000013', properties: { 'b\u0000a': 1, c: 2 } }),
      record({ id: 'D00000000000000014', properties: { b: 1, 'a\u0000c': 2 } }),
      record({ id: 'D00000000000000012', created_at: 'not a time', updated_at: '2025-06-01 00:00:00Z', properties: {} }),
      record(),
    ];
    const syncedAt = '2026-01-01T09:00:00+09:00';
    const encode = recordEncoder(plan, syncedAt);
    const unkeyed = recordEncoder(plan, syncedAt, false);
    const columns = recordColumns(plan);
    const propertiesKey = ndjsonKey(columns.findIndex((c) => c.nested));
    for (const r of batch) {
      const { line: text, key } = encode(r);
      // `_properties` is the very text JSON.stringify gives the values (the row's last key), byte for byte.
      expect(text.endsWith(`"${propertiesKey}":${JSON.stringify(r.properties)}}`), r.id).toBe(true);
      const line = JSON.parse(text) as Record<string, unknown>;
      // The reference row as NDJSON carries it (JSON has no -0).
      const reference = JSON.parse(JSON.stringify(recordToRow(r, plan, syncedAt))) as Record<string, unknown>;
      expect(Object.keys(line)).toHaveLength(columns.length);
      columns.forEach((column, i) => {
        // `_properties` keeps the service's own order, as its text shows.
        if (column.nested) expect(JSON.stringify(line[ndjsonKey(i)])).toBe(JSON.stringify(r.properties));
        else expect(line[ndjsonKey(i)], `${r.id} ${column.name}`).toStrictEqual(reference[column.name]);
      });
      expect(line[ndjsonKey(columns.findIndex((c) => c.name === '_content_hash'))]).toBe(contentHash(r));
      // The key line is the row's id, updated_at and hash under the row's own keys, and nothing else.
      const decisive = ['id', 'updated_at', '_content_hash'].map((name) => ndjsonKey(columns.findIndex((c) => c.name === name)));
      expect(JSON.parse(String(key)), r.id).toStrictEqual(Object.fromEntries(decisive.map((k) => [k, line[k]])));
      // Asked for none, the encoder makes the same row without one.
      expect(unkeyed(r)).toStrictEqual({ line: text, key: undefined });
    }
  });

  it('is a column of every record row', () => {
    expect(recordColumns([]).map((c) => c.name)).toContain('_content_hash');
    expect(recordToRow(record(), [], '2026-01-01T00:00:00Z')._content_hash).toBe(contentHash(record()));
  });
});
