/**
 * `<table>_history`: every version of a record the warehouse has observed, one row per (id, updated_at),
 * written from the staged batch inside the commit that upserts it. A version is what moved `updated_at`:
 * changes the service makes silently (links, predictions) are not versions of their own.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteIdentifier } from './identifiers.js';

export function historyTableName(table: string): string {
  return `${table}_history`;
}

async function tableExists(connection: DuckDBConnection, table: string): Promise<boolean> {
  const reader = await connection.runAndReadAll(
    `SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1`,
    [table],
  );
  return Number(reader.getRowObjects()[0]?.n ?? 0) > 0;
}

/**
 * Create the history table when missing. A warehouse that had rows before history existed starts its
 * history from them, so every stored row is also a version.
 */
export async function ensureHistoryTable(connection: DuckDBConnection, table: string): Promise<void> {
  const history = historyTableName(table);
  if (await tableExists(connection, history)) return;
  await connection.run(
    `CREATE TABLE ${quoteIdentifier(history)} (
       id VARCHAR NOT NULL, updated_at TIMESTAMPTZ NOT NULL, properties JSON, observed_at TIMESTAMPTZ)`,
  );
  if (await tableExists(connection, table)) {
    await connection.run(
      `INSERT INTO ${quoteIdentifier(history)} (id, updated_at, properties, observed_at)
       SELECT id, updated_at, _properties, _synced_at FROM ${quoteIdentifier(table)} WHERE updated_at IS NOT NULL`,
    );
  }
}

/** The stage's columns (quoted) holding what a version row takes from a record. */
export interface StagedVersion {
  id: string;
  updatedAt: string;
  properties: string;
  syncedAt: string;
}

/**
 * SQL adding the staged records' versions not seen before. `stage` holds the record table's staging columns
 * (named by `staged`) and what the stored row says (`_fresh`, `_lookup`; see `upsertRecords`). The table and its
 * history move together in one transaction, so the stored version and every earlier one it replaced are in
 * history already, and a version newer than both the stored row and any newer version history holds for it
 * (`history_ahead`: an observed-wins write stored an older one) cannot be: `fresh` needs no lookup. Any other
 * version (a late page, or one of an id whose history is ahead of its row) may or may not be there: `lookup`
 * looks them up, scanning the whole history table, so run it only for batches that have such rows. The version
 * equal to the stored row's is neither. The history table must exist (`ensureHistoryTable`).
 */
export function recordHistorySql(table: string, stage: string, staged: StagedVersion): { fresh: string; lookup: string } {
  const history = quoteIdentifier(historyTableName(table));
  const from = quoteIdentifier(stage);
  const columns = 'id, updated_at, properties, observed_at';
  const { id, updatedAt, properties, syncedAt } = staged;
  return {
    fresh: `INSERT INTO ${history} (${columns})
      SELECT ${id}, ${updatedAt}, ${properties}, ${syncedAt} FROM ${from}
      WHERE ${updatedAt} IS NOT NULL AND _fresh`,
    lookup: `INSERT INTO ${history} (${columns})
      SELECT s.${id}, s.${updatedAt}, s.${properties}, s.${syncedAt} FROM ${from} AS s
      WHERE s._lookup AND NOT EXISTS (SELECT 1 FROM ${history} AS h WHERE h.id = s.${id} AND h.updated_at = s.${updatedAt})`,
  };
}
