import { refreshSummaries, type SummariesResult } from '../../sync/index.js';
import type { CliRuntime } from '../runtime.js';
import { withSyncEnvironment } from '../command-environment.js';
import { formatDuration } from '../table.js';

/**
 * `salesync summaries`: re-fetch recent meeting logs whose summaries are empty or not final, on the summaries
 * lane; with REDIS_URL, of the limiter every process shares (like the worker's job, it takes no walk lease:
 * it only writes summaries, through the warehouse's one writer).
 */
export async function summariesCommand(runtime: CliRuntime): Promise<SummariesResult> {
  const result = await withSyncEnvironment(runtime, { lane: 'summaries' }, (env) => refreshSummaries(env.deps, env.settings, env.summaries ?? {}));
  runtime.display?.stop();
  if (runtime.interactive) {
    runtime.out(
      `${result.outcome}: ${result.candidates} logs awaiting summaries, ${result.fetched} fetched, ` +
        `${result.summariesChanged} changed, ${result.vanished} gone; ${result.requests} requests in ${formatDuration(result.durationMs)}`,
    );
  }
  if (result.error) throw result.error;
  return result;
}
