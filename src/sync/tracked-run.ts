import type { Logger } from 'pino';
import type { SalesApi } from '../api/types.js';
import type { RateLane } from '../core/rate-limiter.js';
import type { ResourceName } from '../core/resources.js';
import type { RunFinish, Warehouse } from '../warehouse/types.js';
import { emptyResult, type ResourceResult, type RunMode, type SyncDeps } from './context.js';
import { toSalesyncError } from './errors.js';
import { trackProgress, type ResourcePhase, type ResourceProgress } from './progress.js';
import { enforcePropertyPolicy } from './property-policy.js';

/** What a run's body works with: its own client, logger, result, progress and `sync_runs` row. */
export interface RunContext<R extends ResourceResult = ResourceResult> {
  deps: SyncDeps;
  api: SalesApi;
  log: Logger;
  result: R;
  progress: ResourceProgress;
  report: (phase?: ResourcePhase) => void;
  runId: string;
  now: () => Date;
}

/** How a kind of run is recorded and told. */
export interface RunSpec<R extends ResourceResult> {
  resource: ResourceName;
  mode: RunMode;
  /** The share of the rate budget its client spends. @defaultValue the environment's */
  lane?: RateLane;
  /** Bound to every log line of the run, e.g. `{ backfill: true }`. */
  logFields?: Record<string, unknown>;
  /** Extra fields of the result, on top of `emptyResult`. */
  extra?: Omit<R, keyof ResourceResult>;
  /** Names the run in its log lines, e.g. `backfill`. */
  name: string;
  /** The run row's kind-specific figures. @defaultValue pages, records written, rejects, passes, settled */
  figures?: (result: R) => Partial<RunFinish>;
  /** Fields of the closing log line beyond the common ones. */
  logLine?: (result: R) => Record<string, unknown>;
  /** A warning worth raising on a run that completed (drift found, an unsettled list). */
  warning?: (result: R) => string | null;
}

/**
 * The template every run follows: make its client, open its `sync_runs` row, run `body`, then settle: the outcome
 * (interrupted when the signal fired, failed with a SalesyncError, or succeeded — with rejects when records went to
 * quarantine), the client's counters, the final progress phase, the row closed, one log line. Never throws for a
 * failed run: the result carries it. Throws only when the row cannot be opened (the warehouse is unusable).
 */
export async function trackedRun<R extends ResourceResult>(
  deps: SyncDeps,
  spec: RunSpec<R>,
  body: (run: RunContext<R>) => Promise<void>,
): Promise<R> {
  const now = deps.now ?? (() => new Date());
  const started = now();
  const api = deps.makeApi(spec.lane);
  const log = deps.logger.child({ resource: spec.resource, ...spec.logFields });
  const result = { ...emptyResult(spec.resource, spec.mode), ...spec.extra } as R;
  const { progress, report } = trackProgress(spec.resource, started.getTime(), () => api.stats().requests, deps.progress, spec.mode);
  const runId = await deps.warehouse.startRun({ resource: spec.resource, mode: spec.mode, startedAt: started });
  try {
    // Before anything is written: stored data brought in line with a changed property policy.
    if (deps.propertyPolicy && spec.resource !== 'users')
      await enforcePropertyPolicy(deps.warehouse, deps.propertyPolicy, spec.resource, log);
    await body({ deps, api, log, result, progress, report, runId, now });
    result.outcome = result.rejected > 0 ? 'succeeded_with_rejects' : 'succeeded';
  } catch (error) {
    const aborted = deps.signal?.aborted === true;
    result.outcome = aborted ? 'interrupted' : 'failed';
    if (!aborted) result.error = toSalesyncError(error);
  }
  const stats = api.stats();
  result.requests = stats.requests;
  result.retries = stats.retries;
  result.rateLimited = stats.rateLimited;
  result.durationMs = now().getTime() - started.getTime();
  report(result.outcome === 'failed' ? 'failed' : result.outcome === 'interrupted' ? 'interrupted' : 'done');
  try {
    await deps.warehouse.finishRun(runId, {
      finishedAt: now(),
      requests: result.requests,
      retries: result.retries,
      rateLimited: result.rateLimited,
      outcome: result.outcome,
      errorCode: result.error?.code ?? null,
      errorMessage: result.error?.message ?? null,
      pages: result.pages,
      records: result.written,
      rejected: result.rejected,
      passes: result.passes,
      settled: result.settled,
      ...spec.figures?.(result),
    });
  } catch (error) {
    // The run's data is already committed or rolled back: a row that cannot be written must not hide its outcome.
    log.warn({ err: toSalesyncError(error).message }, `could not record the ${spec.name} in sync_runs`);
  }
  tell(log, spec, result);
  return result;
}

function tell<R extends ResourceResult>(log: Logger, spec: RunSpec<R>, result: R): void {
  const line = {
    outcome: result.outcome,
    mode: result.mode,
    resumed: result.resumed,
    pages: result.pages,
    written: result.written,
    requests: result.requests,
    retries: result.retries,
    rateLimited: result.rateLimited,
    durationMs: result.durationMs,
    ...(result.passes > 1 ? { passes: result.passes } : {}),
    ...(result.rejected > 0 ? { rejected: result.rejected } : {}),
    ...spec.logLine?.(result),
  };
  if (result.error) {
    log.error({ ...line, code: result.error.code, err: result.error.message }, `${spec.name} failed`);
    return;
  }
  if (result.outcome === 'interrupted') {
    log.info(line, `${spec.name} interrupted; the next run resumes from its checkpoint`);
    return;
  }
  const warning = spec.warning?.(result) ?? null;
  if (warning) log.warn(line, warning);
  else if (result.rejected > 0)
    log.warn(line, `${spec.name} finished with ${result.rejected} record(s) in quarantine: see rejected_records`);
  else log.info(line, `${spec.name} finished`);
}

/**
 * A run that did not take place because another process was walking the resource: recorded in `sync_runs` as
 * `skipped` (`walk_in_progress`), with the others, so `status` and the history show why nothing was fetched.
 */
export async function recordSkippedRun(
  warehouse: Warehouse,
  resource: ResourceName,
  mode: RunMode,
  message: string,
): Promise<ResourceResult> {
  await recordUnwalkedRun(warehouse, resource, mode, 'skipped', { code: 'walk_in_progress', message });
  return emptyResult(resource, mode, 'skipped');
}

/**
 * A run that ended before its walk began, recorded in `sync_runs` with the others: skipped (the resource was
 * busy), or failed (the key refused at the connection check, the warehouse locked), so `status --check` and the
 * metrics see it as they see a walk's failure.
 */
export async function recordUnwalkedRun(
  warehouse: Warehouse,
  resource: ResourceName,
  mode: RunMode,
  outcome: 'skipped' | 'failed',
  reason: { code: string; message: string },
): Promise<void> {
  const runId = await warehouse.startRun({ resource, mode, startedAt: new Date() });
  await warehouse.finishRun(runId, {
    finishedAt: new Date(),
    pages: 0,
    records: 0,
    requests: 0,
    retries: 0,
    rateLimited: 0,
    outcome,
    errorCode: reason.code,
    errorMessage: reason.message,
  });
}
