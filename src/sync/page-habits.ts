import { canonicalInstant } from '../core/time.js';
import type { ServiceRecord } from '../core/types.js';

type Stamped = Pick<ServiceRecord, 'id' | 'updated_at'>;

/** The most records a page may begin with from the end of the one before and still count as an overlap. */
export const MAX_OVERLAP = 4;

/**
 * The ways a service's next page may begin with the end of the page before, as a bit mask: bit k for a fixed k
 * records (0 to `MAX_OVERLAP`), and `TIES` for every record sharing the last one's `updated_at` (a cursor on
 * `updated_at >=` alone; none after a page of one stamp, or it would never end). The habit is the service's, so the
 * boundaries of every pass of a walk narrow one mask.
 */
export const TIES = 1 << (MAX_OVERLAP + 1);
export const EVERY_HABIT = (TIES << 1) - 1;

/** One boundary between pages, as a pass saw it. */
export interface Boundary {
  /** The last records of the page before: at least `tailTies` + 1 of them, or its whole page. */
  tail: readonly Stamped[];
  /** How many records at the end of the page before share its last `updated_at`; whether all of it did. */
  tailTies: number;
  tailOneStamp: boolean;
  page: readonly Stamped[];
  /** How many records the page began with that the page before ended with, the same ids in the same order. */
  head: number;
}

/**
 * The habits a boundary leaves possible. Over a list in `updated_at` order a record's place is fixed by its stamp,
 * unless it ties: a service may order a tie anew for each page, so the records a page begins with from the page
 * before need not be the ones that page ended with. Where no record near the boundary ties the last one, the
 * page began with exactly `head` records of the page before, however ties are ordered; elsewhere only the stamps
 * bind (each overlapped place has the stamp it had on the page before). Pure.
 */
export function habitsAllowedBy(boundary: Boundary): number {
  const { tail, tailTies, page, head } = boundary;
  const last = stampOf(tail[tail.length - 1]!);
  const ties = boundary.tailOneStamp ? 0 : tailTies;
  const shown = clearHead(boundary, last);
  if (shown !== null) return (shown <= MAX_OVERLAP ? 1 << shown : 0) | (shown === ties ? TIES : 0);
  let allowed = 0;
  for (let k = 0; k <= MAX_OVERLAP; k++) if (k === head || stampsAgree(tail, page, k, last)) allowed |= 1 << k;
  if (ties === head || stampsAgree(tail, page, ties, last)) allowed |= TIES;
  return allowed;
}

/**
 * How many records the pass's pages began with from the page before in all, under the habits in `habits` that give
 * the fewest and the most. A pass counts its places by the fewest: too few only makes a union of passes wait for ids
 * no pass can name, too many would let it settle short. Null when no habit is left. Pure.
 */
export function overlapBounds(habits: number, boundaries: number, tiesOverlaps: number): { least: number; most: number } | null {
  const counts: number[] = [];
  for (let k = 0; k <= MAX_OVERLAP; k++) if ((habits & (1 << k)) !== 0) counts.push(k * boundaries);
  if ((habits & TIES) !== 0) counts.push(tiesOverlaps);
  return counts.length === 0 ? null : { least: Math.min(...counts), most: Math.max(...counts) };
}

/**
 * The overlap a boundary shows whatever order the service gives a tie, or null when a tie near it could hide it:
 * the last record of the page before is alone in its stamp there and the page's first record past the head is
 * stamped later, so the record given last sits at the boundary on both pages. A page that begins with the same
 * records as a tie the page before ended with, in another order, shows nothing: ordered anew, a larger tie may put
 * the same ones there by chance, its others never given.
 */
function clearHead(boundary: Boundary, last: string | null): number | null {
  const { tail, tailTies, page, head } = boundary;
  if (last === null || tailTies !== 1 || tail.length < 2 || !laterThan(page[head], last)) return null;
  return head;
}

/** Whether the page's first `k` records carry the stamps of the last `k` of the page before, and its next one no earlier. */
function stampsAgree(tail: readonly Stamped[], page: readonly Stamped[], k: number, last: string | null): boolean {
  if (k > tail.length || last === null) return false;
  for (let i = 0; i < Math.min(k, page.length); i++) if (stampOf(page[i]!) !== stampOf(tail[tail.length - k + i]!)) return false;
  const next = page[k];
  if (next === undefined) return true;
  const at = stampOf(next);
  return at !== null && at >= last;
}

function laterThan(record: Stamped | undefined, instant: string): boolean {
  if (record === undefined) return false;
  const at = stampOf(record);
  return at !== null && at > instant;
}

function stampOf(record: Stamped): string | null {
  return canonicalInstant(record.updated_at);
}
