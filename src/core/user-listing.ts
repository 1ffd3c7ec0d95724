import { RECORD_ID_PATTERN } from './resources.js';
import type { RejectedRecord } from './types.js';

/**
 * Whether a complete users listing tells who is gone: users it does not name. Not when it is empty (an empty answer
 * is far likelier a fault than every user removed), nor when it rejected a user whose id is unusable (missing, or
 * not an id): that user could be any of them. Pure.
 */
export function listingNamesTheGone(listed: number, rejects: readonly RejectedRecord[]): boolean {
  return listed + rejects.length > 0 && rejects.every((r) => r.id !== null && RECORD_ID_PATTERN.test(r.id));
}
