/**
 * rejected_records: records the service sent that cannot be mirrored as they are, kept verbatim with the reason,
 * one row per (resource, id), or per (resource, raw) when the record has no usable id. A walk that writes the
 * record takes it out again (see `upsertRecords`' `quarantineResource`), so a record fixed at the service leaves
 * quarantine by itself.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { RECORD_ID_PATTERN } from '../core/resources.js';
import type { RejectedRecord } from '../core/types.js';
import { quoteIdentifier } from './identifiers.js';
import { stageRows } from './staging.js';
import type { StageColumn } from './rows.js';

const REJECT_STAGE = '_salesync_rejects';

const REJECT_COLUMNS: readonly StageColumn[] = [
  { name: 'id', sqlType: 'VARCHAR' },
  { name: 'raw', sqlType: 'VARCHAR' },
  { name: 'reason', sqlType: 'VARCHAR' },
];

/** The key a reject is kept under: its id, or its raw text when it has none. Later ones of a batch win. */
function distinctRejects(rejects: readonly RejectedRecord[]): RejectedRecord[] {
  return [...new Map(rejects.map((r) => [r.id === null ? `raw:${r.raw}` : `id:${r.id}`, r])).values()];
}

/**
 * Put `rejects` in quarantine under `resource`, in the caller's transaction: a record already there gets the new
 * raw text, reason, run and `last_seen_at` (its `first_seen_at` stays); a new one gets both times `seenAt`.
 */
export async function quarantineRecords(
  connection: DuckDBConnection,
  resource: string,
  rejects: readonly RejectedRecord[],
  runId: string | null,
  seenAt: string,
): Promise<void> {
  if (rejects.length === 0) return;
  await stageRows(
    connection,
    REJECT_STAGE,
    REJECT_COLUMNS,
    distinctRejects(rejects).map((r) => ({ id: r.id, raw: r.raw, reason: r.reason })),
  );
  const stage = quoteIdentifier(REJECT_STAGE);
  const same = `q.resource = $1 AND (q.id = s.id OR (q.id IS NULL AND s.id IS NULL AND q.raw = s.raw))`;
  await connection.run(
    `UPDATE rejected_records AS q SET raw = s.raw, reason = s.reason, run_id = $2, last_seen_at = CAST($3 AS TIMESTAMPTZ)
     FROM ${stage} AS s WHERE ${same}`,
    [resource, runId, seenAt],
  );
  await connection.run(
    `INSERT INTO rejected_records (resource, id, raw, reason, run_id, first_seen_at, last_seen_at)
     SELECT $1, s.id, s.raw, s.reason, $2, CAST($3 AS TIMESTAMPTZ), CAST($3 AS TIMESTAMPTZ) FROM ${stage} AS s
     WHERE NOT EXISTS (SELECT 1 FROM rejected_records AS q WHERE ${same})`,
    [resource, runId, seenAt],
  );
  await connection.run(`DROP TABLE ${stage}`);
}

async function hasQuarantine(connection: DuckDBConnection): Promise<boolean> {
  const exists = await connection.runAndReadAll(
    `SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = 'rejected_records'`,
  );
  return Number(exists.getRowObjects()[0]?.n ?? 0) > 0;
}

/** Records in quarantine per resource; a warehouse of an earlier release (no table yet) has none. */
export async function countRejected(connection: DuckDBConnection): Promise<Record<string, number>> {
  if (!(await hasQuarantine(connection))) return {};
  const reader = await connection.runAndReadAll(
    `SELECT resource, count(*)::BIGINT AS n FROM rejected_records GROUP BY resource ORDER BY resource`,
  );
  return Object.fromEntries(reader.getRowObjects().map((r) => [String(r.resource), Number(r.n)]));
}

/**
 * Ids of `resource`'s records in quarantine that run `exceptRun` did not put or keep there, at most `limit`, drawn at
 * random: what a run asks the service about again. Random, so entries the service no longer has (left for a
 * reconcile to settle) cannot crowd the fixed ones out of every run; only record ids, as an id that was the broken
 * part names no single view.
 */
export async function quarantinedIds(
  connection: DuckDBConnection,
  resource: string,
  exceptRun: string | null,
  limit: number,
): Promise<string[]> {
  if (!(await hasQuarantine(connection))) return [];
  const reader = await connection.runAndReadAll(
    `SELECT id FROM rejected_records
     WHERE resource = $1 AND regexp_matches(id, $4) AND run_id IS DISTINCT FROM $2
     ORDER BY random() LIMIT $3`,
    [resource, exceptRun, limit, RECORD_ID_PATTERN.source],
  );
  return reader.getRowObjects().map((r) => String(r.id));
}

/**
 * After a clean pass of run `runId` over `resource`'s records updated at or after `since` (all of them when null):
 * an entry that this run did not put (or keep) in quarantine, and whose record as last received falls in that
 * window, was not sent broken again, so it is fixed or gone (a record whose id was the broken part can leave no
 * other way). An entry with no readable `updated_at` leaves only after a complete listing. Returns entries removed.
 */
export async function settleQuarantine(
  connection: DuckDBConnection,
  resource: string,
  runId: string,
  since: string | null = null,
): Promise<number> {
  const inWindow =
    since === null ? '' : ` AND TRY_CAST(json_extract_string(raw, '$.updated_at') AS TIMESTAMPTZ) >= CAST($3 AS TIMESTAMPTZ)`;
  const result = await connection.run(
    `DELETE FROM rejected_records WHERE resource = $1 AND run_id IS DISTINCT FROM $2${inWindow}`,
    since === null ? [resource, runId] : [resource, runId, since],
  );
  return Number(result.rowsChanged);
}
