/** sync_state: where each resource's walk stands. Written in the same transaction as the rows it describes. */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ResourceName } from '../core/resources.js';
import type { WalkCheckpoint, WalkMode } from '../core/types.js';
import type { ResourceState } from './types.js';
import { quoteLiteral } from './identifiers.js';

function text(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

/** The columns describing a walk in progress: all NULL when there is none. */
const WALK_COLUMNS = [
  'walk_cursor',
  'walk_updated_after',
  'walk_started_at',
  'walk_mode',
  'walk_pass',
  'walk_pass_started_at',
  'walk_dirty',
  'walk_max_updated_at',
  'walk_local_clock',
] as const;

/** A value as a SQL literal: text quoted, numbers and booleans as they are. */
function literal(value: string | number | boolean | null): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number' && !Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  return typeof value === 'string' ? quoteLiteral(value) : String(value);
}

/**
 * Store the checkpoint. A finished walk (`completeWatermark`) moves the watermark and forgets the walk;
 * a walk whose cursor is null is finished too (a backfill, or a pass followed by another: the watermark does not move).
 * The statement, values inlined: the commit of a batch runs it in the script that stages the batch.
 */
export function checkpointSql(
  resource: string,
  checkpoint: WalkCheckpoint,
  completeWatermark: string | null | undefined,
  now: string,
): string {
  const walkOpen = checkpoint.cursor !== null && completeWatermark === undefined;
  const open = <T extends string | number | boolean | null>(value: T): string => literal(walkOpen ? value : null);
  const complete = completeWatermark !== undefined;
  return `INSERT INTO sync_state (resource, watermark, walk_cursor, walk_updated_after, walk_started_at, walk_mode, last_completed_at, updated_at,
       walk_pass, walk_pass_started_at, walk_dirty, walk_max_updated_at, walk_local_clock)
     VALUES (${literal(resource)}, ${literal(completeWatermark ?? null)}, ${open(checkpoint.cursor)}, ${open(checkpoint.updatedAfter)},
       ${open(checkpoint.startedAt)}, ${open(checkpoint.mode)}, ${literal(complete ? now : null)}, CAST(${literal(now)} AS TIMESTAMPTZ),
       ${open(checkpoint.pass ?? 1)}, ${open(checkpoint.passStartedAt ?? checkpoint.startedAt)}, ${open(checkpoint.dirty ?? false)},
       ${open(checkpoint.maxUpdatedAt ?? null)}, ${open(checkpoint.localClock ?? false)})
     ON CONFLICT (resource) DO UPDATE SET
       watermark = ${complete ? 'excluded.watermark' : 'sync_state.watermark'},
       walk_cursor = excluded.walk_cursor, walk_updated_after = excluded.walk_updated_after,
       walk_started_at = excluded.walk_started_at, walk_mode = excluded.walk_mode,
       walk_pass = excluded.walk_pass, walk_pass_started_at = excluded.walk_pass_started_at, walk_dirty = excluded.walk_dirty,
       walk_max_updated_at = excluded.walk_max_updated_at, walk_local_clock = excluded.walk_local_clock,
       last_completed_at = ${complete ? 'excluded.last_completed_at' : 'sync_state.last_completed_at'},
       updated_at = excluded.updated_at`;
}

/**
 * A walk without checkpoints (users' complete listing) or a sweep ended by `completeSweep`: record when it
 * completed and forget any walk left on the row. The watermark stays as it is.
 */
export async function recordCompletion(connection: DuckDBConnection, stateKey: string, completedAt: string, now: string): Promise<void> {
  await connection.run(
    `INSERT INTO sync_state (resource, last_completed_at, updated_at) VALUES ($1, $2, CAST($3 AS TIMESTAMPTZ))
     ON CONFLICT (resource) DO UPDATE SET last_completed_at = excluded.last_completed_at, updated_at = excluded.updated_at,
       ${WALK_COLUMNS.map((c) => `${c} = NULL`).join(', ')}`,
    [stateKey, completedAt, now],
  );
}

export async function readState(connection: DuckDBConnection, stateKey: string): Promise<ResourceState> {
  // The key is a resource name, or a separate walk's key (`deals#backfill`) whose resource is before the '#'.
  const resource = stateKey.split('#')[0] as ResourceName;
  // `*`: a warehouse of an earlier release, opened read-only, has not been given the pass columns yet.
  const reader = await connection.runAndReadAll(`SELECT * FROM sync_state WHERE resource = $1`, [stateKey]);
  const row = reader.getRowObjects()[0];
  if (!row) return { resource, watermark: null, walk: null, lastCompletedAt: null };
  const startedAt = text(row.walk_started_at);
  let walk: WalkCheckpoint | null = null;
  if (startedAt !== null) {
    const pass = row.walk_pass === null || row.walk_pass === undefined ? 1 : Number(row.walk_pass);
    walk = {
      cursor: text(row.walk_cursor),
      updatedAfter: text(row.walk_updated_after),
      startedAt,
      mode: (text(row.walk_mode) ?? 'full') as WalkMode,
      pass,
      passStartedAt: text(row.walk_pass_started_at) ?? startedAt,
      dirty: row.walk_dirty === true,
      maxUpdatedAt: text(row.walk_max_updated_at),
      localClock: row.walk_local_clock === true,
    };
  }
  return { resource, watermark: text(row.watermark), walk, lastCompletedAt: text(row.last_completed_at) };
}

export async function clearWalk(connection: DuckDBConnection, resource: ResourceName, now: string): Promise<void> {
  await connection.run(
    `UPDATE sync_state SET ${WALK_COLUMNS.map((c) => `${c} = NULL`).join(', ')}, updated_at = CAST($2 AS TIMESTAMPTZ) WHERE resource = $1`,
    [resource, now],
  );
}
