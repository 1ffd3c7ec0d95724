/**
 * Properties of every type, with values that fit, values that do not, nulls and absences: what a column fill and a
 * fresh write must cast alike. Shared by the schema and column-fill tests, with a bare in-memory warehouse.
 */
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { PropertyDefinition, ServiceRecord } from '../../src/core/types.js';
import type { ColumnPlan } from '../../src/warehouse/types.js';
import { quoteIdentifier } from '../../src/warehouse/identifiers.js';
import { encodeRecords } from '../../src/warehouse/rows.js';
import { ensureFixedSchema, ensureRecordTable, fixedSchemaSql, recordTableDdl } from '../../src/warehouse/schema.js';
import { upsertRecords } from '../../src/warehouse/upsert.js';
import { customDefinitions } from '../../devtools/wide-records.js';

export const MIXED_TYPES = ['text', 'number', 'select', 'date', 'datetime', 'boolean', 'multi'] as const;

/** `custom_<from>` … `custom_<to - 1>`, the types in turn; each select has one option (`a`, labelled `A`). */
export function mixedDefinitions(from: number, to: number): PropertyDefinition[] {
  return customDefinitions(MIXED_TYPES, from, to, [{ value: 'a', label: 'A' }]);
}

/** A value of the column's type, one that does not fit it, text holding a number, null, or nothing. */
export function mixedValue(row: number, column: number): unknown {
  const kind = (row * 7 + column) % 10;
  if (kind === 0) return undefined;
  if (kind === 1) return null;
  if (kind === 2) return 'not a value of this type';
  if (kind === 3) return row + column / 8;
  if (kind === 4) return String(row * 3);
  switch (MIXED_TYPES[column % MIXED_TYPES.length]) {
    case 'date':
      return `2026-0${1 + (row % 9)}-1${column % 10}`;
    case 'datetime':
      return `2026-03-01T1${row % 10}:00:00+09:00`;
    case 'boolean':
      return row % 2 === 0 ? 'TRUE' : false;
    case 'multi':
      return ['a', { b: row }];
    default:
      return `v${row}-${column}`;
  }
}

/** Row `row`'s properties over `width` columns (`custom_<i>`), plus a name. */
export function mixedProperties(row: number, width: number): Record<string, unknown> {
  const properties: Record<string, unknown> = { name: `deal ${row}` };
  for (let c = 0; c < width; c += 1) {
    const value = mixedValue(row, c);
    if (value !== undefined) properties[`custom_${c}`] = value;
  }
  return properties;
}

/** An in-memory warehouse with the fixed tables and an empty `deals`, in UTC. */
export async function openBareWarehouse(): Promise<{ instance: DuckDBInstance; connection: DuckDBConnection }> {
  const instance = await DuckDBInstance.create(':memory:', { memory_limit: '1GB' });
  const connection = await instance.connect();
  await connection.run(`SET TimeZone = 'UTC'`);
  await ensureFixedSchema(connection, fixedSchemaSql());
  await ensureRecordTable(connection, 'deals');
  return { instance, connection };
}

/** `openBareWarehouse` holding `records`, stored while no property was defined: their values are in `_properties` only. */
export async function bareWarehouseHolding(
  records: readonly ServiceRecord[],
  syncedAt: string,
): Promise<{ instance: DuckDBInstance; connection: DuckDBConnection }> {
  const opened = await openBareWarehouse();
  await upsertRecords(opened.connection, 'deals', [], [], encodeRecords(records, [], syncedAt));
  return opened;
}

/**
 * Rows of `deals` unlike the same `records` freshly written into a table of `plan`, and the reverse, compared on
 * the id, the plan's columns and `also` (system columns).
 */
export async function differencesFromFresh(
  connection: DuckDBConnection,
  records: readonly ServiceRecord[],
  plan: readonly ColumnPlan[],
  syncedAt: string,
  also: readonly string[] = [],
): Promise<[number, number]> {
  await connection.run(`DROP TABLE IF EXISTS fresh`);
  await connection.run(recordTableDdl('fresh', plan));
  await upsertRecords(connection, 'fresh', plan, [], encodeRecords(records, plan, syncedAt));
  const columns = ['id', ...plan.map((p) => quoteIdentifier(p.columnName)), ...also].join(', ');
  return tableDifferences(connection, 'deals', 'fresh', columns);
}

/** Rows of `a` not in `b` and rows of `b` not in `a`, compared on `columns` (quoted), duplicates counted. */
export async function tableDifferences(connection: DuckDBConnection, a: string, b: string, columns: string): Promise<[number, number]> {
  const missing = async (from: string, other: string) => {
    const reader = await connection.runAndReadAll(
      `SELECT count(*) AS n FROM (SELECT ${columns} FROM ${from} EXCEPT ALL SELECT ${columns} FROM ${other})`,
    );
    return Number(reader.getRows()[0]![0]);
  };
  return [await missing(a, b), await missing(b, a)];
}
