import { describe, expect, it } from 'vitest';
import type { PropertyDefinition } from '../../src/core/types.js';
import { assignColumnNames, distinctDefinitions, quoteIdentifier, type ColumnAssignment } from '../../src/warehouse/identifiers.js';
import { findSchemaDir, recordTableDdl } from '../../src/warehouse/schema.js';

function def(api_name: string, property_type = 'text'): PropertyDefinition {
  return { api_name, display_name: api_name, property_type, is_core: false, is_required_on_create: false, options: [] };
}

describe('quoteIdentifier', () => {
  it('turns a hostile name into one quoted identifier by doubling its quotes', () => {
    expect(quoteIdentifier('x"; DROP TABLE deals; --')).toBe('"x""; DROP TABLE deals; --"');
  });

  it('keeps unicode and spaces as they are inside the quotes', () => {
    expect(quoteIdentifier('商談 名前 🚀')).toBe('"商談 名前 🚀"');
  });

  it('makes DDL whose only unquoted words are ours, whatever the property names', () => {
    const ddl = recordTableDdl('deals', [
      { apiName: 'a', columnName: 'x"; DROP TABLE deals; --', propertyType: 'text', sqlType: 'VARCHAR' },
    ]);
    expect(ddl).toContain('"x""; DROP TABLE deals; --" VARCHAR');
  });
});

describe('distinctDefinitions', () => {
  it('keeps one definition of an api_name listed twice, the same whichever comes first: the stored type, else the least', () => {
    const twice = [def('dK3mP9xQ', 'number'), def('other'), def('dK3mP9xQ', 'text')];
    const reversed = [...twice].reverse();
    for (const listed of [twice, reversed]) {
      expect(distinctDefinitions(listed, []).definitions.find((d) => d.api_name === 'dK3mP9xQ')!.property_type).toBe('number');
      const stored: ColumnAssignment[] = [{ apiName: 'dK3mP9xQ', columnName: 'dK3mP9xQ', propertyType: 'text' }];
      expect(distinctDefinitions(listed, stored)).toMatchObject({ duplicated: ['dK3mP9xQ'] });
      expect(
        distinctDefinitions(listed, stored)
          .definitions.map((d) => [d.api_name, d.property_type])
          .sort(),
      ).toEqual([
        ['dK3mP9xQ', 'text'],
        ['other', 'text'],
      ]);
    }
  });
});

describe('assignColumnNames', () => {
  it('names a new property after its api_name', () => {
    const { plan, added } = assignColumnNames([], [def('amount', 'number'), def('Region01')]);
    expect(plan.map((p) => [p.columnName, p.sqlType])).toEqual([
      ['amount', 'DOUBLE'],
      ['Region01', 'VARCHAR'],
    ]);
    expect(added).toHaveLength(2);
  });

  it('gives api_names that differ only in case distinct columns, whatever order they are listed in', () => {
    const a = assignColumnNames([], [def('Region01'), def('region01')]).plan;
    const b = assignColumnNames([], [def('region01'), def('Region01')]).plan;
    const byApi = (plan: typeof a) => Object.fromEntries(plan.map((p) => [p.apiName, p.columnName]));
    expect(byApi(a)).toEqual({ Region01: 'Region01', region01: 'region01__2' });
    expect(byApi(b)).toEqual(byApi(a));
  });

  it('never lets a property take a system column name', () => {
    const { plan } = assignColumnNames(
      [],
      [def('id'), def('UPDATED_AT'), def('_properties'), def('_Synced_At'), def('created_at'), def('_deleted_at')],
    );
    expect(plan.map((p) => p.columnName)).toEqual([
      'id__2',
      'UPDATED_AT__2',
      '_properties__2',
      '_Synced_At__2',
      'created_at__2',
      '_deleted_at__2',
    ]);
  });

  it("never lets a property take the name rowid, which would hide DuckDB's own row id", () => {
    const { plan } = assignColumnNames([], [def('rowid'), def('RowId')]);
    expect(plan.map((p) => p.columnName)).toEqual(['rowid__3', 'RowId__2']);
  });

  it('keeps an existing column when a colliding api_name arrives later', () => {
    const existing: ColumnAssignment[] = [{ apiName: 'region01', columnName: 'region01', propertyType: 'text' }];
    const { plan, added } = assignColumnNames(existing, [def('Region01'), def('region01')], ['region01']);
    expect(Object.fromEntries(plan.map((p) => [p.apiName, p.columnName]))).toEqual({ region01: 'region01', Region01: 'Region01__2' });
    expect(added.map((p) => p.apiName)).toEqual(['Region01']);
  });

  it('keeps a column when only the display name or a same-SQL-type property type changes', () => {
    const existing: ColumnAssignment[] = [{ apiName: 'stage', columnName: 'stage', propertyType: 'text' }];
    const { plan, added } = assignColumnNames(existing, [{ ...def('stage', 'select'), display_name: 'Renamed "stage"' }], ['stage']);
    expect(plan[0]?.columnName).toBe('stage');
    expect(added).toEqual([]);
  });

  it('gives a property whose type changes a new column named after the new type, keeping the old one taken', () => {
    const existing: ColumnAssignment[] = [{ apiName: 'amount', columnName: 'amount', propertyType: 'number' }];
    const first = assignColumnNames(existing, [def('amount', 'text')], ['amount']);
    expect(first.plan[0]).toMatchObject({ columnName: 'amount__varchar', sqlType: 'VARCHAR' });
    // Back to number: the original column stays frozen, a fresh one is added.
    const moved: ColumnAssignment[] = [{ apiName: 'amount', columnName: 'amount__varchar', propertyType: 'text' }];
    const second = assignColumnNames(moved, [def('amount', 'number')], ['amount', 'amount__varchar']);
    expect(second.plan[0]).toMatchObject({ columnName: 'amount__double', sqlType: 'DOUBLE' });
  });

  it('maps types the spec does not name to JSON', () => {
    expect(assignColumnNames([], [def('tags', 'multiselect')]).plan[0]?.sqlType).toBe('JSON');
  });
});

describe('findSchemaDir', () => {
  it('finds the repository schema/ from the sources and from the build output alike', () => {
    const fromSource = findSchemaDir(new URL('../../src/warehouse/schema.ts', import.meta.url).href);
    const fromBuild = findSchemaDir(new URL('../../dist/src/warehouse/schema.js', import.meta.url).href);
    expect(fromBuild).toBe(fromSource);
    expect(fromSource).toMatch(/schema$/);
  });
});
