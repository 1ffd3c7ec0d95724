/** The bulk upsert of one batch into a record table, and the replacement of meeting log summaries. */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { MeetingLogSummary, ServiceRecord } from '../core/types.js';
import type { ColumnPlan } from './types.js';
import { quoteIdentifier } from './identifiers.js';
import { ndjsonEncoder, recordCells, recordColumns, SUMMARY_COLUMNS, summaryRows } from './rows.js';
import { stageNdjson, stageRows } from './staging.js';
import { canonicalInstant } from '../core/time.js';
import { recordHistory } from './history.js';

const RECORD_STAGE = '_salesync_stage';
const SUMMARY_STAGE = '_salesync_summaries';
const SUMMARY_LOGS_STAGE = '_salesync_summary_logs';
const SUMMARY_CHANGED_STAGE = '_salesync_summary_changed';

export interface UpsertOptions {
  /** Write only rows whose content hash differs from the stored row's (a reconcile sweep). @defaultValue false */
  onlyChanged?: boolean;
  /** A reconcile sweep's key: every staged id is recorded in `reconcile_seen` under it, in this transaction. */
  sweepKey?: string;
}

export interface UpsertResult {
  /** Rows written. */
  written: number;
  /** Of those, rows whose content differed from the mirror (new, changed, or back after being marked deleted). */
  changed: number;
}

/**
 * Stage the (already deduplicated) records, drop those older than the stored row (a late page must not
 * regress a row; equal timestamps rewrite idempotently), then update the rows already there and append the
 * rest. Columns not in the plan (kept after a type change) are left as they are. Returns the rows written.
 *
 * Ids stay unique by construction (a deduplicated batch, updated or appended in one transaction by the one
 * writer the file lock allows), not by a PRIMARY KEY: DuckDB keeps every key of an index in memory, so a
 * keyed table's footprint grows with the mirror (a 1M-record sync ran out of a 128 MB limit) and each append
 * pays for index upkeep.
 */
export async function upsertRecords(
  connection: DuckDBConnection,
  table: string,
  plan: readonly ColumnPlan[],
  records: readonly ServiceRecord[],
  syncedAt: string,
  options: UpsertOptions = {},
): Promise<UpsertResult> {
  if (records.length === 0) return { written: 0, changed: 0 };
  const stage = quoteIdentifier(RECORD_STAGE);
  const target = quoteIdentifier(table);
  const columns = recordColumns(plan);
  const encode = ndjsonEncoder(columns);
  const synced = canonicalInstant(syncedAt) ?? syncedAt;
  await stageNdjson(connection, RECORD_STAGE, columns, records.map((r) => encode(recordCells(r, plan, synced))));
  // Every version observed, even one older than the stored row, before such rows leave the stage.
  await recordHistory(connection, table, RECORD_STAGE);
  if (options.sweepKey !== undefined) {
    // Every listed id counts as seen, written or not: only ids never listed are marked deleted at the end.
    await connection.run(`INSERT INTO reconcile_seen (sweep_key, id) SELECT $1, id FROM ${stage}`, [options.sweepKey]);
  }
  await connection.run(
    `DELETE FROM ${stage} WHERE id IN (
       SELECT s.id FROM ${stage} AS s JOIN ${target} AS t ON t.id = s.id WHERE t.updated_at > s.updated_at)`,
  );
  if (options.onlyChanged) {
    // Same content, not marked deleted: nothing to write.
    await connection.run(
      `DELETE FROM ${stage} WHERE id IN (
         SELECT s.id FROM ${stage} AS s JOIN ${target} AS t ON t.id = s.id
         WHERE t._content_hash = s._content_hash AND t._deleted_at IS NULL)`,
    );
  }
  // Changed: new to the mirror, marked deleted (it came back), or different content. A row stored before
  // content hashes has none: its raw properties and timestamps decide, so an upgrade is not counted as drift.
  const counted = await connection.runAndReadAll(
    `SELECT count(*)::INTEGER AS n, count(t.id)::INTEGER AS existing,
            count(*) FILTER (WHERE t.id IS NULL OR t._deleted_at IS NOT NULL
              OR (t._content_hash IS NOT NULL AND t._content_hash <> s._content_hash)
              OR (t._content_hash IS NULL AND (CAST(t._properties AS VARCHAR) IS DISTINCT FROM CAST(s._properties AS VARCHAR)
                  OR t.updated_at IS DISTINCT FROM s.updated_at OR t.created_at IS DISTINCT FROM s.created_at)))::INTEGER AS changed
     FROM ${stage} AS s LEFT JOIN ${target} AS t ON t.id = s.id`,
  );
  const [totals] = counted.getRowObjects();
  const written = Number(totals?.n ?? 0);
  const changed = Number(totals?.changed ?? 0);
  const existing = Number(totals?.existing ?? 0);
  if (existing > 0) {
    // Only the staged columns are set, so columns kept after a type change keep their values.
    const set = columns
      .filter((c) => c.name !== 'id')
      .map((c) => `${quoteIdentifier(c.name)} = s.${quoteIdentifier(c.name)}`)
      .join(', ');
    await connection.run(`UPDATE ${target} AS t SET ${set} FROM ${stage} AS s WHERE t.id = s.id`);
  }
  if (existing < written) {
    // A batch of ids all new to the table (a first load) is a plain append.
    const onlyNew = existing > 0 ? ` WHERE NOT EXISTS (SELECT 1 FROM ${target} AS t WHERE t.id = s.id)` : '';
    await connection.run(`INSERT INTO ${target} BY NAME SELECT * FROM ${stage} AS s${onlyNew}`);
  }
  await connection.run(`DROP TABLE ${stage}`);
  return { written, changed };
}

