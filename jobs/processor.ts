import type { Job, Queue } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { Logger } from 'pino';
import { SalesyncError } from '../src/core/errors.js';
import type { ResourceName } from '../src/core/resources.js';
import type { ResourceProgress, ResourceResult, RunMode, SyncDeps, WalkGuard } from '../src/sync/index.js';
import { emptyResult, estimateRemainingMs, recordUnwalkedRun, toSalesyncError } from '../src/sync/index.js';
import { processBackfillJob, type BackfillJobData } from './backfill-job.js';
import type { JobEnvironment } from './job-environment.js';
import { busyDelayMs, settleJob, verdictFor, verdictForError } from './job-outcome.js';
import type { WorkerMetrics } from './metrics.js';
import type { JobKind, TickJobData } from './queue.js';
import { processReconcileJob, type ReconcileJobData } from './reconcile-job.js';
import { processSummariesJob, type SummariesJobData } from './summaries-job.js';
import { processSyncJob, type SyncJobData } from './sync-job.js';
import { processTickJob } from './tick-job.js';

export interface ProcessorOptions {
  queue: Queue;
  jobs: JobEnvironment;
  /** The per-resource lease (every walk of a resource, whatever its kind, takes it). */
  guard: WalkGuard;
  metrics: WorkerMetrics;
  logger: Logger;
  /** Aborted on SIGTERM/SIGINT: walks commit the pages in hand and stop. */
  shutdown: AbortSignal;
  /** The shortest wait of a reconcile or backfill job that found its resource walked elsewhere (see busyDelayMs). */
  busyRetryMs: number;
}

/** Kinds no other walk stands in for: skipped while their resource is busy, they wait for it instead of ending. */
const WAITS_FOR_RESOURCE: ReadonlySet<JobKind> = new Set(['reconcile', 'backfill']);

/** Progress reported to the job (the dashboard and `status` show it), at most once a second. */
function jobProgress(job: Job): SyncDeps['progress'] {
  let last = 0;
  let lastWritten = -1;
  return {
    update(p: Readonly<ResourceProgress>) {
      const now = Date.now();
      // Commits and the end are always reported; page-by-page progress at most once a second.
      const final = p.phase === 'done' || p.phase === 'failed' || p.phase === 'interrupted';
      if (!final && p.written === lastWritten && now - last < 1000) return;
      last = now;
      lastWritten = p.written;
      void job
        .updateProgress({
          phase: p.phase,
          pages: p.pages,
          // A resumed walk counts on from the records its earlier runs received.
          records: p.recordsBefore + p.records,
          written: p.written,
          requests: p.requests,
          expected: p.expected ?? null,
          etaMs: final ? null : estimateRemainingMs(p.records, p.expected, now - p.startedAtMs, p.recordsBefore),
        })
        .catch(() => undefined);
    },
  };
}

/**
 * The worker's one processor: dispatch on the job's name to a thin processor over src/sync, then tell the
 * queue what to do (complete, delay, retry, or fail for good).
 */
export function createProcessor(options: ProcessorOptions) {
  const { jobs, guard, metrics } = options;
  const recordFailure = async (kind: JobKind, data: unknown, error: SalesyncError): Promise<void> => {
    const target = runTarget(kind, data);
    if (!target) return;
    metrics.recordResult(kind, emptyResult(target.resource, target.mode, 'failed'));
    try {
      await recordUnwalkedRun(jobs.env.warehouse, target.resource, target.mode, 'failed', error);
    } catch (recording) {
      // The warehouse may be the failure (a locked file): the log line and the metrics still say it.
      options.logger.warn({ err: toSalesyncError(recording).message }, 'could not record the failed job in sync_runs');
    }
  };
  return async (job: Job, token?: string, jobSignal?: AbortSignal): Promise<unknown> => {
    const kind = job.name as JobKind;
    const log = options.logger.child({ job: job.id, kind });
    const signal = jobSignal ? AbortSignal.any([options.shutdown, jobSignal]) : options.shutdown;
    const deps = (base: SyncDeps): SyncDeps => ({ ...base, signal, progress: jobProgress(job) });
    let results: JobResult[];
    try {
      switch (kind) {
        case 'tick':
          return await processTickJob(options.queue, job.data as TickJobData);
        case 'sync': {
          const report = await processSyncJob({ deps: deps(jobs.env.deps), settings: jobs.env.settings }, job.data as SyncJobData, guard);
          results = report.results;
          break;
        }
        case 'backfill':
          results = [await processBackfillJob(deps(jobs.backfillDeps), jobs.env.settings, job.data as BackfillJobData, guard)];
          break;
        case 'reconcile': {
          const data = job.data as ReconcileJobData;
          const report = await processReconcileJob(
            { ...jobs.env, deps: deps(data.deep ? jobs.summariesDeps : jobs.env.deps) },
            data,
            guard,
          );
          results = report.results;
          break;
        }
        case 'summaries': {
          const result = await processSummariesJob({ ...jobs.env, deps: deps(jobs.summariesDeps) }, job.data as SummariesJobData);
          results = [{ ...result, resource: 'meeting-logs' }];
          break;
        }
        default:
          throw new UnrecoverableError(`unknown job kind "${String(job.name)}"`);
      }
    } catch (error) {
      if (!(error instanceof SalesyncError)) throw error;
      // Raised before any walk started (the connection check, the warehouse): recorded as the walk's failure
      // would be, so status --check and the metrics see a key refused or a file locked, not just the log.
      log.error({ code: error.code, err: error.message }, 'job failed before its walk');
      if (!signal.aborted) await recordFailure(kind, job.data, error);
      await settleJob(job, token, verdictForError(toSalesyncError(error), Date.now()));
      return undefined;
    }
    for (const result of results) metrics.recordResult(kind, result);
    const now = Date.now();
    const verdict = verdictFor(
      results,
      now,
      WAITS_FOR_RESOURCE.has(kind) ? busyDelayMs(now - job.timestamp, options.busyRetryMs) : undefined,
    );
    if (verdict.action !== 'complete')
      log.info({ action: verdict.action, reason: 'reason' in verdict ? verdict.reason : verdict.error.code }, 'job not complete');
    await settleJob(job, token, verdict);
    return results.map((r) => ({ resource: r.resource, outcome: r.outcome, written: r.written, requests: r.requests }));
  };
}

/** What every kind's walk reports, as far as the queue and the metrics need it. */
type JobResult =
  | ResourceResult
  | (Pick<ResourceResult, 'resource' | 'outcome' | 'written' | 'requests' | 'rateLimited' | 'durationMs'> & { error?: SalesyncError });

/** The resource and run mode a job walks, as its runs are recorded; null for a tick, which walks nothing. */
function runTarget(kind: JobKind, data: unknown): { resource: ResourceName; mode: RunMode } | null {
  const target = (resource: ResourceName, mode: RunMode) => ({ resource, mode: resource === 'users' ? ('refresh' as const) : mode });
  switch (kind) {
    case 'sync':
      return target((data as SyncJobData).resource, (data as SyncJobData).mode);
    case 'backfill':
      return target((data as BackfillJobData).resource, 'backfill');
    case 'reconcile':
      return target((data as ReconcileJobData).resource, 'reconcile');
    case 'summaries':
      return target('meeting-logs', 'summaries');
    default:
      return null;
  }
}
