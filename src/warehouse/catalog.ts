/**
 * What the warehouse's main schema holds, read from DuckDB's catalog. `duckdb_columns()` lists every column of every
 * table and view, whatever the filter: in a warehouse thousands of columns wide one call took tens of ms, and a
 * quiet sync made dozens. So a table's columns come from the table itself (`pragma_table_info`), once the catalog's
 * table list says it exists (that pragma fails on a missing table, and a failed statement spoils a transaction).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteLiteral } from './identifiers.js';

/** The names of the tables in the warehouse's main schema. */
export async function existingTables(connection: DuckDBConnection): Promise<Set<string>> {
  const reader = await connection.runAndReadAll(
    `SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'`,
  );
  return new Set(reader.getRows().map(([name]) => String(name)));
}

/** The most columns any table of the main schema has. */
export async function widestTableColumns(connection: DuckDBConnection): Promise<number> {
  const reader = await connection.runAndReadAll(
    `SELECT coalesce(max(column_count), 0)::INTEGER AS n FROM (SELECT count(*) AS column_count FROM duckdb_columns()
     WHERE database_name = current_database() AND schema_name = 'main' GROUP BY table_name)`,
  );
  return Number(reader.getRows()[0]?.[0] ?? 0);
}

/** A stored column and its type, as DuckDB names it (`duckdb_columns().data_type`). */
export interface StoredColumn {
  columnName: string;
  sqlType: string;
}

/** The table's columns in their order, with their types, or null when the main schema has no such table (a view is none). */
export async function tableColumnTypes(connection: DuckDBConnection, table: string): Promise<StoredColumn[] | null> {
  const found = await connection.runAndReadAll(
    `SELECT 1 FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1`,
    [table],
  );
  if (found.currentRowCount === 0) return null;
  // Unqualified, as the writer's statements name it: the only temporary tables are salesync's own `_salesync_` ones.
  const reader = await connection.runAndReadAll(`SELECT name, type FROM pragma_table_info(${quoteLiteral(table)}) ORDER BY cid`);
  return reader.getRows().map(([name, type]) => ({ columnName: String(name), sqlType: String(type) }));
}

/** The table's columns in their order, or null when the main schema has no such table. */
export async function tableColumns(connection: DuckDBConnection, table: string): Promise<string[] | null> {
  return (await tableColumnTypes(connection, table))?.map((c) => c.columnName) ?? null;
}
