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
  'walk_cursor_key',
  'walk_updated_after',
  'walk_started_at',
  'walk_mode',
  'walk_pass',
  'walk_pass_started_at',
  'walk_dirty',
  'walk_max_updated_at',
  'walk_local_clock',
  'walk_received',
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
 * The statements, values inlined: the commit of a batch runs them in the script that stages the batch. An UPDATE,
 * and an INSERT when the row is missing (the first checkpoint): one `ON CONFLICT DO UPDATE` cost twice as much in
 * every commit.
 */
export function checkpointSql(
  resource: string,
  checkpoint: WalkCheckpoint,
  completeWatermark: string | null | undefined,
  now: string,
  confirmFrom: string | null = null,
): string {
  const walkOpen = checkpoint.cursor !== null && completeWatermark === undefined;
  const open = <T extends string | number | boolean | null>(value: T): string => literal(walkOpen ? value : null);
  const complete = completeWatermark !== undefined;
  const walk: Record<(typeof WALK_COLUMNS)[number], string> = {
    walk_cursor: open(checkpoint.cursor),
    walk_cursor_key: open(checkpoint.cursorKey ?? null),
    walk_updated_after: open(checkpoint.updatedAfter),
    walk_started_at: open(checkpoint.startedAt),
    walk_mode: open(checkpoint.mode),
    walk_pass: open(checkpoint.pass ?? 1),
    walk_pass_started_at: open(checkpoint.passStartedAt ?? checkpoint.startedAt),
    walk_dirty: open(checkpoint.dirty ?? false),
    walk_max_updated_at: open(checkpoint.maxUpdatedAt ?? null),
    walk_local_clock: open(checkpoint.localClock ?? false),
    walk_received: open(checkpoint.received ?? 0),
  };
  // A walk under way leaves the watermark and the last completion as they are.
  const values: Record<string, string> = {
    ...(complete ? { watermark: literal(completeWatermark), confirm_from: literal(confirmFrom), last_completed_at: literal(now) } : {}),
    ...walk,
    updated_at: `CAST(${literal(now)} AS TIMESTAMPTZ)`,
  };
  const key = literal(resource);
  const columns = Object.keys(values);
  return [
    `UPDATE sync_state SET ${columns.map((c) => `${c} = ${values[c]}`).join(', ')} WHERE resource = ${key}`,
    `INSERT INTO sync_state (resource, ${columns.join(', ')})
     SELECT ${key}, ${columns.map((c) => values[c]).join(', ')} WHERE NOT EXISTS (SELECT 1 FROM sync_state WHERE resource = ${key})`,
  ].join(';\n');
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
  if (!row) return { resource, watermark: null, walk: null, lastCompletedAt: null, confirmFrom: null };
  const startedAt = text(row.walk_started_at);
  let walk: WalkCheckpoint | null = null;
  if (startedAt !== null) {
    const pass = row.walk_pass === null || row.walk_pass === undefined ? 1 : Number(row.walk_pass);
    walk = {
      cursor: text(row.walk_cursor),
      cursorKey: text(row.walk_cursor_key),
      updatedAfter: text(row.walk_updated_after),
      startedAt,
      mode: (text(row.walk_mode) ?? 'full') as WalkMode,
      pass,
      passStartedAt: text(row.walk_pass_started_at) ?? startedAt,
      dirty: row.walk_dirty === true,
      maxUpdatedAt: text(row.walk_max_updated_at),
      localClock: row.walk_local_clock === true,
      received: row.walk_received === null || row.walk_received === undefined ? 0 : Number(row.walk_received),
    };
  }
  return {
    resource,
    watermark: text(row.watermark),
    walk,
    lastCompletedAt: text(row.last_completed_at),
    confirmFrom: text(row.confirm_from),
  };
}

/**
 * The next walk of the resource lists every record: its watermark, the window it must confirm and any walk under
 * way are forgotten (what it wrote stays). For changes the incremental window cannot see.
 */
export async function forgetWatermark(connection: DuckDBConnection, resource: ResourceName, now: string): Promise<void> {
  await connection.run(
    `UPDATE sync_state SET watermark = NULL, confirm_from = NULL, ${WALK_COLUMNS.map((c) => `${c} = NULL`).join(', ')},
       updated_at = CAST($2 AS TIMESTAMPTZ)
     WHERE resource = $1`,
    [resource, now],
  );
}

export async function clearWalk(connection: DuckDBConnection, resource: ResourceName, now: string): Promise<void> {
  await connection.run(
    `UPDATE sync_state SET ${WALK_COLUMNS.map((c) => `${c} = NULL`).join(', ')}, updated_at = CAST($2 AS TIMESTAMPTZ) WHERE resource = $1`,
    [resource, now],
  );
}
