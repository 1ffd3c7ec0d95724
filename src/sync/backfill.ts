import { resourceDescriptor, type RecordResourceName } from '../core/resources.js';
import type { WalkCheckpoint } from '../core/types.js';
import { trackProgress } from './progress.js';
import { settleRun } from './settle-run.js';
import { refreshDefinitions, walkPages } from './walk-pages.js';
import { type ResourceResult, type SyncDeps, type SyncSettings } from './sync-resource.js';

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
  const stateKey = backfillStateKey(resource);
  const result: ResourceResult = {
    resource, mode: 'backfill', outcome: 'running', resumed: false, pages: 0, records: 0, written: 0, details: 0,
    requests: 0, retries: 0, rateLimited: 0, durationMs: 0, watermark: null,
  };
  const { progress, report } = trackProgress(resource, started.getTime(), () => api.stats().requests, deps.progress);

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
    const serverDate = await refreshDefinitions(api, warehouse, resource, report, signal);
    const mode = options.since === null ? 'full' : 'incremental';
    const state = await warehouse.readState(resource, stateKey);
    // Resume only the same window: a cursor is valid only for the query that made it.
    const walk = state.walk;
    const resume = walk !== null && walk.cursor !== null && walk.updatedAfter === options.since && walk.mode === mode;
    result.resumed = progress.resumed = resume;
    const startedAt = (resume ? walk.startedAt : serverDate) ?? now().toISOString();
    log.info({ since: options.since, until: options.until, resumed: resume }, resume ? 'resuming backfill from its checkpoint' : 'backfill started');
    const hasSummaries = resourceDescriptor(resource).hasSummaries;

    await walkPages({
      api,
      warehouse,
      resource,
      updatedAfter: options.since,
      after: resume ? walk.cursor : null,
      settings,
      signal,
      log,
      counters: result,
      progress,
      report,
      commit: async (pages, cursor, after) => {
        const checkpoint: WalkCheckpoint = { cursor, updatedAfter: options.since, startedAt, mode };
        // No completeWatermark, ever: the incremental walk's watermark is not ours to move.
        const { written } = await warehouse.commitBatch(resource, {
          records: pages.records,
          after,
          ...(hasSummaries ? { summaries: pages.summaries } : {}),
          checkpoint,
          stateKey,
        });
        result.written += written;
        progress.written = result.written;
      },
    });
  }
}
