import { describe, expect, it } from 'vitest';
import type { ServiceRecord } from '../../src/core/types.js';
import { canonicalJson, contentHash, ndjsonKey, recordColumns, recordEncoder, recordToRow } from '../../src/warehouse/rows.js';

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

  it('a batch encoder gives each record the hash it has alone, whatever key orders and shapes follow each other', () => {
    const batch = [
      record(),
      record({ id: 'D00000000000000002', properties: { account_id: 'C00000000000000001', amount: 10, name: 'A' } }),
      record({ id: 'D00000000000000003', properties: { amount: 10, name: 'A' } }),
      record({ id: 'D00000000000000004', properties: { account_id: 'x', amount: 10, name: 'A' } }), // sorted as sent
      record({ id: 'D00000000000000005', properties: { account_id: 'x', amount: 10, name: 'A' } }),
      // Nested values are outside the type but may come from a service: they take the general canonical path.
      record({
        id: 'D00000000000000006',
        properties: JSON.parse('{"name":"A","nested":{"b":1,"a":2},"amount":10}') as ServiceRecord['properties'],
      }),
      record(),
    ];
    const encode = recordEncoder([], '2026-01-01T00:00:00Z');
    const hashKey = ndjsonKey(recordColumns([]).findIndex((c) => c.name === '_content_hash'));
    const propertiesKey = ndjsonKey(recordColumns([]).findIndex((c) => c.name === '_properties'));
    for (const r of batch) {
      const line = JSON.parse(encode(r)) as Record<string, unknown>;
      expect(line[hashKey]).toBe(contentHash(r));
      // `_properties` keeps the service's own order.
      expect(JSON.stringify(line[propertiesKey])).toBe(JSON.stringify(r.properties));
    }
  });

  it('is a column of every record row', () => {
    expect(recordColumns([]).map((c) => c.name)).toContain('_content_hash');
    expect(recordToRow(record(), [], '2026-01-01T00:00:00Z')._content_hash).toBe(contentHash(record()));
  });
});
