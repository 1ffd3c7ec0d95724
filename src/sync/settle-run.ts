import type { Logger } from 'pino';
import type { SalesApi } from '../api/types.js';
import type { SalesyncError } from '../core/errors.js';
import type { RunFinish, RunOutcome, Warehouse } from '../warehouse/types.js';
import type { ResourcePhase } from './progress.js';
import { toSalesyncError } from './errors.js';

/** What every walk reports about itself, whatever its kind. */
export interface RunCounters {
  outcome: RunOutcome;
  error?: SalesyncError;
  requests: number;
  retries: number;
  rateLimited: number;
  durationMs: number;
}

export interface SettleContext {
  warehouse: Warehouse;
  api: SalesApi;
  signal?: AbortSignal | undefined;
  log: Logger;
  /** The `sync_runs` row opened for this walk. */
  runId: string;
  started: Date;
  now: () => Date;
  report: (phase: ResourcePhase) => void;
  /** Names the walk in the warning when its run row cannot be written, e.g. `the backfill`. */
  what: string;
}

/** The run row's figures that depend on the kind of walk. */
export type RunFigures = Pick<RunFinish, 'pages' | 'records'> & Partial<Pick<RunFinish, 'changed' | 'deleted'>>;

/**
 * Run `walk`, then settle its run: the outcome (interrupted when the signal was aborted, else failed with a
 * SalesyncError), the client's counters, the duration, the final progress phase, and the `sync_runs` row closed
 * with `figures`. A run row that cannot be written is logged: it must never hide the walk's own outcome.
 * Never throws for a failed walk: the result carries it.
 */
export async function settleRun<R extends RunCounters>(
  context: SettleContext,
  result: R,
  walk: () => Promise<void>,
  figures: (result: R) => RunFigures,
): Promise<R> {
  try {
    await walk();
    result.outcome = 'succeeded';
  } catch (error) {
    const aborted = context.signal?.aborted === true;
    result.outcome = aborted ? 'interrupted' : 'failed';
    if (!aborted) result.error = toSalesyncError(error);
  }
  const stats = context.api.stats();
  result.requests = stats.requests;
  result.retries = stats.retries;
  result.rateLimited = stats.rateLimited;
  result.durationMs = context.now().getTime() - context.started.getTime();
  context.report(result.outcome === 'succeeded' ? 'done' : result.outcome === 'interrupted' ? 'interrupted' : 'failed');
  try {
    await context.warehouse.finishRun(context.runId, {
      finishedAt: context.now(),
      requests: result.requests,
      retries: result.retries,
      rateLimited: result.rateLimited,
      outcome: result.outcome,
      errorCode: result.error?.code ?? null,
      errorMessage: result.error?.message ?? null,
      ...figures(result),
    });
  } catch (error) {
    // The walk's data is already committed or rolled back.
    context.log.warn({ err: toSalesyncError(error).message }, `could not record ${context.what} in sync_runs`);
  }
  return result;
}
