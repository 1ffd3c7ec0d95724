import type { ResourceName } from '../core/resources.js';
import type { RejectedRecord, ServiceUser, WalkMode } from '../core/types.js';
import type { ResourceResult, SyncDeps, SyncSettings } from './context.js';
import { trackedRun, type RunContext } from './tracked-run.js';
import { walkWindow } from './walk-engine.js';
import { planWalk } from './window.js';

/**
 * Walk one resource into the warehouse, recording the run in `sync_runs`: incrementally from its watermark, or
 * fully (the last version observed wins then); users, who have no `updated_at`, by a complete listing. Never throws
 * for walk failures: the result says what happened.
 */
export function syncResource(deps: SyncDeps, settings: SyncSettings, resource: ResourceName, mode: WalkMode): Promise<ResourceResult> {
  if (resource === 'users') return refreshUsers(deps);
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
    },
  );
}

/** Users have no `updated_at`: the only faithful copy is a complete listing, replaced in one transaction. */
export function refreshUsers(deps: SyncDeps): Promise<ResourceResult> {
  return trackedRun(deps, { resource: 'users', mode: 'refresh', name: 'walk' }, async (run: RunContext) => {
    const { api, result, progress, report } = run;
    const users: ServiceUser[] = [];
    const rejects: RejectedRecord[] = [];
    let serverDate: string | null = null;
    report('walking');
    for await (const page of api.listUserPages(deps.signal ? { signal: deps.signal } : {})) {
      serverDate ??= page.serverDate;
      users.push(...page.results);
      for (const reject of page.rejects) {
        rejects.push(reject);
        run.log.warn({ id: reject.id, reason: reject.reason }, 'user rejected: kept in quarantine (rejected_records), retried every run');
      }
      result.pages += 1;
      result.records += page.results.length + page.rejects.length;
      progress.pages = result.pages;
      progress.records = result.records;
      report('walking');
    }
    report('committing');
    const completedAt = serverDate ?? run.now().toISOString();
    const { written } = await deps.warehouse.replaceUsers(users, completedAt, { rejects, runId: run.runId });
    result.written = progress.written = written;
    result.rejected = rejects.length;
    result.passes = 1;
    result.watermark = serverDate;
  });
}
