import { refreshSummaries, type SummariesOptions, type SummariesResult, type SyncEnvironment } from '../src/sync/index.js';

/**
 * The payload of a `summaries` job: re-fetch the single views of recent meeting logs whose summaries are empty
 * or not final. Build `env` with `createSyncEnvironment(config, { lane: 'summaries' })`. Fields given here
 * override the environment's (SALESYNC_SUMMARIES_WINDOW, SALESYNC_SUMMARIES_FINAL).
 */
export type SummariesJobData = SummariesOptions;

export async function processSummariesJob(env: SyncEnvironment, data: SummariesJobData = {}): Promise<SummariesResult> {
  return refreshSummaries(env.deps, env.settings, { ...env.summaries, ...data });
}