/**
 * Each listed log's stored summaries are replaced by the given ones (an empty list clears them), but only for
 * logs whose summaries differ from what is stored: unchanged logs are not rewritten. Returns the logs changed.
 */
export async function replaceSummaries(
  connection: DuckDBConnection,
  summaries: ReadonlyMap<string, readonly MeetingLogSummary[]>,
): Promise<number> {
  if (summaries.size === 0) return 0;
  await stageRows(
    connection,
    SUMMARY_LOGS_STAGE,
    [{ name: 'id', sqlType: 'VARCHAR' }],
    [...summaries.keys()].map((id) => ({ id })),
  );
  await stageRows(
    connection,
    SUMMARY_STAGE,
    SUMMARY_COLUMNS,
    [...summaries.entries()].flatMap(([id, list]) => summaryRows(id, list)),
  );
  const logs = quoteIdentifier(SUMMARY_LOGS_STAGE);
  const stage = quoteIdentifier(SUMMARY_STAGE);
  const changedLogs = quoteIdentifier(SUMMARY_CHANGED_STAGE);
  const columns = SUMMARY_COLUMNS.map((c) => quoteIdentifier(c.name)).join(', ');
  const stored = `SELECT ${columns} FROM meeting_log_summaries WHERE meeting_log_id IN (SELECT id FROM ${logs})`;
  // A log changed when any row differs either way (set operations compare NULLs and nested values as equal).
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${changedLogs} AS
     SELECT DISTINCT meeting_log_id AS id FROM (
       (SELECT ${columns} FROM ${stage} EXCEPT ${stored})
       UNION ALL
       (${stored} EXCEPT SELECT ${columns} FROM ${stage}))`,
  );
  const counted = await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM ${changedLogs}`);
  const changed = Number(counted.getRowObjects()[0]?.n ?? 0);
  if (changed > 0) {
    await connection.run(`DELETE FROM meeting_log_summaries WHERE meeting_log_id IN (SELECT id FROM ${changedLogs})`);
    await connection.run(
      `INSERT INTO meeting_log_summaries BY NAME SELECT * FROM ${stage} WHERE meeting_log_id IN (SELECT id FROM ${changedLogs})`,
    );
  }
  for (const table of [stage, logs, changedLogs]) await connection.run(`DROP TABLE ${table}`);
  return changed;
}
