/** SQL of reconcile sweeps and of the summaries job: what a complete sweep did not see, and what awaits summaries. */
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import { SalesyncError } from '../core/errors.js';
import { quoteIdentifier } from './identifiers.js';

/**
 * At the end of a complete sweep: mark every row the sweep never listed as deleted at `deletedAt`, forget the
 * sweep's seen ids, and return how many rows were marked. Rows updated at or after the sweep's start (server
 * clock) are left alone: a record created during the sweep may sit behind its cursor, and the next sweep decides.
 * A row already marked keeps the time it first went missing.
 */
export async function markUnseenDeleted(
  connection: DuckDBConnection,
  table: string,
  sweepKey: string,
  sweepStartedAt: string,
  deletedAt: string,
): Promise<number> {
  // A sweep that listed nothing at all while live rows exist is far likelier a service glitch (an empty page
  // answered for a full list) than every record deleted at once: refuse, inside the transaction, so nothing
  // of this batch is written and every row stays as it was.
  const seen = await connection.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM reconcile_seen WHERE sweep_key = $1`, [sweepKey]);
  if (Number(seen.getRowObjects()[0]?.n ?? 0) === 0) {
    const live = await connection.runAndReadAll(
      `SELECT count(*)::INTEGER AS n FROM ${quoteIdentifier(table)} WHERE _deleted_at IS NULL AND updated_at < CAST($1 AS TIMESTAMPTZ)`,
      [sweepStartedAt],
    );
    const rows = Number(live.getRowObjects()[0]?.n ?? 0);
    if (rows > 0) {
      throw new SalesyncError(
        'reconcile_empty_sweep',
        `A complete reconcile sweep of ${table} listed no records while the warehouse holds ${rows} live rows; ` +
          `nothing was marked deleted. Check the service (and the key's access); if it really holds no ${table} now, ` +
          `mark them yourself: UPDATE "${table}" SET _deleted_at = now() WHERE _deleted_at IS NULL.`,
        { context: { table, liveRows: rows } },
      );
    }
  }
  const result = await connection.run(
    `UPDATE ${quoteIdentifier(table)} SET _deleted_at = CAST($3 AS TIMESTAMPTZ)
     WHERE _deleted_at IS NULL AND updated_at < CAST($2 AS TIMESTAMPTZ)
       AND id NOT IN (SELECT id FROM reconcile_seen WHERE sweep_key = $1)`,
    [sweepKey, sweepStartedAt, deletedAt],
  );
  await clearSeen(connection, sweepKey);
  return Number(result.rowsChanged);
}

/** Forget the ids seen by a sweep (its completion, or a fresh sweep replacing an abandoned one). */
export async function clearSeen(connection: DuckDBConnection, sweepKey: string): Promise<void> {
  await connection.run(`DELETE FROM reconcile_seen WHERE sweep_key = $1`, [sweepKey]);
}

/**
 * Meeting logs, not marked deleted, created at or after `createdAfter`, whose stored summaries are empty or
 * include one whose status is not final: id → stored `updated_at` (epoch microseconds).
 */
export async function selectLogsAwaitingSummaries(
  connection: DuckDBConnection,
  table: string,
  createdAfter: string,
  finalStatuses: readonly string[],
): Promise<Map<string, bigint>> {
  const reader = await connection.runAndReadAll(
    `SELECT m.id, epoch_us(m.updated_at) AS us FROM ${quoteIdentifier(table)} AS m
     WHERE m._deleted_at IS NULL AND m.created_at >= CAST($1 AS TIMESTAMPTZ)
       AND (NOT EXISTS (SELECT 1 FROM meeting_log_summaries s WHERE s.meeting_log_id = m.id)
            OR EXISTS (SELECT 1 FROM meeting_log_summaries s WHERE s.meeting_log_id = m.id
                       AND (s.status IS NULL OR NOT list_contains(CAST($2 AS VARCHAR[]), s.status))))
     ORDER BY m.created_at DESC, m.id`,
    [createdAfter, listValue([...finalStatuses])],
  );
  return new Map(reader.getRowObjects().map((row) => [String(row.id), BigInt(row.us as bigint)]));
}
