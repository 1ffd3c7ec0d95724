import { ConfigError, shown } from '../src/core/errors.js';
import { isResourceName, resourceDescriptor, type RecordResourceName, type ResourceName } from '../src/core/resources.js';
import { parseInstantMicros } from '../src/core/time.js';
import {
  backfillResource,
  checkConnection,
  type ResourceResult,
  type SyncDeps,
  type SyncSettings,
  type WalkGuard,
} from '../src/sync/index.js';

/** The payload of a `backfill` job: one resource and its window (`until` is documented in src/sync/backfill.ts). */
export interface BackfillJobData {
  resource: ResourceName;
  since: string | null;
  until: string | null;
}

/** Validate a backfill request before it is queued or run: a record resource and ISO instants. */
export function backfillRequest(
  resource: string,
  since: string | undefined,
  until: string | undefined,
): BackfillJobData & { resource: RecordResourceName } {
  if (!isResourceName(resource) || !resourceDescriptor(resource).incremental) {
    throw new ConfigError(
      'invalid_backfill',
      `cannot backfill "${resource}": choose a record resource (users are refreshed completely by every sync)`,
    );
  }
  for (const [flag, value] of [
    ['--since', since],
    ['--until', until],
  ] as const) {
    if (value !== undefined && parseInstantMicros(value) === null) {
      throw new ConfigError('invalid_backfill', `${flag} must be an ISO 8601 instant such as 2026-01-01T00:00:00Z (got ${shown(value)})`);
    }
  }
  if (since !== undefined && until !== undefined && parseInstantMicros(until)! < parseInstantMicros(since)!) {
    throw new ConfigError('invalid_backfill', `--until ${until} is before --since ${since}: the window would be empty; swap them`);
  }
  return { resource: resource as RecordResourceName, since: since ?? null, until: until ?? null };
}

export async function processBackfillJob(
  deps: SyncDeps,
  settings: SyncSettings,
  data: BackfillJobData,
  guard?: WalkGuard,
): Promise<ResourceResult> {
  const request = backfillRequest(data.resource, data.since ?? undefined, data.until ?? undefined);
  await checkConnection(deps.makeApi(), deps.signal);
  await deps.warehouse.ensureSchema();
  const walk = (signal: AbortSignal) =>
    backfillResource(
      { ...deps, signal: deps.signal ? AbortSignal.any([deps.signal, signal]) : signal },
      settings,
      request.resource,
      request,
    );
  return guard ? guard(request.resource, 'backfill', walk) : walk(new AbortController().signal);
}
