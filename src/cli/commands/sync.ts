import { ConfigError } from '../../core/errors.js';
import { isResourceName, RESOURCE_NAMES, type ResourceName } from '../../core/resources.js';
import { runSync, type SyncReport } from '../../sync/index.js';
import { commandFailure } from '../outcome.js';
import type { CliRuntime } from '../runtime.js';
import { withSyncEnvironment } from '../command-environment.js';

export function parseResources(names: string[]): ResourceName[] {
  if (names.length === 0) return [...RESOURCE_NAMES];
  const unknown = names.filter((n) => !isResourceName(n));
  if (unknown.length > 0) {
    throw new ConfigError('unknown_resource', `unknown resource ${unknown.join(', ')}: choose from ${RESOURCE_NAMES.join(', ')}`);
  }
  return [...new Set(names as ResourceName[])];
}

export async function syncCommand(runtime: CliRuntime, names: string[], options: { full?: boolean }): Promise<SyncReport> {
  const resources = parseResources(names);
  // With Redis: the limiter every process shares, and a lease per resource so this walk never overlaps a
  // worker's (it waits up to SALESYNC_LEASE_WAIT, then is skipped). Without: today's in-process behaviour.
  const report = await withSyncEnvironment(runtime, {}, (env, guard) =>
    runSync(env.deps, env.settings, {
      resources,
      mode: options.full ? 'full' : 'incremental',
      concurrency: runtime.config.resourceConcurrency,
      ...(guard ? { guard } : {}),
    }),
  );
  runtime.display?.stop();
  // The table's module (and its display-width library) loads only for a person at a terminal.
  if (runtime.interactive) runtime.out((await import('../run-tables.js')).formatSyncReport(report));
  const failure = commandFailure([...report.results, ...(report.summaries ? [report.summaries] : [])]);
  if (failure && failure.code !== 'records_rejected') throw failure;
  if (report.snapshotError) throw report.snapshotError;
  if (failure) throw failure;
  return report;
}
