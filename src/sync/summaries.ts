import pLimit from 'p-limit';
import type { SalesApi } from '../api/types.js';
import { SalesyncError } from '../core/errors.js';
import { minusMs } from '../core/time.js';
import type { MeetingLogSummary, ServiceRecord } from '../core/types.js';
import type { RunOutcome } from '../warehouse/types.js';
import { logsNeedingDetail } from './meeting-log-details.js';
import { silentProgress, type ResourceProgress } from './progress.js';
import { toSalesyncError } from './errors.js';
import { settleRun } from './settle-run.js';
import { type SyncDeps, type SyncSettings } from './sync-resource.js';

/** @defaultValue of `SummariesOptions.windowMs`: 14 days. */
export const DEFAULT_SUMMARIES_WINDOW_MS = 14 * 24 * 60 * 60_000;
/** @defaultValue of `SummariesOptions.finalStatuses`. */
export const DEFAULT_SUMMARY_FINAL_STATUSES: readonly string[] = ['completed', 'failed'];

export interface SummariesOptions {
  /** Only logs created this long before the server's now are re-fetched. @defaultValue 14 days */
  windowMs?: number;
  /** Summary statuses that will not change again by themselves. @defaultValue completed, failed */
  finalStatuses?: readonly string[];
}

export interface SummariesResult {
  outcome: RunOutcome;
  /** Logs in the window whose stored summaries were empty or not final. */
  candidates: number;
  /** Single views fetched. */
  fetched: number;
  /** Logs whose single view answered 404 (deleted; the next reconcile marks them). */
  vanished: number;
  /** Log rows rewritten because their `updated_at` had moved. */
  written: number;
  /** Logs whose summaries differed from the mirror, and were replaced. */
  summariesChanged: number;
  requests: number;
  retries: number;
  rateLimited: number;
  durationMs: number;
  error?: SalesyncError;
}

/** Logs created at or after this instant are in the window. Pure. */
export function summariesWindowStart(serverNow: string, windowMs: number): string {
  return minusMs(serverNow, windowMs);
}

/** Single views fetched between commits: a stopped job keeps what it fetched (its state is the warehouse itself). */
const LOGS_PER_COMMIT = 200;

/**
 * The summary lifecycle: summaries appear and complete after a log was recorded, without moving its
 * `updated_at`, so no list walk sees them. Re-fetch the single view of recent logs whose stored summaries are
 * empty or not final, and replace their summaries (and the log row when its `updated_at` moved). Build the
 * deps with the `summaries` lane so this never starves the scheduled walks. Records the run in `sync_runs`
 * (mode `summaries`). Throws only when the first request fails (key, address); other failures are in the result.
 */
export async function refreshSummaries(deps: SyncDeps, settings: SyncSettings, options: SummariesOptions = {}): Promise<SummariesResult> {
  const windowMs = options.windowMs ?? DEFAULT_SUMMARIES_WINDOW_MS;
  const finalStatuses = options.finalStatuses ?? DEFAULT_SUMMARY_FINAL_STATUSES;
  const now = deps.now ?? (() => new Date());
  const started = now();
  const api = deps.makeApi();
  const { warehouse, signal } = deps;
  const log = deps.logger.child({ resource: 'meeting-logs', summaries: true });
  const sink = deps.progress ?? silentProgress;
  const result: SummariesResult = {
    outcome: 'running', candidates: 0, fetched: 0, vanished: 0, written: 0, summariesChanged: 0, requests: 0, retries: 0,
    rateLimited: 0, durationMs: 0,
  };
  const progress: ResourceProgress = {
    resource: 'meeting-logs', phase: 'properties', pages: 0, records: 0, requests: 0, written: 0, startedAtMs: started.getTime(), resumed: false,
  };
  const report = (phase = progress.phase) => {
    progress.phase = phase;
    progress.requests = api.stats().requests;
    sink.update({ ...progress });
  };

  report('properties');
  // First, and before the warehouse is touched: a wrong key or an unreachable service fails here (it throws).
  // Also the server's clock: the window is counted on it, never on ours.
  const { definitions, serverDate } = await api.listProperties('meeting-logs', signal).catch((error: unknown) => {
    throw toSalesyncError(error);
  });
  await warehouse.ensureSchema();
  const runId = await warehouse.startRun({ resource: 'meeting-logs', mode: 'summaries', startedAt: started });
  await settleRun(
    { warehouse, api, signal, log, runId, started, now, report, what: 'the summaries run' },
    result,
    async () => {
      await warehouse.applyPropertyDefinitions('meeting-logs', definitions);
      const windowStart = summariesWindowStart(serverDate ?? now().toISOString(), windowMs);
      const stored = await warehouse.logsAwaitingSummaries(windowStart, finalStatuses);
      result.candidates = stored.size;
      log.info({ windowStart, candidates: stored.size, finalStatuses }, 'refreshing pending summaries');
      const ids = [...stored.keys()];
      for (let start = 0; start < ids.length; start += LOGS_PER_COMMIT) {
        signal?.throwIfAborted();
        report('walking');
        const chunk = ids.slice(start, start + LOGS_PER_COMMIT);
        const { views, vanished } = await fetchSingleViews(api, chunk, settings.detailConcurrency, signal);
        result.fetched += chunk.length;
        result.vanished += vanished;
        report('committing');
        const summaries = new Map<string, MeetingLogSummary[]>(views.map((v) => [v.record.id, v.summaries]));
        const moved = logsNeedingDetail(views.map((v) => v.record), stored);
        const committed = await warehouse.commitBatch('meeting-logs', { records: moved, summaries });
        result.written += committed.written;
        result.summariesChanged += committed.summariesChanged;
        progress.records = result.fetched;
        progress.written = result.summariesChanged;
      }
    },
    (r) => ({ pages: 0, records: r.fetched, changed: r.summariesChanged, deleted: null }),
  );
  const line = { outcome: result.outcome, candidates: result.candidates, fetched: result.fetched, changed: result.summariesChanged, vanished: result.vanished, requests: result.requests };
  if (result.error) log.error({ ...line, code: result.error.code, err: result.error.message }, 'summaries refresh failed');
  else log.info(line, 'summaries refresh finished');
  return result;
}

async function fetchSingleViews(
  api: SalesApi,
  ids: readonly string[],
  concurrency: number,
  signal?: AbortSignal,
): Promise<{ views: Array<{ record: ServiceRecord; summaries: MeetingLogSummary[] }>; vanished: number }> {
  const limit = pLimit(concurrency);
  let vanished = 0;
  const views = await Promise.all(
    ids.map((id) =>
      limit(async () => {
        try {
          const { summaries, ...record } = await api.getMeetingLog(id, signal);
          return { record: record as ServiceRecord, summaries };
        } catch (error) {
          // Deleted since it was stored: not ours to mark (only a complete sweep knows), and nothing to fetch.
          if (error instanceof SalesyncError && error.code === 'not_found') {
            vanished += 1;
            return null;
          }
          throw error;
        }
      }),
    ),
  );
  return { views: views.filter((v): v is NonNullable<typeof v> => v !== null), vanished };
}
