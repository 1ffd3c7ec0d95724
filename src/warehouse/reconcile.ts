/** SQL of reconcile sweeps and of the summaries job: what a complete sweep did not see, and what awaits summaries. */
import { DOUBLE, LIST, listValue, VARCHAR, type DuckDBConnection } from '@duckdb/node-api';
import { quoteIdentifier } from './identifiers.js';
import type { SummariesDue, SweepCandidates } from './types.js';

/**
 * After a complete sweep: the live rows it never listed, and the live rows of the table. Each is confirmed by a GET
 * before anything is marked, so a row the sweep could not list (one changed during it behind an offset cursor, or
 * written between an interrupted sweep and its resumption) costs a request, never a wrong mark. Not filtered by
 * `updated_at`: a record stamped ahead of the service's `Date` (its clocks may disagree) would never be a candidate.
 */
export async function selectSweepCandidates(connection: DuckDBConnection, table: string, sweepKey: string): Promise<SweepCandidates> {
  const target = quoteIdentifier(table);
  const unseen = await connection.runAndReadAll(
    `SELECT id FROM ${target}
     WHERE _deleted_at IS NULL AND id NOT IN (SELECT id FROM reconcile_seen WHERE sweep_key = $1)
     ORDER BY id`,
    [sweepKey],
  );
  const live = await connection.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM ${target} WHERE _deleted_at IS NULL`);
  return { ids: unseen.getRowObjects().map((r) => String(r.id)), live: Number(live.getRowObjects()[0]?.n ?? 0) };
}

/** Record ids as listed by a sweep that no batch wrote (records it quarantined): they exist, so they are not candidates. */
export async function recordSeen(connection: DuckDBConnection, sweepKey: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await connection.run(`INSERT INTO reconcile_seen (sweep_key, id) SELECT $1, unnest(CAST($2 AS VARCHAR[]))`, [
    sweepKey,
    listValue([...ids]),
  ]);
}

/** Forget the ids seen by a sweep (its completion, or a fresh sweep replacing an abandoned one). */
export async function clearSeen(connection: DuckDBConnection, sweepKey: string): Promise<void> {
  await connection.run(`DELETE FROM reconcile_seen WHERE sweep_key = $1`, [sweepKey]);
}

/** The most doublings of a log's re-read spacing that count: 2^40 of any base is for ever. */
const MAX_DOUBLINGS = 40;

/**
 * Meeting logs, not marked deleted, created at or after `due.createdAfter`, whose summaries are due for a read:
 * never read, or read last at `last_read_at` with `last_read_at + recheckMs × 2^unchanged_reads` at or before
 * `due.serverNow`. With `due.finalStatuses`, logs whose stored summaries are non-empty and all in it are left out.
 * id → stored `updated_at` (epoch microseconds), newest logs first. `schedule`: whether the warehouse has
 * `meeting_log_summary_reads` (a warehouse of an earlier release, opened read-only, has not: every log is unread).
 */
export async function selectLogsAwaitingSummaries(
  connection: DuckDBConnection,
  table: string,
  due: SummariesDue,
  schedule: boolean,
): Promise<Map<string, bigint>> {
  const reads = schedule
    ? 'meeting_log_summary_reads'
    : '(SELECT NULL::VARCHAR AS meeting_log_id, NULL::TIMESTAMPTZ AS last_read_at, NULL::INTEGER AS unchanged_reads WHERE false)';
  const finalOnly =
    due.finalStatuses === null
      ? ''
      : `AND (NOT EXISTS (SELECT 1 FROM meeting_log_summaries s WHERE s.meeting_log_id = m.id)
              OR EXISTS (SELECT 1 FROM meeting_log_summaries s WHERE s.meeting_log_id = m.id
                         AND (s.status IS NULL OR NOT list_contains(CAST($4 AS VARCHAR[]), s.status))))`;
  const reader = await connection.runAndReadAll(
    `SELECT m.id, epoch_us(m.updated_at) AS us FROM ${quoteIdentifier(table)} AS m
       LEFT JOIN ${reads} AS r ON r.meeting_log_id = m.id
     WHERE m._deleted_at IS NULL AND m.created_at >= CAST($1 AS TIMESTAMPTZ)
       AND (r.last_read_at IS NULL
            OR epoch_us(r.last_read_at) + $3 * pow(2, least(r.unchanged_reads, ${MAX_DOUBLINGS})) <= epoch_us(CAST($2 AS TIMESTAMPTZ)))
       ${finalOnly}
     ORDER BY m.created_at DESC, m.id`,
    [due.createdAfter, due.serverNow, due.recheckMs * 1000, ...(due.finalStatuses === null ? [] : [listValue([...due.finalStatuses])])],
    // Typed: an empty list of statuses has no item type to infer.
    [VARCHAR, VARCHAR, DOUBLE, LIST(VARCHAR)].slice(0, due.finalStatuses === null ? 3 : 4),
  );
  return new Map(reader.getRowObjects().map((row) => [String(row.id), BigInt(row.us as bigint)]));
}
