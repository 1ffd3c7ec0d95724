import { refreshSummaries, type SummariesResult, type SyncEnvironment } from '../src/sync/index.js';

/**
 * The payload of a `summaries` job: re-read the single views of recent meeting logs whose summaries are due.
 * Fields given here override the environment's (SALESYNC_SUMMARIES_WINDOW, SALESYNC_SUMMARIES_FINAL).
 */
export interface SummariesJobData {
  windowMs?: number;
  finalStatuses?: readonly string[] | null;
}

export async function processSummariesJob(env: SyncEnvironment, data: SummariesJobData = {}): Promise<SummariesResult> {
  const summaries = { ...env.settings.summaries, ...data };
  return refreshSummaries(env.deps, { ...env.settings, summaries });
}
