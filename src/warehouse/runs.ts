/** sync_runs: one row per run, written at start ('running') and at finish. */
import { randomUUID } from 'node:crypto';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ResourceName } from '../core/resources.js';
import type { RunFinish, RunOutcome, RunRow, RunStart } from './types.js';
import { toJsonFriendly } from './values.js';

export async function insertRun(connection: DuckDBConnection, run: RunStart): Promise<string> {
  const runId = randomUUID();
  await connection.run(
    `INSERT INTO sync_runs (run_id, resource, mode, started_at, outcome) VALUES ($1, $2, $3, CAST($4 AS TIMESTAMPTZ), 'running')`,
    [runId, run.resource, run.mode, run.startedAt.toISOString()],
  );
  return runId;
}

export async function updateRun(connection: DuckDBConnection, runId: string, finish: RunFinish): Promise<void> {
  await connection.run(
    `UPDATE sync_runs SET finished_at = CAST($2 AS TIMESTAMPTZ), pages = $3, records = $4, requests = $5, retries = $6,
       rate_limited = $7, outcome = $8, error_code = $9, error_message = $10, changed = $11, deleted = $12 WHERE run_id = $1`,
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
    ],
  );
}

function optionalNumber(value: unknown): number | undefined {
  return value === null || value === undefined ? undefined : Number(value);
}

export async function selectRecentRuns(connection: DuckDBConnection, limit: number): Promise<RunRow[]> {
  const count = Math.max(0, Math.floor(limit));
  const reader = await connection.runAndReadAll(
    `SELECT * FROM sync_runs ORDER BY started_at DESC, run_id LIMIT ${count}`,
  );
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
    const numbers = { pages: r.pages, records: r.records, requests: r.requests, retries: r.retries, rateLimited: r.rate_limited, changed: r.changed, deleted: r.deleted };
    for (const [key, value] of Object.entries(numbers)) {
      const n = optionalNumber(value);
      if (n !== undefined) row[key as 'pages'] = n;
    }
    if (r.error_code !== null) row.errorCode = String(r.error_code);
    if (r.error_message !== null) row.errorMessage = String(r.error_message);
    return row;
  });
}
