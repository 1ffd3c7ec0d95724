import type { SalesApi } from '../api/types.js';
import { resourceDescriptor, type RecordResourceName } from '../core/resources.js';
import type { MeetingLogSummary, RejectedRecord, ServiceRecord } from '../core/types.js';
import type { BatchSource } from '../warehouse/types.js';
import type { SyncSettings } from './context.js';
import { fanOut } from './fan-out.js';
import { lookUp, type LookedUp } from './look-up.js';
import type { RunContext } from './tracked-run.js';

/**
 * What asking single views about rows came to: the ids answered `not_found`, how many were written or rejected, and
 * how many could not be asked (`skipFailures`).
 */
export interface SingleViewsRead {
  gone: string[];
  found: number;
  rejected: number;
  failed: number;
}

/**
 * Ask each row's single view about it, `detailConcurrency` at a time: a record that answers is written as it is (a
 * meeting log with its summaries, the version observed winning), an invalid one goes to quarantine, and the ids
 * answered `not_found` are returned for the caller to judge. A request that fails otherwise fails the call, or, with
 * `skipFailures`, leaves its row out (unless the run was stopped). The engine a reconcile's confirmation of
 * deletions and a sync's second look at records in quarantine share.
 */
export async function readSingleViews(
  run: RunContext,
  settings: SyncSettings,
  resource: RecordResourceName,
  ids: readonly string[],
  options: { source: BatchSource; skipFailures?: boolean },
): Promise<SingleViewsRead> {
  if (ids.length === 0) return { gone: [], found: 0, rejected: 0, failed: 0 };
  const { api, deps, result } = run;
  // A stored row newer than the view, written within the lookback before it was asked for, stays (see walkWindow).
  const observedSince = new Date(Date.now() - settings.lookbackMs).toISOString();
  const gone: string[] = [];
  const found: ServiceRecord[] = [];
  const summaries = new Map<string, MeetingLogSummary[]>();
  const rejects: RejectedRecord[] = [];
  const hasSummaries = resourceDescriptor(resource).hasSummaries;
  let failed = 0;
  await fanOut(ids, settings.detailConcurrency, deps.signal, async (id, signal) => {
    let answer: Awaited<ReturnType<typeof fetchOne>>;
    try {
      answer = await fetchOne(api, resource, id, hasSummaries, signal);
    } catch (error) {
      if (!options.skipFailures || deps.signal?.aborted) throw error;
      failed += 1;
      return;
    }
    result.details += 1;
    if (answer === 'not_found') gone.push(id);
    else if ('reject' in answer) rejects.push(answer.reject);
    else {
      found.push(answer.found.record);
      if (answer.found.summaries) summaries.set(id, answer.found.summaries);
    }
  });
  if (found.length > 0 || rejects.length > 0) {
    run.report('committing');
    const committed = await deps.warehouse.commitBatch(resource, {
      records: found,
      ...(hasSummaries ? { summaries } : {}),
      observedWins: true,
      observedSince,
      source: options.source,
      runId: run.runId,
      ...(rejects.length > 0 ? { rejects } : {}),
    });
    result.written += committed.written;
    result.changed += committed.changed;
    result.summariesChanged += committed.summariesChanged;
    result.rejected += rejects.length;
  }
  return { gone, found: found.length, rejected: rejects.length, failed };
}

/** A row's single view: the record, and a meeting log's summaries with it. */
function fetchOne(
  api: SalesApi,
  resource: RecordResourceName,
  id: string,
  hasSummaries: boolean,
  signal?: AbortSignal,
): Promise<LookedUp<{ record: ServiceRecord; summaries?: MeetingLogSummary[] }>> {
  return lookUp(async () => {
    if (!hasSummaries) return { record: await api.getRecord(resource, id, signal) };
    const { summaries, ...record } = await api.getMeetingLog(id, signal);
    return { record, summaries };
  });
}
