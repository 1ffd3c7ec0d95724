import type { RecordResourceName } from '../core/resources.js';
import type { BatchSource } from '../warehouse/types.js';
import type { SyncSettings } from './context.js';
import { readSingleViews } from './single-views.js';
import type { RunContext } from './tracked-run.js';

/** The most records in quarantine one run asks about again, per resource: a larger quarantine takes several runs. */
export const QUARANTINE_RETRIES_PER_RUN = 100;

/**
 * Ask the service again, by their single views, about records in quarantine that this run's walk did not see: the
 * spec moves `updated_at` only when values change, so a record sent broken and then fixed may stay below every
 * watermark, and would wait for a reconcile. Fixed ones are written and leave quarantine; those still broken stay,
 * counted in the run's rejects; those answered `not_found` are left to the reconcile, which settles them. A second look
 * that fails (the service erring) fails no walk: those records stay in quarantine for the next run to ask about.
 */
export async function retryQuarantined(
  run: RunContext,
  settings: SyncSettings,
  resource: RecordResourceName,
  source: BatchSource,
): Promise<void> {
  if (run.deps.signal?.aborted) return;
  const ids = await run.deps.warehouse.quarantinedIds(resource, { exceptRun: run.runId, limit: QUARANTINE_RETRIES_PER_RUN });
  if (ids.length === 0) return;
  run.log.info({ records: ids.length }, 'asking the service again about records in quarantine, one GET each');
  const read = await readSingleViews(run, settings, resource, ids, { source, skipFailures: true });
  if (read.found > 0) run.log.info({ fixed: read.found }, 'records in quarantine came back whole: written, out of quarantine');
  if (read.failed > 0) {
    run.log.warn(
      { records: read.failed },
      'the service did not answer for records in quarantine: they stay there, and the next run asks again',
    );
  }
}
