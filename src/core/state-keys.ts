/**
 * The `sync_state` rows of a resource's walks: the incremental walk's is the resource's name; a backfill and a
 * reconcile sweep keep their own cursors, under `<resource>#<kind>`, so neither touches the incremental state.
 */
import type { RecordResourceName } from './resources.js';

/** The sync_state row of a resource's backfill: separate from the incremental walk's, whose watermark it never moves. */
export function backfillStateKey(resource: RecordResourceName): string {
  return `${resource}#backfill`;
}

/** The sync_state row of a resource's sweep: its own cursor, so it never touches the incremental walk's state. */
export function reconcileStateKey(resource: RecordResourceName): string {
  return `${resource}#reconcile`;
}
