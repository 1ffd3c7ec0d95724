import { ConfigError } from '../../core/errors.js';
import { runReconcile, type ReconcileReport } from '../../sync/index.js';
import type { CliRuntime } from '../runtime.js';
import { withSyncEnvironment } from '../command-environment.js';
import { commandFailure } from '../outcome.js';
import { parseResources } from './sync.js';

/**
 * `salesync reconcile [resource...] [--deep]`: a complete sweep per resource; drift is in the table and sync_runs.
 * With REDIS_URL, like a sync: tokens from the limiter every process shares, and the resource's lease (a sweep
 * waits for a walk of the same resource under way, up to SALESYNC_LEASE_WAIT, then is skipped).
 */
export async function reconcileCommand(
  runtime: CliRuntime,
  names: string[],
  options: { deep?: boolean; force?: boolean },
): Promise<ReconcileReport> {
  const resources = parseResources(names);
  // Only meeting logs have single views a list does not carry (their summaries): a deep sweep of nothing else.
  if (options.deep && names.length > 0 && !resources.includes('meeting-logs')) {
    throw new ConfigError(
      'invalid_option',
      `--deep re-reads every meeting log's single view, and ${names.join(', ')} has none to re-read: add meeting-logs, or drop --deep`,
    );
  }
  const report = await withSyncEnvironment(
    runtime,
    // A deep sweep is mostly single views: spend the summaries lane, so the scheduled walks keep their budget.
    options.deep ? { lane: 'summaries' } : {},
    (env, guard) =>
      runReconcile(env.deps, env.settings, {
        resources,
        deep: options.deep === true,
        force: options.force === true,
        concurrency: runtime.config.resourceConcurrency,
        ...(guard ? { guard } : {}),
      }),
  );
  runtime.display?.stop();
  if (runtime.interactive) runtime.out((await import('../run-tables.js')).formatReconcileReport(report));
  const failure = commandFailure(report.results, { skipped: 'reconciled' });
  if (failure) throw failure;
  return report;
}
