import { createSyncEnvironment, refreshSummaries, type SummariesResult } from '../../sync/index.js';
import type { CliRuntime } from '../runtime.js';
import { formatDuration } from '../table.js';

/** `salesync summaries`: re-fetch recent meeting logs whose summaries are empty or not final, on the summaries lane. */
export async function summariesCommand(runtime: CliRuntime): Promise<SummariesResult> {
  const env = createSyncEnvironment(runtime.config, {
    logger: runtime.logger,
    signal: runtime.signal,
    lane: 'summaries',
    ...(runtime.display ? { progress: runtime.display } : {}),
  });
  const result = await refreshSummaries(env.deps, env.settings, env.summaries ?? {}).finally(() => env.close());
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
