import type { ResourceName } from '../core/resources.js';
import type { WalkMode } from '../core/types.js';
import type { ResourceResult, SyncDeps, SyncSettings } from './context.js';
import { trackedRun } from './tracked-run.js';
import { refreshUsers } from './users-refresh.js';
import { walkWindow } from './walk-engine.js';
import { planWalk } from './window.js';
import { retryQuarantined } from './quarantine-retry.js';

/**
 * Walk one resource into the warehouse, recording the run in `sync_runs`: incrementally from its watermark, or
 * fully (the last version observed wins then), then its records in quarantine asked about again; users, who have no
 * `updated_at`, by a complete listing. Never throws for walk failures: the result says what happened.
 */
export function syncResource(deps: SyncDeps, settings: SyncSettings, resource: ResourceName, mode: WalkMode): Promise<ResourceResult> {
  if (resource === 'users') return refreshUsers(deps, settings);
  return trackedRun(
    deps,
    {
      resource,
      mode,
      name: 'walk',
      warning: (r) => (r.settled ? null : 'walk finished, but the list kept moving: the watermark stayed where it was'),
    },
    async (run) => {
      await walkWindow(run, settings, resource, {
        mode,
        stateKey: resource,
        plan: (state) => planWalk(state, mode, settings.lookbackMs),
        movesWatermark: true,
        observedWins: mode === 'full',
        source: 'incremental',
      });
      await retryQuarantined(run, settings, resource, 'incremental');
    },
  );
}
