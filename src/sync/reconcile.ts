import { SalesyncError } from '../core/errors.js';
import type { RecordResourceName, ResourceName } from '../core/resources.js';
import { reconcileStateKey } from '../core/state-keys.js';
import type { ResourceState } from '../warehouse/types.js';
import { emptyResult, isSuccess, type ResourceResult, type SyncDeps, type SyncSettings } from './context.js';
import { walkResources, type WalkGuard } from './run-sync.js';
import { readSingleViews } from './single-views.js';
import { syncResource } from './sync-resource.js';
import { trackedRun, type RunContext } from './tracked-run.js';
import { walkWindow } from './walk-engine.js';
import type { WalkPlan } from './window.js';

/**
 * A reconcile sweep lists every record of a resource (no `updated_after`) and compares each with the mirror by
 * content hash: it finds what incremental walks cannot see (link changes, predicted values: `updated_at` does
 * not move) and, once a clean sweep is complete, what vanished (the service announces no deletions).
 */
export interface ReconcileOptions {
  /**
   * Meeting logs: fetch every log's single view, not only those whose `updated_at` moved, so summaries
   * generated or regenerated on any log are caught. One GET per log. @defaultValue false
   */
  deep?: boolean;
  /** Mark every confirmed deletion even when more than `settings.deleteShare` of the table is missing. @defaultValue false */
  force?: boolean;
}

export interface ReconcileResult extends ResourceResult {
  deep: boolean;
}

export interface ReconcileRunOptions extends ReconcileOptions {
  resources: readonly ResourceName[];
  /** Resources swept at once. */
  concurrency: number;
  /**
   * Wraps each resource's sweep as a sync's walks are wrapped: with Redis, the resource's lease, so a sweep
   * never overlaps a sync or backfill of the same resource in any process. @defaultValue the sweep runs as it is
   */
  guard?: WalkGuard;
}

export interface ReconcileReport {
  ok: boolean;
  results: ReconcileResult[];
  /** Requests of the whole run, the connection check included. */
  requests: number;
  durationMs: number;
}

/** An interrupted sweep resumes from its checkpoint (its seen ids are in the warehouse); otherwise start afresh. Pure. */
export function planSweep(state: Pick<ResourceState, 'walk'>): WalkPlan {
  const walk = state.walk;
  if (walk && walk.cursor !== null && walk.updatedAfter === null) {
    return { mode: 'full', updatedAfter: null, after: walk.cursor, resumedFrom: walk, resumed: true };
  }
  return { mode: 'full', updatedAfter: null, after: null, resumedFrom: null, resumed: false };
}

/**
 * Whether a sweep may mark its confirmed-missing rows deleted without `force`: more than `share` of the live
 * rows missing at once is likelier a service fault (an empty answer, a key that sees less) than deletions. A few
 * rows are always allowed (unless `share` is 0): else one deletion in a table of nine failed every reconcile until
 * someone gave `--force`. A row marked so by mistake is unmarked when it is listed again. Pure.
 */
export function deletionsAllowed(missing: number, live: number, share: number, force: boolean): boolean {
  return force || missing === 0 || missing <= Math.max(share * live, share > 0 ? DELETIONS_ALWAYS_ALLOWED : 0);
}

/** Confirmed deletions a sweep marks whatever the table's size (see `deletionsAllowed`). */
const DELETIONS_ALWAYS_ALLOWED = 5;

/** Check the connection, then sweep the resources in parallel. */
export async function runReconcile(deps: SyncDeps, settings: SyncSettings, options: ReconcileRunOptions): Promise<ReconcileReport> {
  const started = Date.now();
  const deep = options.deep === true;
  const { results, requests } = await walkResources(
    deps,
    options.resources,
    options.concurrency,
    (resource, signal) => {
      const sweep = (leaseSignal?: AbortSignal) =>
        reconcileResource({ ...deps, signal: leaseSignal ? AbortSignal.any([signal, leaseSignal]) : signal }, settings, resource, options);
      return options.guard ? guardedSweep(options.guard, resource, deep, sweep) : sweep();
    },
    (resource) => skipped(resource, deep),
  );
  return {
    ok: results.every((r) => isSuccess(r.outcome)),
    results,
    requests,
    durationMs: Date.now() - started,
  };
}

/**
 * Sweep one resource, recording the run (mode `reconcile`, with `changed` and `deleted`) in `sync_runs`. A row
 * is marked deleted only after a clean sweep did not list it and a GET of it answered `not_found`; one that is
 * found is written as it is. Never moves the incremental watermark. Never throws for walk failures.
 */
export async function reconcileResource(
  deps: SyncDeps,
  settings: SyncSettings,
  resource: ResourceName,
  options: ReconcileOptions = {},
): Promise<ReconcileResult> {
  const deep = options.deep === true;
  if (resource === 'users') {
    // Users have no updated_at: every run is already a complete listing that marks the vanished.
    return { ...(await syncResource(deps, settings, 'users', 'full')), deep };
  }
  const first = await sweepOnce(deps, settings, resource, options);
  // A resumed sweep vouches for the rows it listed before the interruption only as they stood then: one deleted or
  // changed since (a link, which moves no updated_at) would wait for the next sweep. One fresh sweep follows it.
  if (!first.resumed || !first.settled || first.error || deps.signal?.aborted) return first;
  deps.logger.info({ resource }, 'the sweep resumed from a checkpoint: sweeping again from the first page for what changed since');
  return addedUp(first, await sweepOnce(deps, settings, resource, options));
}

