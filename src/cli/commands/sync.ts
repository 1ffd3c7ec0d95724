import { ConfigError } from '../../core/errors.js';
import { isResourceName, RESOURCE_NAMES, type ResourceName } from '../../core/resources.js';
import { runSync, type SyncReport } from '../../sync/index.js';
import { commandFailure } from '../outcome.js';
import type { CliRuntime } from '../runtime.js';
import { withSyncEnvironment } from '../command-environment.js';
import { formatCount, formatDuration, formatTable } from '../table.js';

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
  if (runtime.interactive) runtime.out(formatReport(report));
  const failure = commandFailure([...report.results, ...(report.summaries ? [report.summaries] : [])]);
  if (failure && failure.code !== 'records_rejected') throw failure;
  if (report.snapshotError) throw report.snapshotError;
  if (failure) throw failure;
  return report;
}

export function formatReport(report: SyncReport): string {
  const table = formatTable(
    ['resource', 'mode', 'outcome', 'pages', 'written', 'rejected', 'requests', '429s', 'time'],
    [...report.results, ...(report.summaries ? [report.summaries] : [])].map((r) => [
      r.resource,
      r.mode + (r.resumed ? ' (resumed)' : '') + (r.passes > 1 ? ` (${r.passes} passes)` : ''),
      r.outcome + (r.settled ? '' : ' (unsettled)'),
      r.pages,
      r.written,
      r.rejected,
      r.requests,
      r.rateLimited,
      formatDuration(r.durationMs),
    ]),
  );
  return `${table}\n\n${formatCount(report.requests, 'request')} in ${formatDuration(report.durationMs)}`;
}
