import { describe, expect, it } from 'vitest';
import type { ServiceRecord } from '../../src/core/types.js';
import { dedupeBatch, recordToRow, toColumnValue } from '../../src/warehouse/rows.js';
import type { ColumnPlan } from '../../src/warehouse/types.js';

const record = (id: string, updated_at: string, properties: ServiceRecord['properties'] = {}): ServiceRecord => ({
  id,
  properties,
  created_at: '2026-01-01T00:00:00Z',
  updated_at,
});

describe('toColumnValue', () => {
  it('keeps values that fit their column type', () => {
    expect(toColumnValue('Acme', 'VARCHAR')).toBe('Acme');
    expect(toColumnValue(12.5, 'DOUBLE')).toBe(12.5);
    expect(toColumnValue(true, 'BOOLEAN')).toBe(true);
    expect(toColumnValue('2026-02-28', 'DATE')).toBe('2026-02-28');
    expect(toColumnValue('2026-01-02T03:04:05.123456+09:00', 'TIMESTAMPTZ')).toBe('2026-01-01T18:04:05.123456Z');
  });

  it('encodes a value of a type the spec does not name as JSON, losslessly', () => {
    expect(toColumnValue('a "quoted" text', 'JSON')).toBe('"a \\"quoted\\" text"');
    expect(toColumnValue(42, 'JSON')).toBe('42');
    expect(toColumnValue(false, 'JSON')).toBe('false');
  });

  it('casts text forms that mean the same value', () => {
    expect(toColumnValue('12.5', 'DOUBLE')).toBe(12.5);
    expect(toColumnValue('TRUE', 'BOOLEAN')).toBe(true);
    expect(toColumnValue(42, 'VARCHAR')).toBe('42');
  });

  it('makes a value of the wrong type NULL instead of failing', () => {
    expect(toColumnValue('lots', 'DOUBLE')).toBeNull();
    expect(toColumnValue(true, 'DOUBLE')).toBeNull();
    expect(toColumnValue('yes', 'BOOLEAN')).toBeNull();
    expect(toColumnValue(1, 'BOOLEAN')).toBeNull();
    expect(toColumnValue('2026-02-30', 'DATE')).toBeNull();
    expect(toColumnValue('2026-01-02T03:04:05Z', 'DATE')).toBeNull();
    expect(toColumnValue('tomorrow', 'TIMESTAMPTZ')).toBeNull();
    expect(toColumnValue(1767290645, 'TIMESTAMPTZ')).toBeNull();
  });

  it('maps null and absent values to NULL for every type', () => {
    for (const type of ['VARCHAR', 'DOUBLE', 'DATE', 'TIMESTAMPTZ', 'BOOLEAN', 'JSON'] as const) {
      expect(toColumnValue(null, type)).toBeNull();
      expect(toColumnValue(undefined, type)).toBeNull();
    }
  });
});

describe('recordToRow', () => {
  it('fills envelope, typed columns by column name, raw properties and system columns', () => {
    const plan: ColumnPlan[] = [
      { apiName: 'amount', columnName: 'amount', propertyType: 'number', sqlType: 'DOUBLE' },
      { apiName: 'region01', columnName: 'region01__2', propertyType: 'text', sqlType: 'VARCHAR' },
      { apiName: 'missing', columnName: 'missing', propertyType: 'date', sqlType: 'DATE' },
    ];
    const row = recordToRow(
      record('A'.repeat(18), '2026-01-02T03:04:05.123456+09:00', { amount: 'n/a', region01: 'East', extra: 1 }),
      plan,
      '2026-03-01T00:00:00.000Z',
    );
    expect(row).toEqual({
      id: 'A'.repeat(18),
      created_at: '2026-01-01T00:00:00.000000Z',
      updated_at: '2026-01-01T18:04:05.123456Z',
      amount: null,
      region01__2: 'East',
      missing: null,
      _properties: { amount: 'n/a', region01: 'East', extra: 1 },
      _synced_at: '2026-03-01T00:00:00.000000Z',
      _deleted_at: null,
      _content_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });
});

describe('dedupeBatch', () => {
  it('keeps the latest updated_at per id, compared at microsecond precision across offsets', () => {
    const older = record('X', '2026-01-02T03:04:05.123456+09:00', { v: 'older' });
    const newer = record('X', '2026-01-01T18:04:05.123457Z', { v: 'newer' });
    expect(dedupeBatch([newer, older], false).map((r) => r.properties.v)).toEqual(['newer']);
    expect(dedupeBatch([older, newer], false).map((r) => r.properties.v)).toEqual(['newer']);
  });

  it('compares exactly when an offset carries the instant past the year 9999', () => {
    const older = record('X', '9999-12-31T23:00:00-02:00', { v: 'older' });
    const newer = record('X', '9999-12-31T23:30:00-02:00', { v: 'newer' });
    const beforeIt = record('X', '9999-12-31T23:59:59Z', { v: 'before' });
    expect(dedupeBatch([newer, older], false).map((r) => r.properties.v)).toEqual(['newer']);
    expect(dedupeBatch([older, newer, beforeIt], false).map((r) => r.properties.v)).toEqual(['newer']);
    expect(dedupeBatch([beforeIt, older], false).map((r) => r.properties.v)).toEqual(['older']);
  });

  it('lets the later of two equal timestamps win', () => {
    const a = record('X', '2026-01-01T00:00:00Z', { v: 'a' });
    const b = record('X', '2026-01-01T09:00:00+09:00', { v: 'b' });
    expect(dedupeBatch([a, b], false).map((r) => r.properties.v)).toEqual(['b']);
  });

  it('refuses a record whose updated_at is not a date-time', () => {
    expect(() => dedupeBatch([record('X', 'yesterday')], false)).toThrow(/updated_at/);
    expect(() => dedupeBatch([record('X', 'yesterday')], true)).toThrow(/updated_at/);
  });

  it('with observedWins keeps the last record of each id whatever its updated_at, in the place its id first came', () => {
    const newer = record('X', '2026-01-03T00:00:00Z', { v: 'newer' });
    const other = record('Y', '2026-01-01T00:00:00Z', { v: 'other' });
    const olderLast = record('X', '2026-01-01T00:00:00Z', { v: 'older, observed last' });
    expect(dedupeBatch([newer, other, olderLast], true).map((r) => r.properties.v)).toEqual(['older, observed last', 'other']);
    expect(dedupeBatch([newer, other, olderLast], false).map((r) => r.properties.v)).toEqual(['newer', 'other']);
  });
});
