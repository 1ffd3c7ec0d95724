import { SalesyncError } from '../core/errors.js';
import type { RejectedRecord } from '../core/types.js';
import { rejectedFrom } from './meeting-log-details.js';

/** What a single view says of a row a complete listing left out. */
export type LookedUp<T> = 'not_found' | { reject: RejectedRecord } | { found: T };

/**
 * Ask a single view (`get`) about a row a complete listing left out: `not_found` confirms it gone (branching on the
 * code: the spec gives no status for it); an invalid answer is a reject (it exists, broken); any other failure is
 * thrown. The one rule a reconcile's confirmation and a users refresh share.
 */
export async function lookUp<T>(get: () => Promise<T>): Promise<LookedUp<T>> {
  try {
    return { found: await get() };
  } catch (error) {
    if (error instanceof SalesyncError && error.code === 'not_found') return 'not_found';
    const reject = rejectedFrom(error);
    if (reject) return { reject };
    throw error;
  }
}
