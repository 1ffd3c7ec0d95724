import type { Logger } from 'pino';
import type { ListPage, SalesApi } from '../api/types.js';
import { SalesyncError } from '../core/errors.js';
import { resourceDescriptor, type RecordResourceName } from '../core/resources.js';
import type { MeetingLogSummary, RejectedRecord, ServiceRecord } from '../core/types.js';
import { RecordList, type RecordBuffer, type Warehouse } from '../warehouse/index.js';
import { toSalesyncError } from './errors.js';
import { withMeetingLogDetails } from './meeting-log-details.js';
import type { ResourcePhase, ResourceProgress } from './progress.js';
import type { SyncSettings } from './context.js';
import { CommitQueue, type CommitWrite } from './commit-queue.js';
import { backlogCap, grownBatchRows, shouldFlush } from './window.js';
import { WriterBacklog } from './writer-backlog.js';

/** Pages fetched since the last commit: committed together with the cursor that follows them. */
export interface BufferedPages {
  /** The pages' records, as `PageWalk.recordBuffer` gathers them. */
  records: RecordBuffer;
  /** Meeting logs: the summaries of each log whose single view was fetched. */
  summaries: Map<string, MeetingLogSummary[]>;
  /** Server time of the latest page whose single views are in `summaries` (their re-read schedule starts there). */
  summariesReadAt: string | null;
  /** Records of these pages that failed validation, for quarantine. */
  rejects: RejectedRecord[];
}

const emptyBuffer = (records: RecordBuffer): BufferedPages => ({ records, summaries: new Map(), summariesReadAt: null, rejects: [] });

export interface PageWalk {
  api: SalesApi;
  warehouse: Warehouse;
  resource: RecordResourceName;
  updatedAfter: string | null;
  /** Records a page asks for. @defaultValue the client's (the largest) */
  pageSize?: number;
  /** Cursor to continue from (a resumed walk), or null for the first page. */
  after: string | null;
  /** The fingerprint of the key `after` came on (ListOptions.afterKey). @defaultValue null */
  afterKey?: string | null;
  settings: SyncSettings;
  signal?: AbortSignal | undefined;
  log: Logger;
  /** Counted as pages arrive. */
  counters: { pages: number; records: number; details: number };
  progress: ResourceProgress;
  /** The resource's property definitions (its table's width): how far a batch may grow (`grownBatchRows`). */
  propertyColumns: number;
  report: (phase: ResourcePhase) => void;
  /** Fetch every listed log's single view (a deep sweep), not only those whose `updated_at` moved. */
  allDetails?: boolean;
  /** Rows queued for the writer by every walk of the process (`SyncDeps.writerBacklog`). @defaultValue this walk's own */
  writerBacklog?: WriterBacklog;
  /**
   * A new batch's record buffer (`Warehouse.recordBuffer`: pages encoded as they arrive, so a batch holds rows,
   * not records). @defaultValue a plain list (`RecordList`)
   */
  recordBuffer?: () => RecordBuffer;
  /** Sees each page before its records are buffered (e.g. its server date). */
  onPage?: (page: ListPage<ServiceRecord>) => void;
  /**
   * Whether the walk has what it came for once the page `onPage` saw is in (a pass over a tie alone, past it): it
   * ends there, committed as at the list's end (`commit` with a null cursor). @defaultValue never: the list's end
   */
  endsAfter?: () => boolean;
  /** Told, before the page is buffered, of listed meeting logs left out: their single view was missing or older. */
  onDetailMissing?: (missing: ReadonlyArray<Pick<ServiceRecord, 'id' | 'updated_at'>>) => void;
  /** Logs the pass before left out so (id → `updated_at` listed): listed again unchanged, written from their list row. */
  stillMissing?: ReadonlyMap<string, string>;
  /**
   * The commit of the buffered pages with the cursor that follows them (`null`: the walk is complete). Called when
   * the pages are taken from the buffer, so what the batch holds is decided then (and its encoding may start);
   * the returned function writes it, once every earlier commit of the walk has been written (or is discarded,
   * should one of those fail).
   */
  commit(pages: BufferedPages, cursor: string | null): CommitWrite;
}

/**
 * Walk a list to its end: buffer pages, commit them (with their cursor) whenever the flush policy says so and
 * always at the end. Commits run while the next pages are fetched (see commitsAllowed; written in order), so
 * the service and the warehouse work side by side. On a failure, the whole pages already fetched are committed
 * before rethrowing, so a rerun resumes after them; a warehouse failure is not retried here.
 */
