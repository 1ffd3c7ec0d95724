import { refreshSummaries, type SummariesResult } from '../../sync/index.js';
import type { CliRuntime } from '../runtime.js';
import { withSyncEnvironment } from '../command-environment.js';
import { commandFailure } from '../outcome.js';
import { formatCount, formatDuration, formatNumber } from '../format.js';

/** @defaultValue of `summaries --recheck`. */
export const POLL_RECHECK_MS = 5 * 60_000;

/**
 * `salesync summaries`: re-read recent meeting logs whose summaries are due (see `refreshSummaries`), on the summaries
 * lane; with REDIS_URL, of the limiter every process shares (like the worker's job, it takes no walk lease:
 * it only writes summaries, through the warehouse's one writer).
 */
export async function summariesCommand(runtime: CliRuntime, options: { recheck?: number } = {}): Promise<SummariesResult> {
  // Polled between syncs: a shorter spacing than sync's hourly one, still backing off from logs that settled.
  const recheckMs = options.recheck ?? POLL_RECHECK_MS;
  const result = await withSyncEnvironment(runtime, { lane: 'summaries' }, (env) =>
    refreshSummaries(env.deps, { ...env.settings, summaries: { ...env.settings.summaries, recheckMs } }),
  );
  runtime.display?.stop();
  if (runtime.interactive) {
    runtime.out(
      `${result.outcome}: ${formatCount(result.candidates, 'log')} due for a re-read, ${formatNumber(result.details)} fetched, ` +
        `${formatNumber(result.summariesChanged)} changed, ${formatNumber(result.vanished)} gone; ${formatCount(result.requests, 'request')} in ${formatDuration(result.durationMs)}`,
    );
  }
  const failure = commandFailure([result]);
  if (failure) throw failure;
  return result;
}
