/**
 * Hundreds of properties appearing at once on a table that already holds rows: every new column is added in one
 * go and filled from `_properties` with the cast incoming records get (`toColumnValue`), as the per-column
 * backfill did, in one pass over the rows: by the rebuild that adds them (many columns, as here), or page by page
 * after ALTERs (`fillPendingColumns`).
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PropertyDefinition } from '../../src/core/types.js';
import type { ColumnPlan } from '../../src/warehouse/types.js';
import { inTransaction } from '../../src/warehouse/connection.js';
import { sqlTypeFor, type SqlType } from '../../src/warehouse/column-types.js';
import { quoteIdentifier } from '../../src/warehouse/identifiers.js';
import { toColumnValue, type StagedRow } from '../../src/warehouse/rows.js';
import { fillPendingColumns, markColumnsForFill, type FillPage } from '../../src/warehouse/column-fill.js';
import { tableColumns } from '../../src/warehouse/catalog.js';
import { applyDefinitions, planFromAssignments } from '../../src/warehouse/schema.js';
import { stageRows } from '../../src/warehouse/staging.js';
import { mixedDefinitions, mixedProperties, openBareWarehouse, tableDifferences } from '../support/mixed-properties.js';

const WIDTH = 300;
const ROWS = 600;

const definitions: PropertyDefinition[] = mixedDefinitions(0, WIDTH);

/** Rows of `deals` unlike what the per-column backfill staged for `plan` (each row's value through toColumnValue, column by column), and the reverse. */
async function differences(connection: DuckDBConnection, plan: readonly ColumnPlan[]): Promise<[number, number]> {
  const expected: StagedRow[] = Array.from({ length: ROWS }, (_, n) => {
    const properties = n === 5 ? {} : mixedProperties(n, WIDTH);
    const row: StagedRow = { id: `D${String(n).padStart(17, '0')}` };
    for (const p of plan) {
      const raw = Object.hasOwn(properties, p.apiName) ? properties[p.apiName] : undefined;
      row[p.columnName] = toColumnValue(raw as never, p.sqlType as SqlType);
    }
    return row;
  });
  await stageRows(
    connection,
    'expected',
    [{ name: 'id', sqlType: 'VARCHAR' }, ...plan.map((p) => ({ name: p.columnName, sqlType: sqlTypeFor(p.propertyType) }))],
    expected,
  );
  return tableDifferences(connection, 'deals', 'expected', ['id', ...plan.map((p) => quoteIdentifier(p.columnName))].join(', '));
}

describe('applyDefinitions on a table that holds rows', () => {
  let instance: DuckDBInstance;
  let connection: DuckDBConnection;

  beforeEach(async () => {
    ({ instance, connection } = await openBareWarehouse());
    const rows: StagedRow[] = Array.from({ length: ROWS }, (_, n) => ({
      id: `D${String(n).padStart(17, '0')}`,
      // One row without properties at all: its new cells stay NULL.
      props: n === 5 ? null : JSON.stringify(mixedProperties(n, WIDTH)),
    }));
    await stageRows(
      connection,
      'given',
      [
        { name: 'id', sqlType: 'VARCHAR' },
        { name: 'props', sqlType: 'JSON' },
      ],
      rows,
    );
    await connection.run(`INSERT INTO deals (id, _properties) SELECT id, props FROM given`);
  });

  afterEach(() => {
    connection.closeSync();
    instance.closeSync();
  });

  it(`adds ${WIDTH} columns at once, each filled with the cast of its property for every stored row`, async () => {
    const plan = await inTransaction(connection, () => applyDefinitions(connection, 'deals', 'deals', definitions, '2026-03-01T00:00:00Z'));
    await fillPendingColumns(connection, 'deals');
    expect(plan).toHaveLength(WIDTH);
    const columns = (await tableColumns(connection, 'deals')) ?? [];
    for (const p of plan) expect(columns).toContain(p.columnName);

    expect(await differences(connection, plan)).toEqual([0, 0]);
    // Not vacuous: the fill wrote values of every type.
    const filled = await connection.runAndReadAll(
      `SELECT count(custom_0), count(custom_1), count(custom_3), count(custom_4), count(custom_5) FROM deals`,
    );
    for (const n of filled.getRows()[0]!) expect(Number(n)).toBeGreaterThan(ROWS / 8);

    const stored = await connection.runAndReadAll(`SELECT count(*) FROM property_definitions WHERE resource = 'deals'`);
    expect(Number(stored.getRows()[0]![0])).toBe(WIDTH);
  });

  it('fills every page of rows, the last one short, when the table takes several pages', async () => {
    const plan = planFromAssignments(
      definitions.slice(0, 4).map((d) => ({ apiName: d.api_name, columnName: d.api_name, propertyType: d.property_type })),
    );
    for (const p of plan) await connection.run(`ALTER TABLE deals ADD COLUMN ${quoteIdentifier(p.columnName)} ${p.sqlType}`);
    await inTransaction(connection, () => markColumnsForFill(connection, 'deals', plan));
    // 4 columns, 1000 cells a page: pages of 250 rows, the third one short.
    const pages: FillPage[] = [];
    await fillPendingColumns(connection, 'deals', { pageCells: 1000, onPage: (page) => void pages.push(page) });
    expect(pages.map((p) => [p.rows, p.done])).toEqual([
      [250, false],
      [250, false],
      [100, true],
    ]);
    expect(await differences(connection, plan)).toEqual([0, 0]);
  });

  it('records each definition once, and updates it when listed again', async () => {
    await inTransaction(connection, () => applyDefinitions(connection, 'deals', 'deals', definitions, '2026-03-01T00:00:00Z'));
    const renamed = definitions.map((d, i) => (i === 7 ? { ...d, display_name: 'Renamed' } : d));
    await inTransaction(connection, () => applyDefinitions(connection, 'deals', 'deals', renamed, '2026-03-02T00:00:00Z'));
    const reader = await connection.runAndReadAll(
      `SELECT display_name, CAST(first_seen_at AS VARCHAR), CAST(last_seen_at AS VARCHAR), CAST(options AS VARCHAR)
       FROM property_definitions WHERE resource = 'deals' AND api_name IN ('custom_7', 'custom_9') ORDER BY api_name`,
    );
    expect(reader.getRows()).toEqual([
      ['Renamed', '2026-03-01 00:00:00+00', '2026-03-02 00:00:00+00', '[]'],
      ['Custom 9', '2026-03-01 00:00:00+00', '2026-03-02 00:00:00+00', '[{"value":"a","label":"A"}]'],
    ]);
  });
});
