/**
 * sync_runs: one row per run, written at start ('running') and at finish. A row also names the process that
 * runs it, so that a run whose process died before finishing (kill -9, a crash, a full disk that refused the
 * final write) does not stay 'running' for ever: the next run started on that host marks it 'abandoned'.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ResourceName } from '../core/resources.js';
import type { RunFinish, RunOutcome, RunOwner, RunRow, RunStart } from './types.js';
import { toJsonFriendly } from './values.js';

/**
 * This process as the owner of the runs it starts. Its id is its pid and start time: the same for every
 * Warehouse of the process (no state kept for it), different from an earlier process that had the same pid.
 */
export function currentProcessOwner(): RunOwner {
  return { host: hostname(), pid: process.pid, processId: `${process.pid}@${Math.round(performance.timeOrigin)}`, isAlive: isProcessAlive };
}

/** Signal 0 checks that a process exists without touching it; EPERM means it exists under another user. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A 'running' row as far as ownership goes (host, pid and process_id are NULL in rows from before they existed). */
export interface RunningRow {
  runId: string;
  host: string | null;
  pid: number | null;
  processId: string | null;
}

/**
 * Which 'running' rows no process is running any more. This process's own: those whose end it could not
 * record (`unrecorded`: a full disk can refuse the final write). Another process's on this host: when its pid
 * is gone, or is ours (the pid was reused, so that process ended). Other hosts' rows, and rows without an
 * owner, cannot be judged from here and stay as they are.
 */
export function abandonedRuns(rows: readonly RunningRow[], self: RunOwner, unrecorded: ReadonlySet<string>): RunningRow[] {
  return rows.filter((row) => {
    if (row.processId === self.processId) return unrecorded.has(row.runId);
    if (row.host !== self.host || row.pid === null || row.processId === null) return false;
    return row.pid === self.pid || !self.isAlive(row.pid);
  });
}

/** Mark the runs `abandonedRuns` finds. */
export async function markAbandonedRuns(connection: DuckDBConnection, self: RunOwner, unrecorded: ReadonlySet<string>): Promise<void> {
  const reader = await connection.runAndReadAll(
    `SELECT run_id, host, pid, process_id FROM sync_runs WHERE outcome = 'running' AND host = $1`,
    [self.host],
  );
  const rows = reader.getRowObjects().map((r) => ({
    runId: String(r.run_id),
    host: r.host === null ? null : String(r.host),
    pid: r.pid === null ? null : Number(r.pid),
    processId: r.process_id === null ? null : String(r.process_id),
  }));
  for (const row of abandonedRuns(rows, self, unrecorded)) {
    await connection.run(
      `UPDATE sync_runs SET outcome = 'abandoned', error_code = 'run_abandoned', error_message = $2 WHERE run_id = $1 AND outcome = 'running'`,
      [
        row.runId,
        `the process running it (PID ${row.pid} on ${row.host}) ended without recording its end (killed, crashed, or the disk was full); ` +
          'what it committed is kept, and the next walk of the resource resumes from its last checkpoint, if it left one',
      ],
    );
  }
}

export async function insertRun(connection: DuckDBConnection, run: RunStart, owner: RunOwner): Promise<string> {
  const runId = randomUUID();
  await connection.run(
    `INSERT INTO sync_runs (run_id, resource, mode, started_at, outcome, host, pid, process_id)
     VALUES ($1, $2, $3, CAST($4 AS TIMESTAMPTZ), 'running', $5, $6, $7)`,
    [runId, run.resource, run.mode, run.startedAt.toISOString(), owner.host, owner.pid, owner.processId],
  );
  return runId;
}

export async function updateRun(connection: DuckDBConnection, runId: string, finish: RunFinish): Promise<void> {
  await connection.run(
    `UPDATE sync_runs SET finished_at = CAST($2 AS TIMESTAMPTZ), pages = $3, records = $4, requests = $5, retries = $6,
       rate_limited = $7, outcome = $8, error_code = $9, error_message = $10, changed = $11, deleted = $12,
       rejected = $13, passes = $14, settled = $15 WHERE run_id = $1`,
    [
      runId,
      finish.finishedAt.toISOString(),
      finish.pages,
      finish.records,
      finish.requests,
      finish.retries,
      finish.rateLimited,
      finish.outcome,
      finish.errorCode ?? null,
      finish.errorMessage ?? null,
      finish.changed ?? null,
      finish.deleted ?? null,
      finish.rejected ?? null,
      finish.passes ?? null,
      finish.settled ?? null,
    ],
  );
}

function optionalNumber(value: unknown): number | undefined {
  return value === null || value === undefined ? undefined : Number(value);
}

export async function selectRecentRuns(connection: DuckDBConnection, limit: number): Promise<RunRow[]> {
  const count = Math.max(0, Math.floor(limit));
  return selectRuns(connection, `SELECT * FROM sync_runs ORDER BY started_at DESC, run_id LIMIT ${count}`);
}

/** The latest run of each resource and mode, however long ago (newest first). */
export function selectLatestRuns(connection: DuckDBConnection): Promise<RunRow[]> {
  return selectRuns(
    connection,
    `SELECT * FROM sync_runs QUALIFY row_number() OVER (PARTITION BY resource, mode ORDER BY started_at DESC, run_id) = 1
     ORDER BY started_at DESC, run_id`,
  );
}

async function selectRuns(connection: DuckDBConnection, sql: string): Promise<RunRow[]> {
  const reader = await connection.runAndReadAll(sql);
  return reader.getRowObjects().map((raw) => {
    const r = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, toJsonFriendly(v)]));
    const row: RunRow = {
      runId: String(r.run_id),
      resource: String(r.resource) as ResourceName,
      mode: String(r.mode) as RunRow['mode'],
      startedAt: new Date(String(r.started_at)),
      outcome: String(r.outcome) as RunOutcome,
    };
    if (r.finished_at !== null) row.finishedAt = new Date(String(r.finished_at));
    // Columns added by later releases are absent from a warehouse opened read-only before its first write.
    const numbers = {
      pages: r.pages,
      records: r.records,
      requests: r.requests,
      retries: r.retries,
      rateLimited: r.rate_limited,
      changed: r.changed,
      deleted: r.deleted,
      rejected: r.rejected,
      passes: r.passes,
    };
    for (const [key, value] of Object.entries(numbers)) {
      const n = optionalNumber(value);
      if (n !== undefined) row[key as 'pages'] = n;
    }
    if (typeof r.settled === 'boolean') row.settled = r.settled;
    if (r.error_code !== null) row.errorCode = String(r.error_code);
    if (r.error_message !== null) row.errorMessage = String(r.error_message);
    return row;
  });
}
