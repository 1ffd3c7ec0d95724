/** The bulk upsert of one batch into a record table, and the replacement of meeting log summaries. */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { MeetingLogSummary, ServiceRecord } from '../core/types.js';
import type { ColumnPlan } from './types.js';
import { quoteIdentifier } from './identifiers.js';
import { recordColumns, recordToRow, SUMMARY_COLUMNS, summaryRows } from './rows.js';
import { stageRows } from './staging.js';

const RECORD_STAGE = '_salesync_stage';
const SUMMARY_STAGE = '_salesync_summaries';
const SUMMARY_LOGS_STAGE = '_salesync_summary_logs';

/**
 * Stage the (already deduplicated) records, drop those older than the stored row (a late page must not
 * regress a row; equal timestamps rewrite idempotently), and upsert the rest in one statement.
 * Columns not in the plan (kept after a type change) are left as they are. Returns the rows written.
 */
export async function upsertRecords(
  connection: DuckDBConnection,
  table: string,
  plan: readonly ColumnPlan[],
  records: readonly ServiceRecord[],
  syncedAt: string,
): Promise<number> {
  if (records.length === 0) return 0;
  const stage = quoteIdentifier(RECORD_STAGE);
  const target = quoteIdentifier(table);
  await stageRows(connection, RECORD_STAGE, recordColumns(plan), records.map((r) => recordToRow(r, plan, syncedAt)));
  await connection.run(
    `DELETE FROM ${stage} WHERE id IN (
       SELECT s.id FROM ${stage} AS s JOIN ${target} AS t ON t.id = s.id WHERE t.updated_at > s.updated_at)`,
  );
  const counted = await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM ${stage}`);
  const written = Number(counted.getRowObjects()[0]?.n ?? 0);
  // BY NAME: only the staged columns are set, so columns kept after a type change keep their values.
  await connection.run(`INSERT OR REPLACE INTO ${target} BY NAME SELECT * FROM ${stage}`);
  await connection.run(`DROP TABLE ${stage}`);
  return written;
}

/** Each listed log's stored summaries are replaced by the given ones (an empty list clears them). */
export async function replaceSummaries(
  connection: DuckDBConnection,
  summaries: ReadonlyMap<string, readonly MeetingLogSummary[]>,
): Promise<void> {
  if (summaries.size === 0) return;
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
  await connection.run(
    `DELETE FROM meeting_log_summaries WHERE meeting_log_id IN (SELECT id FROM ${quoteIdentifier(SUMMARY_LOGS_STAGE)})`,
  );
  await connection.run(`INSERT INTO meeting_log_summaries BY NAME SELECT * FROM ${quoteIdentifier(SUMMARY_STAGE)}`);
  await connection.run(`DROP TABLE ${quoteIdentifier(SUMMARY_STAGE)}`);
  await connection.run(`DROP TABLE ${quoteIdentifier(SUMMARY_LOGS_STAGE)}`);
}
