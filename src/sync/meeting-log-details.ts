import type { Logger } from 'pino';
import type { SalesApi } from '../api/types.js';
import { SalesyncError } from '../core/errors.js';
import { compareInstants, sameInstant } from '../core/time.js';
import type { MeetingLogSummary, RejectedRecord, ServiceRecord } from '../core/types.js';
import { fanOut } from './fan-out.js';

/**
 * Which listed logs need their single view: those new to the warehouse or whose `updated_at` moved.
 * Inclusive windows and the lookback bring unchanged logs back; their single view would cost a request
 * each and tell us nothing new. Pure.
 */
export function logsNeedingDetail(listed: ServiceRecord[], stored: Map<string, string>): ServiceRecord[] {
  return listed.filter((record) => {
    const known = stored.get(record.id);
    return known === undefined || !sameInstant(known, record.updated_at);
  });
}

export interface DetailedPage {
  records: ServiceRecord[];
  summaries: Map<string, MeetingLogSummary[]>;
  /** Logs listed whose single view answered `not_found` (gone, or the single view lags the list). */
  vanished: number;
  /** Logs whose single view is an older version than the list's (it lags the list): left out of `records`. */
  behind: number;
  /** Logs whose single view failed validation: quarantined, left out of `records`. */
  rejects: RejectedRecord[];
  fetched: number;
  /** The logs left out as `vanished` or `behind`, with the `updated_at` listed: for the next pass (`stillMissing`). */
  missing: Array<Pick<ServiceRecord, 'id' | 'updated_at'>>;
}

/**
 * Swap each changed log of a page for its single view (fresher, and the only place summaries live).
 * A log whose single view answers `not_found` is dropped: writing it would resurrect a deleted record. So is one
 * whose single view is older than the list's (`behind`): its summaries would be of that older version. The caller
 * counts both: the single view may only lag the list, so its pass lists the window again. A log the pass before
 * left out so too (`stillMissing`: its id and the `updated_at` listed then), listed again unchanged, is written from
 * its list row without summaries instead: a single view that never catches up must not keep every pass unclean
 * (the watermark would never move, nor a sweep settle); the summaries job reads it again later.
 */
export async function withMeetingLogDetails(
  api: SalesApi,
  page: ServiceRecord[],
  storedUpdatedAt: Map<string, string>,
  concurrency: number,
  logger: Logger,
  signal?: AbortSignal,
  stillMissing: ReadonlyMap<string, string> = new Map(),
): Promise<DetailedPage> {
  const needed = new Set(logsNeedingDetail(page, storedUpdatedAt).map((r) => r.id));
  const summaries = new Map<string, MeetingLogSummary[]>();
  let vanished = 0;
  let behind = 0;
  const missing: DetailedPage['missing'] = [];
  const rejects: RejectedRecord[] = [];
  /** The list row, when the pass before already missed this log as listed now; else null, and it is counted missing. */
  const listRowOrNull = (record: ServiceRecord): ServiceRecord | null => {
    const before = stillMissing.get(record.id);
    if (before !== undefined && sameInstant(before, record.updated_at)) {
      logger.warn(
        { resource: 'meeting-logs', id: record.id, listed: record.updated_at },
        'meeting log single view still missing or older after a pass: written from its list row, without summaries',
      );
      return record;
    }
    missing.push({ id: record.id, updated_at: record.updated_at });
    return null;
  };
  const records = await fanOut(page, concurrency, signal, async (record, signal) => {
    if (!needed.has(record.id)) return record;
    try {
      // Yielding: the walks' pages, one at a time each, go before a page's details, many at once.
      const detail = await api.getMeetingLog(record.id, signal, { yielding: true });
      const { summaries: logSummaries, ...rest } = detail;
      if (compareInstants(rest.updated_at, record.updated_at) < 0) {
        const row = listRowOrNull(record);
        if (row) return row;
        behind += 1;
        logger.info(
          { resource: 'meeting-logs', id: record.id, listed: record.updated_at, single: rest.updated_at },
          'meeting log single view is older than its list row; skipped, and its window listed again',
        );
        return null;
      }
      summaries.set(record.id, logSummaries);
      return rest as ServiceRecord;
    } catch (error) {
      if (error instanceof SalesyncError && error.code === 'not_found') {
        const row = listRowOrNull(record);
        if (row) return row;
        vanished += 1;
        logger.info(
          { resource: 'meeting-logs', id: record.id },
          'meeting log listed but its single view answered not_found; skipped, and its window listed again',
        );
        return null;
      }
      const reject = rejectedFrom(error);
      if (reject) {
        rejects.push(reject);
        logger.warn(
          { resource: 'meeting-logs', id: record.id, reason: reject.reason },
          'meeting log rejected: kept in quarantine, retried by every walk that sees it',
        );
        return null;
      }
      throw error;
    }
  });
  return {
    records: records.filter((r): r is ServiceRecord => r !== null),
    summaries,
    vanished,
    behind,
    rejects,
    fetched: needed.size,
    missing,
  };
}

/** A single view that failed validation (`invalid_record`) as a quarantine entry; null for any other failure. */
export function rejectedFrom(error: unknown): RejectedRecord | null {
  if (!(error instanceof SalesyncError) || error.code !== 'invalid_record') return null;
  const { id, raw, reason } = error.context as { id?: unknown; raw?: unknown; reason?: unknown };
  return {
    id: typeof id === 'string' ? id : null,
    raw: typeof raw === 'string' ? raw : '',
    reason: typeof reason === 'string' ? reason : error.message,
  };
}
