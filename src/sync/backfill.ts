import type { ListPage } from '../api/types.js';
import { SalesyncError } from '../core/errors.js';
import { resourceDescriptor, type RecordResourceName } from '../core/resources.js';
import type { MeetingLogSummary, ServiceRecord, WalkCheckpoint } from '../core/types.js';
import { withMeetingLogDetails } from './meeting-log-details.js';
import { silentProgress, type ResourceProgress } from './progress.js';
import { toSalesyncError } from './errors.js';
import { settleRun } from './settle-run.js';
import { type ResourceResult, type SyncDeps, type SyncSettings } from './sync-resource.js';
import { shouldFlush } from './window.js';

/**
 * A backfill replays one resource's records updated at or after `since` (everything when null).
 *
 * `until`: the list API has only `updated_after`, so a walk cannot stop at an upper bound, and its order is
 * unspecified, so it cannot stop early either. Records updated after `until` are still the service's true
 * data: they are written like the rest (an upsert never replaces a row with an older version of itself, so
 * this is harmless). `until` is kept for the log and the run record only.
 */
export interface BackfillOptions {
  since: string | null;
  until: string | null;
}

/** The sync_state row of a resource's backfill: separate from the incremental walk's, whose watermark it never moves. */
export function backfillStateKey(resource: RecordResourceName): string {
  return `${resource}#backfill`;
}

/**
 * Walk one resource's window into the warehouse. Resumable (its own checkpoint, committed with its rows under
 * `<resource>#backfill`), recorded in `sync_runs` with mode `backfill`, and it never moves the incremental
 * watermark. Never throws for walk failures: the result says what happened.
 */
export async function backfillResource(
  deps: SyncDeps,
  settings: SyncSettings,
  resource: RecordResourceName,
  options: BackfillOptions,
): Promise<ResourceResult> {
  const now = deps.now ?? (() => new Date());
  const started = now();
  const api = deps.makeApi();
  const log = deps.logger.child({ resource, backfill: true });
  const sink = deps.progress ?? silentProgress;
  const stateKey = backfillStateKey(resource);
  const result: ResourceResult = {
    resource, mode: 'backfill', outcome: 'running', resumed: false, pages: 0, records: 0, written: 0, details: 0,
    requests: 0, retries: 0, rateLimited: 0, durationMs: 0, watermark: null,
  };
  const progress: ResourceProgress = {
    resource, phase: 'properties', pages: 0, records: 0, requests: 0, written: 0, startedAtMs: started.getTime(), resumed: false,
  };
  const report = (phase = progress.phase) => {
    progress.phase = phase;
    progress.requests = api.stats().requests;
    sink.update({ ...progress });
  };

  const runId = await deps.warehouse.startRun({ resource, mode: 'backfill', startedAt: started });
  await settleRun(
    { warehouse: deps.warehouse, api, signal: deps.signal, log, runId, started, now, report, what: 'the backfill' },
    result,
    walkWindow,
    (r) => ({ pages: r.pages, records: r.written }),
  );
  const line = { outcome: result.outcome, since: options.since, until: options.until, resumed: result.resumed, pages: result.pages, written: result.written, requests: result.requests };
  if (result.error) log.error({ ...line, code: result.error.code, err: result.error.message }, 'backfill failed');
  else log.info(line, result.outcome === 'interrupted' ? 'backfill interrupted; rerun it to resume from its checkpoint' : 'backfill finished');
  return result;

  async function walkWindow(): Promise<void> {
    const { warehouse, signal } = deps;
    report('properties');
    const { definitions, serverDate } = await api.listProperties(resource, signal);
    await warehouse.applyPropertyDefinitions(resource, definitions);
    const mode = options.since === null ? 'full' : 'incremental';
    const state = await warehouse.readState(resource, stateKey);
    // Resume only the same window: a cursor is valid only for the query that made it.
    const walk = state.walk;
    const resume = walk !== null && walk.cursor !== null && walk.updatedAfter === options.since && walk.mode === mode;
    result.resumed = progress.resumed = resume;
    const startedAt = (resume ? walk.startedAt : serverDate) ?? now().toISOString();
    log.info({ since: options.since, until: options.until, resumed: resume }, resume ? 'resuming backfill from its checkpoint' : 'backfill started');
    const hasSummaries = resourceDescriptor(resource).hasSummaries;

    let buffer: ServiceRecord[] = [];
    let summaries = new Map<string, MeetingLogSummary[]>();
    let bufferCursor: string | null = resume ? walk.cursor : null;
    let bufferSince = 0;
    const commit = async (cursor: string | null) => {
      const checkpoint: WalkCheckpoint = { cursor, updatedAfter: options.since, startedAt, mode };
      report('committing');
      // No completeWatermark, ever: the incremental walk's watermark is not ours to move.
      const { written } = await warehouse.commitBatch(resource, { records: buffer, ...(hasSummaries ? { summaries } : {}), checkpoint, stateKey });
      result.written += written;
      progress.written = result.written;
      buffer = [];
      summaries = new Map();
      report('walking');
    };

    report('walking');
    try {
      const pages = api.listPages(resource, { updatedAfter: options.since, after: bufferCursor, ...(signal ? { signal } : {}) });
      for await (const page of pages as AsyncGenerator<ListPage<ServiceRecord>>) {
        let records = page.results;
        if (hasSummaries && records.length > 0) {
          const stored = await warehouse.storedUpdatedAt(resource, records.map((r) => r.id));
          const detailed = await withMeetingLogDetails(api, records, stored, settings.detailConcurrency, log, signal);
          records = detailed.records;
          for (const [id, s] of detailed.summaries) summaries.set(id, s);
          result.details += detailed.fetched;
        }
        if (buffer.length === 0) bufferSince = Date.now();
        buffer.push(...records);
        bufferCursor = page.nextCursor;
        result.pages = progress.pages = result.pages + 1;
        result.records = progress.records = result.records + page.results.length;
        const done = page.nextCursor === null;
        if (shouldFlush(buffer.length, Date.now() - bufferSince, done, { maxRows: settings.flushRows, maxAgeMs: settings.flushIntervalMs })) {
          await commit(page.nextCursor);
        } else {
          report('walking');
        }
        if (done) return;
        signal?.throwIfAborted();
      }
    } catch (error) {
      // Pages already fetched are whole and valid: keep them, so a rerun resumes after them.
      if (buffer.length > 0 && !(error instanceof SalesyncError && error.code.startsWith('warehouse'))) {
        try {
          await commit(bufferCursor);
        } catch (commitError) {
          log.warn({ err: toSalesyncError(commitError).message }, 'could not commit the pages fetched before the failure');
        }
      }
      throw error;
    }
  }
}
