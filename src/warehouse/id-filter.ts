/**
 * A set of ids that never answers "none" for an id it holds and rarely "maybe" for one it does not (a scalable
 * Bloom filter): what lets a first load skip looking up each batch's ids in a table that grows with every batch.
 * Pure: no I/O.
 */

/** Bits per id a segment is sized for, and the bits each id sets in it: about 3 in 10 million ids wrongly "maybe". */
const BITS_PER_ID = 32;
const PROBES = 16;
/** Ids the first segment holds; each next one holds twice as many (a segment is full at its capacity). */
const FIRST_CAPACITY = 1 << 16;
/** The most all segments together may take: past it the filter is full and answers "maybe" for every id. */
export const ID_FILTER_MAX_BYTES = 16 * 2 ** 20;

interface Segment {
  words: Uint32Array;
  /** The bits' count less one (a power of two less one): an index's mask. */
  mask: number;
  capacity: number;
  held: number;
}

/** Ids as `NdjsonRows.ids` holds them (newline-joined), or a list. */
export type IdList = string | readonly string[];

/** Each id of `ids` as [start, end) in the joined text, or each list item whole. */
function eachId(ids: IdList, each: (text: string, start: number, end: number) => boolean | void): boolean {
  if (typeof ids !== 'string') {
    for (const id of ids) if (each(id, 0, id.length) === true) return true;
    return false;
  }
  if (ids.length === 0) return false;
  let start = 0;
  for (;;) {
    const newline = ids.indexOf('\n', start);
    const end = newline === -1 ? ids.length : newline;
    if (each(ids, start, end) === true) return true;
    if (newline === -1) return false;
    start = newline + 1;
  }
}

/** Two independent 32-bit hashes of `text[start, end)` (FNV-1a, then murmur3's finalizer for the second). */
function hashes(text: string, start: number, end: number): [number, number] {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i += 1) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  let g = h ^ (end - start);
  g = Math.imul(g ^ (g >>> 16), 0x85ebca6b);
  g = Math.imul(g ^ (g >>> 13), 0xc2b2ae35);
  g ^= g >>> 16;
  // Odd: the probes h + i·g then cycle through every bit of a power-of-two segment.
  return [h >>> 0, (g | 1) >>> 0];
}

export class IdFilter {
  private readonly segments: Segment[] = [];
  private bytes = 0;
  private full = false;

  constructor(private readonly maxBytes = ID_FILTER_MAX_BYTES) {}

  /** Whether the filter has stopped taking ids (its memory is spent): it then answers "maybe" for every id. */
  get isFull(): boolean {
    return this.full;
  }

  /** Hold `ids`; false when the filter is full (then it holds none reliably and should be let go). */
  add(ids: IdList): boolean {
    if (this.full) return false;
    eachId(ids, (text, start, end) => {
      const segment = this.openSegment();
      if (segment === null) return true;
      const [h, g] = hashes(text, start, end);
      for (let i = 0; i < PROBES; i += 1) {
        const bit = (h + Math.imul(i, g)) & segment.mask;
        segment.words[bit >>> 5]! |= 1 << (bit & 31);
      }
      segment.held += 1;
      return false;
    });
    return !this.full;
  }

  /** Whether any of `ids` may be held: false only when none is. */
  mayHoldAny(ids: IdList): boolean {
    if (this.full) return true;
    return eachId(ids, (text, start, end) => {
      const [h, g] = hashes(text, start, end);
      return this.segments.some((segment) => {
        for (let i = 0; i < PROBES; i += 1) {
          const bit = (h + Math.imul(i, g)) & segment.mask;
          if ((segment.words[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
        }
        return true;
      });
    });
  }

  /** The segment to add to, a new one when the last is at capacity; null once the memory is spent. */
  private openSegment(): Segment | null {
    const last = this.segments[this.segments.length - 1];
    if (last !== undefined && last.held < last.capacity) return last;
    const capacity = last === undefined ? FIRST_CAPACITY : 2 * last.capacity;
    const bytes = (capacity * BITS_PER_ID) / 8;
    if (this.bytes + bytes > this.maxBytes) {
      this.full = true;
      this.segments.length = 0;
      return null;
    }
    const segment: Segment = { words: new Uint32Array(bytes / 4), mask: capacity * BITS_PER_ID - 1, capacity, held: 0 };
    this.segments.push(segment);
    this.bytes += bytes;
    return segment;
  }
}

/**
 * After a batch was written to `table`: the filter of each table seen empty (`filters`) holds the batch's ids
 * from then on. A batch that found the table empty starts its filter; one whose ids are unknown (`undefined`) or
 * that fills the filter ends it: the table's next batches look their ids up again.
 */
export function noteWrittenIds(filters: Map<string, IdFilter>, table: string, ids: string | undefined, emptyBefore: boolean): void {
  if (emptyBefore) filters.set(table, new IdFilter());
  const filter = filters.get(table);
  if (filter === undefined) return;
  if (ids === undefined || !filter.add(ids)) filters.delete(table);
}
