import { ConfigError, SalesyncError } from '../core/errors.js';
import type { ResourceResult } from '../sync/index.js';

/** Exit code of a run that completed with records in quarantine: the mirror lacks them until they are fixed. */
export const EXIT_REJECTED = 3;

/**
 * What a command's results mean for its exit: the failure that explains them best (the first fatal one, else the
 * first of any kind), or, when nothing failed but records went to quarantine, `records_rejected`. With `skipped`
 * (what the command does, e.g. `reconciled`), a resource skipped because another process walked it is a failure
 * too, `walk_in_progress`: no other walk does a reconcile's or a backfill's work for it. Pure.
 */
export function commandFailure(results: readonly ResourceResult[], options: { skipped?: string } = {}): SalesyncError | null {
  const failed = results.filter((r) => r.error);
  const failure = failed.find((r) => r.error?.disposition === 'fatal') ?? failed[0];
  if (failure?.error) return failure.error;
  const skipped = options.skipped === undefined ? [] : results.filter((r) => r.outcome === 'skipped');
  if (skipped.length > 0) {
    const names = skipped.map((r) => r.resource).join(', ');
    return new SalesyncError(
      'walk_in_progress',
      `another process walked ${names} past SALESYNC_LEASE_WAIT, so ${names} ${skipped.length === 1 ? 'was' : 'were'} not ${options.skipped}: ` +
        'rerun when it is done (salesync status shows it), or raise SALESYNC_LEASE_WAIT',
      { disposition: 'retriable', context: { resources: skipped.map((r) => r.resource) } },
    );
  }
  const rejected = results.filter((r) => r.rejected > 0);
  if (rejected.length === 0) return null;
  const count = rejected.reduce((sum, r) => sum + r.rejected, 0);
  return new SalesyncError(
    'records_rejected',
    `${count} record(s) of ${rejected.map((r) => r.resource).join(', ')} failed validation and are in quarantine ` +
      '(SELECT * FROM rejected_records); everything else is written, and every later walk that sees them fixed writes them',
    { context: { rejected: count } },
  );
}

/** The documented exit code of a failure: 2 configuration, 3 records in quarantine, 130 interrupted, 1 otherwise. */
export function exitCodeFor(error: unknown, interrupted: boolean): number {
  if (error instanceof ConfigError) return 2;
  if (error instanceof SalesyncError && error.code === 'records_rejected') return EXIT_REJECTED;
  return interrupted ? 130 : 1;
}
