import { SalesyncError } from '../core/errors.js';

/** Any failure as a SalesyncError: ours pass through, anything else becomes `internal` with its message. */
export function toSalesyncError(error: unknown): SalesyncError {
  if (error instanceof SalesyncError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new SalesyncError('internal', message, { cause: error });
}
