import type { ListOrder } from './types.js';
import type { StoredValue } from './values.js';

/** One record as the simulator keeps it: values by api_name, timestamps in microseconds. */
export interface StoredRecord {
  id: string;
  values: Record<string, StoredValue>;
  createdAt: number;
  updatedAt: number;
  /** Timestamps of this record are rendered with `+09:00` instead of `Z` (same instants). */
  jst: boolean;
}

export type { ListOrder } from './types.js';

/** A keyset position: the last record of the previous page. */
export interface Keyset {
  updatedAt: number;
  id: string;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The records of one resource, with a lazily re-sorted view in list order. Sorting is deferred to the next list
 * request, so a burst of writes costs one sort.
 */
export class RecordStore {
  private readonly byId = new Map<string, StoredRecord>();
  private sorted: StoredRecord[] | null = null;
  /** Ids in a dense array (swap-removed), for O(1) deterministic random picks. */
  private readonly slots: string[] = [];
  private readonly slotOf = new Map<string, number>();

  constructor(readonly order: ListOrder) {}

  get size(): number {
    return this.byId.size;
  }

  get(id: string): StoredRecord | undefined {
    return this.byId.get(id);
  }

  values(): IterableIterator<StoredRecord> {
    return this.byId.values();
  }

  insert(record: StoredRecord): void {
    if (!this.byId.has(record.id)) {
      this.slotOf.set(record.id, this.slots.length);
      this.slots.push(record.id);
    }
    this.byId.set(record.id, record);
    this.sorted = null;
  }

  remove(id: string): boolean {
    const removed = this.byId.delete(id);
    if (removed) {
      this.sorted = null;
      const slot = this.slotOf.get(id) as number;
      const last = this.slots.pop() as string;
      if (last !== id) {
        this.slots[slot] = last;
        this.slotOf.set(last, slot);
      }
      this.slotOf.delete(id);
    }
    return removed;
  }

  /** The record at a position of the dense id array (0 <= index < size). */
  at(index: number): StoredRecord | undefined {
    const id = this.slots[index];
    return id === undefined ? undefined : this.byId.get(id);
  }

  /** Call after a record's updatedAt moved. */
  touched(): void {
    if (this.order !== 'id') this.sorted = null;
  }

  compare(a: Keyset, b: Keyset): number {
    if (this.order !== 'id' && a.updatedAt !== b.updatedAt) {
      return this.order === 'updated_at' ? a.updatedAt - b.updatedAt : b.updatedAt - a.updatedAt;
    }
    return compareIds(a.id, b.id);
  }

  ordered(): StoredRecord[] {
    if (!this.sorted) {
      this.sorted = [...this.byId.values()];
      this.sorted.sort((a, b) => this.compare(a, b));
    }
    return this.sorted;
  }

  /** Index of the first record in list order strictly after `key`. */
  indexAfter(key: Keyset): number {
    return indexAfter(this.ordered(), key, (a, b) => this.compare(a, b));
  }

  /** Index of the first record with updatedAt >= micros (only meaningful in updated_at order). */
  indexAtOrAfter(micros: number): number {
    return indexAtOrAfter(this.ordered(), micros);
  }
}

/** In a list sorted by `compare`: index of the first record strictly after `key`. */
export function indexAfter(list: readonly StoredRecord[], key: Keyset, compare: (a: Keyset, b: Keyset) => number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(list[mid] as StoredRecord, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** In a list sorted by updatedAt: index of the first record with updatedAt >= micros. */
export function indexAtOrAfter(list: readonly StoredRecord[], micros: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as StoredRecord).updatedAt < micros) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
