import { resourceDescriptor, type RecordResourceName, type ResourceName } from '../core/resources.js';
import type { WalkCheckpoint } from '../core/types.js';
import type { ResourceState } from '../warehouse/types.js';
import { trackProgress } from './progress.js';
import { walkResources, type WalkGuard } from './run-sync.js';
import { settleRun } from './settle-run.js';
import { refreshDefinitions, walkPages } from './walk-pages.js';
import { syncResource, type ResourceResult, type SyncDeps, type SyncSettings } from './sync-resource.js';

/**
 * A reconcile sweep lists every record of a resource (no `updated_after`) and compares each with the mirror by
 * content hash: it finds what incremental walks cannot see (link changes, predicted values: `updated_at` does
 * not move) and, once complete, what vanished (the service announces no deletions).
 */
export interface ReconcileOptions {
  /**
   * Meeting logs: fetch every log's single view, not only those whose `updated_at` moved, so summaries
   * generated or regenerated on any log (outside the summaries job's window) are caught. One GET per log.
   * @defaultValue false
   */
  deep?: boolean;
}

export interface ReconcileResult extends Omit<ResourceResult, 'mode'> {
  /** `refresh` for users: their every run is already a complete listing. */
  mode: 'reconcile' | 'refresh';
  deep: boolean;
  /** Drift: rows whose content differed from the mirror (missed changes, missed records, records back). */
  changed: number;
  /** Rows marked deleted because a complete sweep no longer listed them. */
  deleted: number;
  /** Meeting logs whose summaries differed from the mirror. */
  summariesChanged: number;
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

/** The sync_state row of a resource's sweep: its own cursor, so it never touches the incremental walk's state. */
export function reconcileStateKey(resource: RecordResourceName): string {
  return `${resource}#reconcile`;
}

export interface SweepPlan {
  /** Cursor to continue from; null starts a fresh sweep. */
  after: string | null;
  /** Server time the interrupted sweep started at (a fresh sweep learns it from its first response). */
  startedAt: string | null;
  resumed: boolean;
}

/** An interrupted sweep resumes from its checkpoint (its seen ids are in the warehouse); otherwise start afresh. Pure. */
export function planSweep(state: Pick<ResourceState, 'walk'>): SweepPlan {
  const walk = state.walk;
  if (walk && walk.cursor !== null && walk.updatedAfter === null) {
    return { after: walk.cursor, startedAt: walk.startedAt, resumed: true };
  }
  return { after: null, startedAt: null, resumed: false };
}

/** Check the connection, then sweep the resources in parallel. */
export async function runReconcile(deps: SyncDeps, settings: SyncSettings, options: ReconcileRunOptions): Promise<ReconcileReport> {
  const started = Date.now();
  const { results, requests } = await walkResources(
    deps,
    options.resources,
    options.concurrency,
    (resource, signal) => {
      const sweep = (leaseSignal?: AbortSignal) =>
        reconcileResource({ ...deps, signal: leaseSignal ? AbortSignal.any([signal, leaseSignal]) : signal }, settings, resource, options);
      return options.guard ? guardedSweep(options.guard, resource, options.deep === true, sweep) : sweep();
    },
    (resource) => skipped(resource, options.deep === true),
  );
  return {
    ok: results.every((r) => r.outcome === 'succeeded'),
    results,
    requests,
    durationMs: Date.now() - started,
  };
}

/**
 * Sweep one resource, recording the run (mode `reconcile`, with `changed` and `deleted`) in `sync_runs`.
 * Never moves the incremental watermark. Never throws for walk failures: the result says what happened.
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
    const refreshed = await syncResource(deps, settings, 'users', 'full');
    return { ...refreshed, mode: 'refresh', deep, changed: 0, deleted: 0, summariesChanged: 0 };
  }

  const now = deps.now ?? (() => new Date());
  const started = now();
  const api = deps.makeApi();
  const log = deps.logger.child({ resource, reconcile: true });
  const stateKey = reconcileStateKey(resource);
  const result: ReconcileResult = {
    resource, mode: 'reconcile', deep, outcome: 'running', resumed: false, pages: 0, records: 0, written: 0, details: 0,
    requests: 0, retries: 0, rateLimited: 0, durationMs: 0, watermark: null, changed: 0, deleted: 0, summariesChanged: 0,
  };
  const { progress, report } = trackProgress(resource, started.getTime(), () => api.stats().requests, deps.progress);

  const runId = await deps.warehouse.startRun({ resource, mode: 'reconcile', startedAt: started });
  await settleRun(
    { warehouse: deps.warehouse, api, signal: deps.signal, log, runId, started, now, report, what: 'the reconcile' },
    result,
    sweep,
    (r) => ({ pages: r.pages, records: r.written, changed: r.changed, deleted: r.deleted }),
  );
  const line = {
    outcome: result.outcome, deep, resumed: result.resumed, pages: result.pages, written: result.written, changed: result.changed,
    deleted: result.deleted, summariesChanged: result.summariesChanged, requests: result.requests,
  };
  if (result.error) log.error({ ...line, code: result.error.code, err: result.error.message }, 'reconcile failed');
  else if (result.outcome === 'interrupted') log.info(line, 'reconcile interrupted; nothing marked deleted, the next run resumes from its checkpoint');
  else if (result.changed > 0 || result.deleted > 0) log.warn(line, 'reconcile found drift the incremental walks could not see');
  else log.info(line, 'reconcile finished');
  return result;

  async function sweep(): Promise<void> {
    const records = resource as RecordResourceName;
    const { warehouse, signal } = deps;
    const serverDate = await refreshDefinitions(api, warehouse, records, report, signal);
    const plan = planSweep(await warehouse.readState(resource, stateKey));
    result.resumed = progress.resumed = plan.resumed;
    log.info({ deep, resumed: plan.resumed }, plan.resumed ? 'resuming reconcile sweep from its checkpoint' : 'reconcile sweep started');
    // The sweep's start on the server's clock: rows updated since are never marked deleted by it.
    const startedAt = plan.startedAt ?? serverDate ?? now().toISOString();
    const hasSummaries = resourceDescriptor(resource).hasSummaries;

    let fresh = !plan.resumed;
    await walkPages({
      api,
      warehouse,
      resource: records,
      updatedAfter: null,
      after: plan.after,
      settings,
      signal,
      log,
      counters: result,
      progress,
      report,
      // Deep: every log's single view; otherwise only logs whose updated_at moved (link-only changes use the list).
      allDetails: deep,
      commit: async (pages, cursor, after) => {
        const checkpoint: WalkCheckpoint = { cursor, updatedAfter: null, startedAt, mode: 'full' };
        // Only the sweep's first batch starts its seen set afresh; the next may be called before this one ends.
        const first = fresh;
        fresh = false;
        // completeWatermark here lands on the sweep's own state row (last sweep), never on the resource's.
        const committed = await warehouse.commitBatch(records, {
          records: pages.records,
          after,
          ...(hasSummaries ? { summaries: pages.summaries } : {}),
          checkpoint,
          ...(cursor === null ? { completeWatermark: startedAt } : {}),
          stateKey,
          sweep: { key: stateKey, startedAt, fresh: first },
        });
        result.written += committed.written;
        result.changed += committed.changed;
        result.deleted += committed.deleted;
        result.summariesChanged += committed.summariesChanged;
        progress.written = result.written;
      },
    });
  }
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
  const guarded = await guard(resource, 'reconcile', async (leaseSignal) => {
    swept = await sweep(leaseSignal);
    return { ...swept, mode: 'full' };
  });
  if (!swept) return { ...skipped(resource, deep), outcome: guarded.outcome };
  return guarded.error && !swept.error ? { ...swept, error: guarded.error } : swept;
}

function skipped(resource: ResourceName, deep: boolean): ReconcileResult {
  return {
    resource, mode: resource === 'users' ? 'refresh' : 'reconcile', deep, outcome: 'interrupted', resumed: false, pages: 0,
    records: 0, written: 0, details: 0, requests: 0, retries: 0, rateLimited: 0, durationMs: 0, watermark: null,
    changed: 0, deleted: 0, summariesChanged: 0,
  };
}