export async function walkPages(walk: PageWalk): Promise<void> {
  const { api, warehouse, resource, settings, signal, log, counters, progress, report } = walk;
  const hasSummaries = resourceDescriptor(resource).hasSummaries;
  const newBuffer = () => emptyBuffer(walk.recordBuffer?.() ?? new RecordList());
  let buffer = newBuffer();
  let bufferCursor: string | null = walk.after;
  let bufferSince = 0;
  const backlog = walk.writerBacklog ?? new WriterBacklog();
  const grown = grownBatchRows(settings.flushRows, walk.propertyColumns);
  const cap = backlogCap(settings.flushRows, walk.propertyColumns);
  const commits = new CommitQueue(backlog, cap);
  const startCommit = async (cursor: string | null) => {
    report('committing');
    const pages = buffer;
    buffer = newBuffer();
    const records = pages.records.added; // not the records: the log line must not keep them alive
    await commits.push(
      () => walk.commit(pages, cursor),
      () => {
        // Debug only: a line per batch; a rerun resumes after the last of these.
        log.debug({ records, complete: cursor === null }, 'batch committed');
        report('walking');
      },
      records,
    );
  };

  report('walking');
  try {
    const pages = api.listPages(resource, {
      updatedAfter: walk.updatedAfter,
      after: walk.after,
      afterKey: walk.afterKey ?? null,
      ...(walk.pageSize !== undefined ? { pageSize: walk.pageSize } : {}),
      ...(signal ? { signal } : {}),
    });
    for await (const page of pages) {
      commits.throwIfFailed();
      walk.onPage?.(page);
      let records = page.results;
      if (hasSummaries && records.length > 0) {
        // Only logs that are new or whose updated_at moved need their single view (unless every one is asked for).
        const stored = walk.allDetails
          ? new Map<string, string>()
          : await warehouse.storedUpdatedAt(
              resource,
              records.map((r) => r.id),
            );
        const detailed = await withMeetingLogDetails(api, records, stored, settings.detailConcurrency, log, signal, walk.stillMissing);
        records = detailed.records;
        for (const [id, s] of detailed.summaries) buffer.summaries.set(id, s);
        if (detailed.summaries.size > 0) buffer.summariesReadAt = page.serverDate ?? buffer.summariesReadAt;
        for (const reject of detailed.rejects) buffer.rejects.push(reject);
        counters.details += detailed.fetched;
        if (detailed.missing.length > 0) walk.onDetailMissing?.(detailed.missing);
      }
      if (buffer.records.added === 0) bufferSince = Date.now();
      await buffer.records.add(records);
      for (const reject of page.rejects) {
        buffer.rejects.push(reject);
        log.warn(
          { id: reject.id, reason: reject.reason },
          'record rejected: kept in quarantine (rejected_records), retried by every walk that sees it',
        );
      }
      bufferCursor = page.nextCursor;
      progress.pages = counters.pages += 1;
      progress.records = counters.records += page.results.length;
      const done = page.nextCursor === null || walk.endsAfter?.() === true;
      if (
        shouldFlush(
          buffer.records.added,
          Date.now() - bufferSince,
          done,
          {
            maxRows: settings.flushRows,
            maxAgeMs: settings.flushIntervalMs,
            maxGrownRows: grown,
          },
          commits.busy,
        )
      ) {
        await startCommit(done ? null : page.nextCursor);
      } else {
        report('walking');
      }
      if (done) break;
      signal?.throwIfAborted();
    }
    await commits.drain();
  } catch (error) {
    // Pages already fetched are whole and valid: keep them, so a rerun resumes after them. Not after a
    // warehouse failure (the commit in flight included): writing again would only fail again.
    let warehouseFailed = error instanceof SalesyncError && error.code.startsWith('warehouse');
    try {
      await commits.drain();
    } catch (commitError) {
      warehouseFailed = true;
      if (commitError !== error) log.warn({ err: toSalesyncError(commitError).message }, 'the commit in flight failed too');
    }
    if (!warehouseFailed && (buffer.records.added > 0 || buffer.rejects.length > 0) && bufferCursor !== null) {
      try {
        await startCommit(bufferCursor);
        await commits.drain();
      } catch (commitError) {
        log.warn({ err: toSalesyncError(commitError).message }, 'could not commit the pages fetched before the failure');
      }
    }
    throw error;
  }
}

/**
 * Before a walk: list the resource's property definitions and apply them (columns, views). Returns the
 * response's server date, the walk's start on the service's clock when it has no earlier one, and how many
 * properties the resource has.
 */
export async function refreshDefinitions(
  api: SalesApi,
  warehouse: Warehouse,
  resource: RecordResourceName,
  report: (phase: ResourcePhase) => void,
  signal?: AbortSignal,
): Promise<{ serverDate: string | null; properties: number }> {
  report('properties');
  const { definitions, serverDate } = await api.listProperties(resource, signal);
  await warehouse.applyPropertyDefinitions(resource, definitions);
  return { serverDate, properties: definitions.length };
}
