import type { Logger } from 'pino';
import type { SalesApi } from '../api/types.js';
import { SalesyncError } from '../core/errors.js';
import { resourceDescriptor, type RecordResourceName, type ResourceName } from '../core/resources.js';
import type { ServiceUser, WalkCheckpoint, WalkMode } from '../core/types.js';
import type { RunOutcome, Warehouse } from '../warehouse/types.js';
import { settleRun } from './settle-run.js';
import { refreshDefinitions, walkPages } from './walk-pages.js';
import { trackProgress, type ProgressSink, type ResourceProgress } from './progress.js';
import { nextWatermark, planWalk } from './window.js';

export interface SyncDeps {
  /** A fresh client per walk, so each run counts its own requests; all share one limiter. */
  makeApi(): SalesApi;
  warehouse: Warehouse;
  logger: Logger;
  progress?: ProgressSink;
  /** Aborting stops the walk after committing the pages already fetched. */
  signal?: AbortSignal;
  /** Local clock, for `_synced_at`-style bookkeeping only; the watermark always comes from the server. */
  now?: () => Date;
}

export interface SyncSettings {
  /** How far before the watermark an incremental walk starts. */
  lookbackMs: number;
  /** Rows buffered before a commit. */
  flushRows: number;
  /** Longest a fetched page waits for its commit. */
  flushIntervalMs: number;
  /** Meeting-log single views in flight per walk. */
  detailConcurrency: number;
  /** Where `runSync` publishes a read-only copy of the warehouse after a successful run. @defaultValue none */
  snapshotPath?: string | null;
}

export interface ResourceResult {
  resource: ResourceName;
  mode: WalkMode | 'refresh' | 'backfill';
  outcome: RunOutcome;
  resumed: boolean;
  pages: number;
  /** Records received from list pages. */
  records: number;
  /** Records committed to the warehouse. */
  written: number;
  /** Single views fetched (meeting logs). */
  details: number;
  requests: number;
  retries: number;
  rateLimited: number;
  durationMs: number;
  /** The watermark after the run (unchanged unless the walk completed). */
  watermark: string | null;
  error?: SalesyncError;
}

/** Walk one resource into the warehouse, recording the run in `sync_runs`. Never throws for walk failures. */
export async function syncResource(deps: SyncDeps, settings: SyncSettings, resource: ResourceName, mode: WalkMode): Promise<ResourceResult> {
  const now = deps.now ?? (() => new Date());
  const started = now();
  const api = deps.makeApi();
  const runMode = resourceDescriptor(resource).incremental ? mode : 'refresh';
  const { progress, report } = trackProgress(resource, started.getTime(), () => api.stats().requests, deps.progress);
  const result: ResourceResult = {
    resource,
    mode: runMode,
    outcome: 'running',
    resumed: false,
    pages: 0,
    records: 0,
    written: 0,
    details: 0,
    requests: 0,
    retries: 0,
    rateLimited: 0,
    durationMs: 0,
    watermark: null,
  };
  const log = deps.logger.child({ resource });

  const runId = await deps.warehouse.startRun({ resource, mode: runMode, startedAt: started });
  await settleRun(
    { warehouse: deps.warehouse, api, signal: deps.signal, log, runId, started, now, report, what: 'the run' },
    result,
    () =>
      resource === 'users'
        ? refreshUsers(api, deps, result, progress, report)
        : walkRecords(api, deps, settings, resource, mode, result, progress, report, log),
    (r) => ({ pages: r.pages, records: r.written }),
  );
  const logLine = { outcome: result.outcome, mode: result.mode, resumed: result.resumed, pages: result.pages, written: result.written, requests: result.requests, retries: result.retries, rateLimited: result.rateLimited, durationMs: result.durationMs };
  if (result.error) log.error({ ...logLine, code: result.error.code, err: result.error.message }, 'walk failed');
  else log.info(logLine, result.outcome === 'interrupted' ? 'walk interrupted; the next run resumes from its checkpoint' : 'walk finished');
  return result;
}

async function walkRecords(
  api: SalesApi,
  deps: SyncDeps,
  settings: SyncSettings,
  resource: RecordResourceName,
  mode: WalkMode,
  result: ResourceResult,
  progress: ResourceProgress,
  report: (phase?: ResourceProgress['phase']) => void,
  log: Logger,
): Promise<void> {
  const { warehouse, signal } = deps;
  const serverDate = await refreshDefinitions(api, warehouse, resource, report, signal);

  const state = await warehouse.readState(resource);
  result.watermark = state.watermark;
  const plan = planWalk(state, mode, settings.lookbackMs);
  if (!plan.resumed && state.walk?.cursor) {
    log.info({ interruptedMode: state.walk.mode }, `starting a ${mode} walk; the interrupted ${state.walk.mode} walk is abandoned`);
  }
  result.resumed = progress.resumed = plan.resumed;
  log.info({ mode, updatedAfter: plan.updatedAfter, resumed: plan.resumed }, plan.resumed ? 'resuming walk from its checkpoint' : 'walk started');

  // The walk's start on the server's clock: the properties call was made before the first page.
  let startedAt = plan.startedAt ?? serverDate;
  const hasSummaries = resourceDescriptor(resource).hasSummaries;

  await walkPages({
    api,
    warehouse,
    resource,
    updatedAfter: plan.updatedAfter,
    after: plan.after,
    settings,
    signal,
    log,
    counters: result,
    progress,
    report,
    onPage: (page) => {
      startedAt ??= page.serverDate;
    },
    commit: async (pages, cursor, after) => {
      if (startedAt === null) throw new SalesyncError('invalid_response', 'the service sent no Date header: cannot place a watermark on its clock');
      const complete = cursor === null;
      const checkpoint: WalkCheckpoint = { cursor, updatedAfter: plan.updatedAfter, startedAt, mode };
      const { written } = await warehouse.commitBatch(resource, {
        records: pages.records,
        after,
        ...(hasSummaries ? { summaries: pages.summaries } : {}),
        checkpoint,
        ...(complete ? { completeWatermark: nextWatermark(startedAt) } : {}),
      });
      result.written += written;
      progress.written = result.written;
      if (complete) result.watermark = nextWatermark(startedAt);
    },
  });
}

async function refreshUsers(
  api: SalesApi,
  deps: SyncDeps,
  result: ResourceResult,
  progress: ResourceProgress,
  report: (phase?: ResourceProgress['phase']) => void,
): Promise<void> {
  // Users have no updated_at: the only faithful copy is a complete listing, replaced in one transaction.
  const users: ServiceUser[] = [];
  let serverDate: string | null = null;
  report('walking');
  for await (const page of api.listUserPages(deps.signal ? { signal: deps.signal } : {})) {
    serverDate ??= page.serverDate;
    users.push(...page.results);
    result.pages += 1;
    result.records += page.results.length;
    progress.pages = result.pages;
    progress.records = result.records;
    report('walking');
  }
  report('committing');
  const { written } = await deps.warehouse.replaceUsers(users, serverDate ?? (deps.now ?? (() => new Date()))().toISOString());
  result.written = progress.written = written;
  result.watermark = serverDate;
}