/** Two sweeps of one run as one result: the second's outcome and state, both sweeps' counts. */
function addedUp(first: ReconcileResult, second: ReconcileResult): ReconcileResult {
  const counts = [
    'pages',
    'records',
    'written',
    'details',
    'requests',
    'retries',
    'rateLimited',
    'durationMs',
    'changed',
    'deleted',
    'summariesChanged',
  ] as const;
  const sum = { ...second, resumed: true };
  for (const key of counts) sum[key] = first[key] + second[key];
  return sum;
}

/** One sweep of a record resource, resumed from its checkpoint when there is one (see `reconcileResource`). */
function sweepOnce(
  deps: SyncDeps,
  settings: SyncSettings,
  resource: RecordResourceName,
  options: ReconcileOptions,
): Promise<ReconcileResult> {
  const deep = options.deep === true;
  const stateKey = reconcileStateKey(resource);
  return trackedRun<ReconcileResult>(
    deps,
    {
      resource,
      mode: 'reconcile',
      name: 'reconcile',
      logFields: { reconcile: true },
      extra: { deep },
      figures: (r) => ({ changed: r.changed, deleted: r.deleted }),
      logLine: (r) => ({ deep, changed: r.changed, deleted: r.deleted, summariesChanged: r.summariesChanged }),
      warning: (r) =>
        !r.settled
          ? 'reconcile swept the list, but it kept moving: nothing was marked deleted this time'
          : r.changed > 0 || r.deleted > 0
            ? 'reconcile found drift the incremental walks could not see'
            : null,
    },
    async (run) => {
      const end = await walkWindow(run, settings, resource, {
        mode: 'full',
        stateKey,
        plan: planSweep,
        movesWatermark: false,
        observedWins: true,
        source: 'reconcile',
        allDetails: deep,
        sweepKey: stateKey,
      });
      // Only a clean sweep knows what vanished; an unsettled one forgets what it saw and marks nothing.
      const candidates = end.settled ? await deps.warehouse.sweepCandidates(resource, stateKey) : { ids: [], live: 0 };
      if (!deletionsAllowed(candidates.ids.length, candidates.live, settings.deleteShare, options.force === true)) {
        await deps.warehouse.completeSweep(resource, {
          key: stateKey,
          stateKey,
          deletedIds: [],
          deletedAt: run.now().toISOString(),
          completedAt: end.startedAt,
        });
        throw tooManyMissing(resource, candidates.ids.length, candidates.live, settings.deleteShare);
      }
      const gone = await confirmDeletions(run, settings, resource, candidates.ids);
      run.result.deleted = await deps.warehouse.completeSweep(resource, {
        key: stateKey,
        stateKey,
        deletedIds: gone,
        deletedAt: run.now().toISOString(),
        completedAt: end.startedAt,
        runId: run.runId,
      });
    },
  );
}

/**
 * GET each row a clean sweep did not list: `not_found` confirms it gone (branching on the code: the spec gives no
 * status for it); a record that answers is written as it is (the list stepped over it); an invalid one goes to
 * quarantine and is not marked. Returns the ids confirmed gone.
 */
async function confirmDeletions(
  run: RunContext,
  settings: SyncSettings,
  resource: RecordResourceName,
  ids: readonly string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  run.log.info({ candidates: ids.length }, 'confirming rows the sweep did not list, one GET each');
  run.report('walking');
  const read = await readSingleViews(run, settings, resource, ids, { source: 'reconcile' });
  if (read.found > 0 || read.rejected > 0) {
    run.log.warn(
      { found: read.found, rejected: read.rejected },
      'rows the sweep did not list still exist: written as they are, not marked deleted',
    );
  }
  return read.gone;
}

function tooManyMissing(resource: RecordResourceName, missing: number, live: number, share: number): SalesyncError {
  const percent = (n: number) => `${Math.round(n * 1000) / 10}%`;
  return new SalesyncError(
    'reconcile_too_many_missing',
    `a complete sweep of ${resource} did not list ${missing} of ${live} live rows (${percent(live === 0 ? 1 : missing / live)}), more than ` +
      `SALESYNC_DELETE_SHARE (${percent(share)}); nothing was marked deleted. Check the service and the key's access; ` +
      `if they really are gone, run \`salesync reconcile ${resource} --force\``,
    { context: { resource, missing, live, share } },
  );
}

/**
 * A sweep run by the guard: its own result, with the guard's error where the guard added one (a lost lease);
 * or, when the guard did not run it (another process holds the resource), the guard's outcome with no counts.
 */
async function guardedSweep(
  guard: WalkGuard,
  resource: ResourceName,
  deep: boolean,
  sweep: (leaseSignal: AbortSignal) => Promise<ReconcileResult>,
): Promise<ReconcileResult> {
  let swept: ReconcileResult | undefined;
  const guarded = await guard(resource, 'reconcile', async (leaseSignal) => (swept = await sweep(leaseSignal)));
  if (!swept) return { ...skipped(resource, deep), outcome: guarded.outcome };
  return guarded.error && !swept.error ? { ...swept, error: guarded.error } : swept;
}

function skipped(resource: ResourceName, deep: boolean): ReconcileResult {
  return { ...emptyResult(resource, resource === 'users' ? 'refresh' : 'reconcile', 'interrupted'), deep };
}
