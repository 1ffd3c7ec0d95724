import { ConfigError, SalesyncError } from '../core/errors.js';
import type { ResourceResult } from '../sync/index.js';

/** Exit code of a run that completed with records in quarantine: the mirror lacks them until they are fixed. */
export const EXIT_REJECTED = 3;

/**
 * What a command's results mean for its exit: the failure that explains them best (the first fatal one, else the
 * first of any kind), or, when nothing failed but records went to quarantine, `records_rejected`. Pure.
 */
export function commandFailure(results: readonly ResourceResult[]): SalesyncError | null {
  const failed = results.filter((r) => r.error);
  const failure = failed.find((r) => r.error?.disposition === 'fatal') ?? failed[0];
  if (failure?.error) return failure.error;
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
