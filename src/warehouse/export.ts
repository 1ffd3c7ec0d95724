/**
 * `salesync export`: one Parquet file per table and view, for pandas, Polars and Spark users. All files come
 * from one read transaction, so they agree with each other. An export holds the same sales data as the
 * warehouse, so it is written owner-only (files 0600, a directory it creates 0700); `shareExport` then gives it
 * the published warehouse's mode and group when the operator opened that file up.
 */
import { chmod, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { isHistoryStore } from './history-names.js';
import { quoteIdentifier } from './identifiers.js';
import { applyPublishAccess, DEFAULT_PUBLISH_MODE, directoryModeFor } from './snapshot.js';
import type { ExportedFile } from './types.js';
import { makeDirectories } from './files.js';

/** Tables and views of the main schema, in name order (a history's store as its view). */
export async function exportableRelations(connection: DuckDBConnection): Promise<{ name: string; kind: 'table' | 'view' }[]> {
  const reader = await connection.runAndReadAll(
    `SELECT table_name AS name, 'table' AS kind FROM duckdb_tables()
       WHERE database_name = current_database() AND schema_name = 'main' AND NOT temporary
     UNION ALL
     SELECT view_name, 'view' FROM duckdb_views()
       WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND NOT temporary
     ORDER BY name`,
  );
  return reader
    .getRowObjects()
    .map((r) => ({ name: String(r.name), kind: r.kind === 'view' ? ('view' as const) : ('table' as const) }))
    .filter((r) => !isHistoryStore(r.name)); // exported as its view, `<table>_history`
}

/** A relation's file name: its name when that is a plain word (all of ours are), else percent-encoded. */
export function parquetFileName(relation: string): string {
  return `${/^[A-Za-z0-9_]+$/.test(relation) ? relation : encodeURIComponent(relation)}.parquet`;
}

/** Who may read an export: the files' mode and group (a directory the export creates gets the matching x bits). */
export interface ExportAccess {
  mode: number;
  /** A group name or gid; null: the owner's own. */
  group: string | null;
}

/** What an export gets unless the operator opened the published warehouse up: the owner only, like the writer's file. */
export const OWNER_ONLY_EXPORT: ExportAccess = { mode: 0o600, group: null };

/**
 * An export's access from the published warehouse's (SALESYNC_PUBLISH_MODE, SALESYNC_PUBLISH_GROUP): owner-only
 * while both keep their defaults, else the same mode and group, for the same readers. The default mode counts as
 * not opened up (Config cannot tell an explicit 0640 from the default). Pure.
 */
export function exportAccessFor(published: { mode: number; group: string | null }): ExportAccess {
  const openedUp = published.group !== null || published.mode !== DEFAULT_PUBLISH_MODE;
  return openedUp ? { mode: published.mode, group: published.group } : OWNER_ONLY_EXPORT;
}

/**
 * Create `directory` when missing: every directory made here gets `access` (0700 owner-only); one that already
 * exists is the operator's and is left as it is (`--out /tmp` must not close /tmp).
 */
export async function createExportDirectory(directory: string, access: ExportAccess): Promise<void> {
  const outDir = resolve(directory);
  // The first directory made; those below it were made too.
  const created = await makeDirectories(outDir, 0o700);
  if (created === undefined) return;
  const directoryAccess = { mode: directoryModeFor(access.mode), group: access.group };
  for (let made = outDir; ; made = dirname(made)) {
    await applyPublishAccess(made, directoryAccess);
    if (made === created || made === dirname(made)) break;
  }
}

/** Give the exported files `access` (after `exportParquet`, which writes them owner-only); nothing to do for owner-only. */
export async function shareExport(files: readonly ExportedFile[], access: ExportAccess): Promise<void> {
  if (access.mode === OWNER_ONLY_EXPORT.mode && access.group === null) return;
  for (const { file } of files) await applyPublishAccess(file, access);
}

/** Write one Parquet file per table and view into `directory`, owner-only (see `shareExport`). */
export async function exportParquet(connection: DuckDBConnection, directory: string): Promise<ExportedFile[]> {
  const outDir = resolve(directory);
  await createExportDirectory(outDir, OWNER_ONLY_EXPORT);
  const exported: ExportedFile[] = [];
  let partial: string | null = null;
  await connection.run('BEGIN TRANSACTION');
  try {
    for (const { name, kind } of await exportableRelations(connection)) {
      const file = join(outDir, parquetFileName(name));
      // Written beside, then renamed: a reader of the directory never sees half a file.
      partial = `${file}.partial`;
      // Made 0600 before a byte is written, and written in place (USE_TMP_FILE false): DuckDB would otherwise
      // write a file of its own under the umask (0644), which another account could open while it fills.
      await rm(partial, { force: true });
      await writeFile(partial, '', { mode: 0o600 });
      await chmod(partial, 0o600);
      // The path is a bound parameter, never spliced into SQL.
      const result = await connection.run(`COPY (SELECT * FROM ${quoteIdentifier(name)}) TO $1 (FORMAT parquet, USE_TMP_FILE false)`, [
        partial,
      ]);
      await chmod(partial, 0o600); // whatever DuckDB did with the file, it is the owner's when it appears
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
