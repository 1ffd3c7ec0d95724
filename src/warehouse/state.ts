/** sync_state: where each resource's walk stands. Written in the same transaction as the rows it describes. */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ResourceName } from '../core/resources.js';
import type { WalkCheckpoint, WalkMode } from '../core/types.js';
import type { ResourceState } from './types.js';

function text(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/**
 * Store the checkpoint. A finished walk (`completeWatermark`) moves the watermark and forgets the walk;
 * a walk whose cursor is null is finished too (a backfill: the watermark does not move).
 */
export async function writeCheckpoint(
  connection: DuckDBConnection,
  /** The sync_state row: a resource name, or a separate walk's key such as `deals#backfill`. */
  resource: string,
  checkpoint: WalkCheckpoint,
  completeWatermark: string | undefined,
  now: string,
): Promise<void> {
  const walkOpen = checkpoint.cursor !== null && completeWatermark === undefined;
  await connection.run(
    `INSERT INTO sync_state (resource, watermark, walk_cursor, walk_updated_after, walk_started_at, walk_mode, last_completed_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, CAST($8 AS TIMESTAMPTZ))
     ON CONFLICT (resource) DO UPDATE SET
       watermark = CASE WHEN $9 THEN excluded.watermark ELSE sync_state.watermark END,
       walk_cursor = excluded.walk_cursor, walk_updated_after = excluded.walk_updated_after,
       walk_started_at = excluded.walk_started_at, walk_mode = excluded.walk_mode,
       last_completed_at = CASE WHEN $9 THEN excluded.last_completed_at ELSE sync_state.last_completed_at END,
       updated_at = excluded.updated_at`,
    [
      resource,
      completeWatermark ?? null,
      walkOpen ? checkpoint.cursor : null,
      walkOpen ? checkpoint.updatedAfter : null,
      walkOpen ? checkpoint.startedAt : null,
      walkOpen ? checkpoint.mode : null,
      completeWatermark === undefined ? null : now,
      now,
      completeWatermark !== undefined,
    ],
  );
}

/** Users have no walk: a complete listing only records when it completed. */
export async function recordCompletion(connection: DuckDBConnection, resource: ResourceName, completedAt: string, now: string): Promise<void> {
  await connection.run(
    `INSERT INTO sync_state (resource, last_completed_at, updated_at) VALUES ($1, $2, CAST($3 AS TIMESTAMPTZ))
     ON CONFLICT (resource) DO UPDATE SET last_completed_at = excluded.last_completed_at, updated_at = excluded.updated_at`,
    [resource, completedAt, now],
  );
}

export async function readState(connection: DuckDBConnection, stateKey: string): Promise<ResourceState> {
  // The key is a resource name, or a separate walk's key (`deals#backfill`) whose resource is before the '#'.
  const resource = stateKey.split('#')[0] as ResourceName;
  const reader = await connection.runAndReadAll(
    `SELECT watermark, walk_cursor, walk_updated_after, walk_started_at, walk_mode, last_completed_at FROM sync_state WHERE resource = $1`,
    [stateKey],
  );
  const row = reader.getRowObjects()[0];
  if (!row) return { resource, watermark: null, walk: null, lastCompletedAt: null };
  const startedAt = text(row.walk_started_at);
  return {
    resource,
    watermark: text(row.watermark),
    walk:
      startedAt === null
        ? null
        : {
            cursor: text(row.walk_cursor),
            updatedAfter: text(row.walk_updated_after),
            startedAt,
            mode: (text(row.walk_mode) ?? 'full') as WalkMode,
          },
    lastCompletedAt: text(row.last_completed_at),
  };
}

export async function clearWalk(connection: DuckDBConnection, resource: ResourceName, now: string): Promise<void> {
  await connection.run(
    `UPDATE sync_state SET walk_cursor = NULL, walk_updated_after = NULL, walk_started_at = NULL, walk_mode = NULL,
       updated_at = CAST($2 AS TIMESTAMPTZ) WHERE resource = $1`,
    [resource, now],
  );
}
