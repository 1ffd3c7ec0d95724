/**
 * `salesync export`: one Parquet file per table and view, for pandas, Polars and Spark users. All files come
 * from one read transaction, so they agree with each other.
 */
import { mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteIdentifier } from './identifiers.js';

export interface ExportedFile {
  /** The table or view exported. */
  relation: string;
  kind: 'table' | 'view';
  file: string;
  rows: number;
}

/** Tables and views of the main schema, in name order. */
export async function exportableRelations(connection: DuckDBConnection): Promise<{ name: string; kind: 'table' | 'view' }[]> {
  const reader = await connection.runAndReadAll(
    `SELECT table_name AS name, 'table' AS kind FROM duckdb_tables()
       WHERE database_name = current_database() AND schema_name = 'main' AND NOT temporary
     UNION ALL
     SELECT view_name, 'view' FROM duckdb_views()
       WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND NOT temporary
     ORDER BY name`,
  );
  return reader.getRowObjects().map((r) => ({ name: String(r.name), kind: r.kind === 'view' ? 'view' : 'table' }));
}

/** A relation's file name: its name when that is a plain word (all of ours are), else percent-encoded. */
export function parquetFileName(relation: string): string {
  return `${/^[A-Za-z0-9_]+$/.test(relation) ? relation : encodeURIComponent(relation)}.parquet`;
}

export async function exportParquet(connection: DuckDBConnection, directory: string): Promise<ExportedFile[]> {
  const outDir = resolve(directory);
  await mkdir(outDir, { recursive: true });
  const exported: ExportedFile[] = [];
  let partial: string | null = null;
  await connection.run('BEGIN TRANSACTION');
  try {
    for (const { name, kind } of await exportableRelations(connection)) {
      const file = join(outDir, parquetFileName(name));
      // Written beside, then renamed: a reader of the directory never sees half a file.
      partial = `${file}.partial`;
      // The path is a bound parameter, never spliced into SQL.
      const result = await connection.run(`COPY (SELECT * FROM ${quoteIdentifier(name)}) TO $1 (FORMAT parquet)`, [partial]);
      await rename(partial, file);
      partial = null;
      exported.push({ relation: name, kind, file, rows: Number(result.rowsChanged) });
    }
  } catch (error) {
    if (partial !== null) await rm(partial, { force: true });
    throw error;
  } finally {
    await connection.run('ROLLBACK');
  }
  return exported;
}
