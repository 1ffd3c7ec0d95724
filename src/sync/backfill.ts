import type { RecordResourceName } from '../core/resources.js';
import { backfillStateKey } from '../core/state-keys.js';
import type { ResourceResult, SyncDeps, SyncSettings } from './context.js';
import { trackedRun } from './tracked-run.js';
import { walkWindow } from './walk-engine.js';

/**
 * A backfill replays one resource's records updated at or after `since` (everything when null).
 *
 * `until`: the list API has only `updated_after`, so a walk cannot stop at an upper bound, and its order is
 * unspecified, so it cannot stop early either. Records updated after `until` are still the service's true
 * data: they are written like the rest. `until` is kept for the log and the run record only.
 */
export interface BackfillOptions {
  since: string | null;
  until: string | null;
}

/**
 * Walk one resource's window into the warehouse: resumable (its own checkpoint under `<resource>#backfill`),
 * recorded in `sync_runs` with mode `backfill`, the last version observed wins, and the incremental watermark never
 * moves. Never throws for walk failures: the result says what happened.
 */
export function backfillResource(
  deps: SyncDeps,
  settings: SyncSettings,
  resource: RecordResourceName,
  options: BackfillOptions,
): Promise<ResourceResult> {
  const mode = options.since === null ? 'full' : 'incremental';
  return trackedRun(
    deps,
    {
      resource,
      mode: 'backfill',
      name: 'backfill',
      logFields: { backfill: true },
      logLine: () => ({ since: options.since, until: options.until }),
    },
    async (run) => {
      await walkWindow(run, settings, resource, {
        mode,
        stateKey: backfillStateKey(resource),
        // Resume only the same window: a cursor is valid only for the query that made it.
        plan: ({ walk }) =>
          walk !== null && walk.cursor !== null && walk.updatedAfter === options.since && walk.mode === mode
            ? { mode, updatedAfter: options.since, after: walk.cursor, resumedFrom: walk, resumed: true }
            : { mode, updatedAfter: options.since, after: null, resumedFrom: null, resumed: false },
        movesWatermark: false,
        observedWins: true,
        source: 'backfill',
      });
    },
  );
}
