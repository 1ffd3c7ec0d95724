import type { SalesApi } from '../api/types.js';
import { SalesyncError } from '../core/errors.js';
import { compareInstants, minusMs } from '../core/time.js';
import type { MeetingLogSummary, RejectedRecord, ServiceRecord } from '../core/types.js';
import { fanOut } from './fan-out.js';
import type { ResourceResult, SyncDeps, SyncSettings } from './context.js';
import { logsNeedingDetail, rejectedFrom } from './meeting-log-details.js';
import { trackedRun } from './tracked-run.js';

/** @defaultValue of `SummariesSettings.windowMs`: 14 days. */
export const DEFAULT_SUMMARIES_WINDOW_MS = 14 * 24 * 60 * 60_000;

export interface SummariesResult extends ResourceResult {
  /** Logs in the window whose summaries were due for a re-read. */
  candidates: number;
  /** Logs whose single view answered `not_found` (deleted; the next reconcile confirms and marks them). */
  vanished: number;
  /** Logs whose single view was older than the warehouse's row (a replica behind): left due, for the next run. */
  behind: number;
}

/** Logs created at or after this instant are in the window. Pure. */
export function summariesWindowStart(serverNow: string, windowMs: number): string {
  return minusMs(serverNow, windowMs);
}

/** Single views fetched between commits: a stopped run keeps what it fetched (its state is the warehouse itself). */
const LOGS_PER_COMMIT = 200;

/**
 * The summary lifecycle: summaries appear and change after a log was recorded, without moving its `updated_at`,
 * so no list walk sees them. Re-read the single view of the logs in the window whose re-read is due, and replace
 * their summaries (and the log row when its `updated_at` moved). What "settled" means is learned, not listed
 * (the spec names no statuses): each log's re-reads are spaced further apart while its summaries come back
 * unchanged (the warehouse keeps the schedule), unless the operator declared final statuses. Spends the
 * `summaries` lane, so it never starves the scheduled walks. Recorded in `sync_runs` with mode `summaries`.
 */
export function refreshSummaries(deps: SyncDeps, settings: SyncSettings): Promise<SummariesResult> {
  const { warehouse, signal } = deps;
  return trackedRun<SummariesResult>(
    deps,
    {
      resource: 'meeting-logs',
      mode: 'summaries',
      lane: 'summaries',
      name: 'summaries refresh',
      logFields: { summaries: true },
      extra: { candidates: 0, vanished: 0, behind: 0 },
      figures: (r) => ({ pages: 0, records: r.details, changed: r.summariesChanged, deleted: null }),
      logLine: (r) => ({
        candidates: r.candidates,
        fetched: r.details,
        changed: r.summariesChanged,
        vanished: r.vanished,
        behind: r.behind,
      }),
    },
    async ({ api, log, result, progress, report, runId, now }) => {
      report('properties');
      // The window and the schedule are counted on the service's clock, never ours (unless it sends none).
      const { definitions, serverDate } = await api.listProperties('meeting-logs', signal);
      await warehouse.applyPropertyDefinitions('meeting-logs', definitions);
      const serverNow = serverDate ?? now().toISOString();
      const createdAfter = summariesWindowStart(serverNow, settings.summaries.windowMs);
      const { finalStatuses, recheckMs } = settings.summaries;
      const due = await warehouse.logsAwaitingSummaries({ createdAfter, serverNow, finalStatuses, recheckMs });
      result.candidates = progress.expected = due.size;
      log.info({ createdAfter, candidates: due.size }, 'refreshing summaries due for a re-read');
      const ids = [...due.keys()];
      for (let start = 0; start < ids.length; start += LOGS_PER_COMMIT) {
        signal?.throwIfAborted();
        report('walking');
        const chunk = ids.slice(start, start + LOGS_PER_COMMIT);
        const read = await fetchSingleViews(api, chunk, settings.detailConcurrency, signal);
        result.details += chunk.length;
        result.vanished += read.vanished;
        // A single view older than the row it would refresh comes from a replica behind: its summaries are of that
        // older version. Left out, the log stays due and is read again by the next run.
        const current = read.views.filter((v) => compareInstants(v.record.updated_at, due.get(v.record.id)!) >= 0);
        result.behind += read.views.length - current.length;
        if (current.length < read.views.length) {
          log.info({ behind: read.views.length - current.length }, 'single views older than the warehouse: left for the next run');
        }
        report('committing');
        const summaries = new Map<string, MeetingLogSummary[]>(current.map((v) => [v.record.id, v.summaries]));
        const moved = logsNeedingDetail(
          current.map((v) => v.record),
          due,
        );
        const committed = await warehouse.commitBatch('meeting-logs', {
          records: moved,
          summaries,
          summariesReadAt: serverNow,
          runId,
          ...(read.rejects.length > 0 ? { rejects: read.rejects } : {}),
        });
        result.written += committed.written;
        result.summariesChanged += committed.summariesChanged;
        result.rejected += read.rejects.length;
        progress.records = result.details;
        progress.written = result.summariesChanged;
      }
    },
  );
}

interface SingleViews {
  views: Array<{ record: ServiceRecord; summaries: MeetingLogSummary[] }>;
  vanished: number;
  rejects: RejectedRecord[];
}

async function fetchSingleViews(api: SalesApi, ids: readonly string[], concurrency: number, signal?: AbortSignal): Promise<SingleViews> {
  const read: SingleViews = { views: [], vanished: 0, rejects: [] };
  await fanOut(ids, concurrency, signal, async (id, signal) => {
    try {
      const { summaries, ...record } = await api.getMeetingLog(id, signal);
      read.views.push({ record, summaries });
    } catch (error) {
      // Deleted since it was stored: only a reconcile confirms and marks it; nothing to fetch.
      if (error instanceof SalesyncError && error.code === 'not_found') {
        read.vanished += 1;
        return;
      }
      const reject = rejectedFrom(error);
      if (!reject) throw error;
      read.rejects.push(reject);
    }
  });
  return read;
}
