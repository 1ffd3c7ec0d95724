/** A batch's records gathered page by page as the rows the warehouse writes: a walk holds bytes, not records. */
import type { ServiceRecord } from '../core/types.js';
import type { ColumnPlan, RecordBuffer } from './types.js';
import { isFixedWidth, joinIds, NdjsonRows, recordEncoder, replacesHeld, stampOf, type SpillOptions, type Stamp } from './rows.js';
import type { SlabPool } from './slab-pool.js';
import { eachInTurns, ENCODE_TURN_MS } from './encode-turns.js';
import { canonicalInstant } from '../core/time.js';

/** Records as they came, for a batch whose table's plan was not known when it began: encoded at its commit. */
export class RecordList implements RecordBuffer {
  readonly records: ServiceRecord[] = [];

  get added(): number {
    return this.records.length;
  }

  add(records: readonly ServiceRecord[]): Promise<void> {
    for (const record of records) this.records.push(record);
    return Promise.resolve();
  }
}

/**
 * The bytes of rows a batch holds in memory before they go on to its stage file (`NdjsonRows`' spill): a batch
 * that grows while the writer is busy then costs the process no more than this.
 */
export const BATCH_SPILL_BYTES = 4 * 2 ** 20;

export interface EncodedRecordsOptions {
  /** Where rows past `spill.bytes` go. @defaultValue none: every row stays in memory */
  spill?: SpillOptions;
  /** Where the rows' chunks are carved from (`SlabPool`). @defaultValue none: each chunk a buffer of its own */
  slabs?: SlabPool;
  /**
   * Encode each row's key line too (`EncodedRow`), which only a batch that finds stored rows reads: a walk whose
   * batches find none (a first load) spares the work. @defaultValue true
   */
  keyLines?: boolean;
  /** See `eachInTurns`. */
  turnMs?: number;
  now?: () => number;
}

/**
 * Records encoded as they are added, with the plan the table had when the batch began (`plan`; re-encoded at the
 * commit if it changed), one row per id by the batch's rule (`replacesHeld`). A record without a valid
 * `updated_at` makes the batch one that cannot be written (`invalid`), as `dedupeBatch` would.
 *
 * The records themselves die with their page: a batch of JS objects outlived the collector's young generation and
 * was copied into the old one (the heap grew with the batches in flight), while its rows are smaller and held
 * outside the heap.
 */
export class EncodedRecords implements RecordBuffer {
  added = 0;
  readonly rows: NdjsonRows;
  /** Why the batch cannot be written: the first record found without a valid `updated_at`. */
  invalid: { error: unknown } | undefined;
  /** Each id's row (its line), while records may still come. */
  private held: Map<string, number> | null = new Map();
  /** By line: what decides whether a later record of its id replaces it (`stampOf`, kept as one string). */
  private stamps: string[] = [];
  private readonly encode: ReturnType<typeof recordEncoder>;
  private readonly turnMs: number;
  private readonly now: () => number;

  constructor(
    readonly plan: readonly ColumnPlan[],
    readonly syncedAt: string,
    readonly observedWins: boolean,
    options: EncodedRecordsOptions = {},
  ) {
    this.encode = recordEncoder(plan, syncedAt, options.keyLines ?? true);
    this.rows = new NdjsonRows(options.spill, options.slabs);
    this.turnMs = options.turnMs ?? ENCODE_TURN_MS;
    this.now = options.now ?? (() => performance.now());
  }

  /** Encode `records`, in turns of the event loop (`eachInTurns`). */
  add(records: readonly ServiceRecord[]): Promise<void> {
    return eachInTurns(records, (record) => this.take(record), this.turnMs, this.now);
  }

  /** The rows, once every record is in: the dedupe index is let go (a batch waiting for the writer holds only rows). */
  close(): NdjsonRows {
    // Each id held is one row's, the rows of ids met again dropped.
    if (this.held !== null) this.rows.ids = joinIds(this.held.keys());
    this.held = null;
    this.stamps = [];
    return this.rows;
  }

  private take(record: ServiceRecord): void {
    if (this.held === null) throw new Error('EncodedRecords: a record was added after the buffer was closed');
    this.added += 1;
    if (this.invalid) return;
    let stamp: Stamp;
    try {
      stamp = stampOf(record);
    } catch (error) {
      this.invalid = { error };
      return;
    }
    const line = this.held.get(record.id);
    if (line !== undefined) {
      if (!replacesHeld(stamp, () => unpack(this.stamps[line]!), this.observedWins)) return;
      this.rows.drop(line);
    }
    this.held.set(record.id, this.rows.pushed);
    if (!this.observedWins) this.stamps[this.rows.pushed] = pack(stamp);
    this.rows.pushEncoded(this.encode(record, stamp.instant));
  }
}

// A stamp as one string: its canonical instant when fixed-width (compared as text), else the text it came as
// (compared exactly, as `atOrAfter` does, by parsing). Half the memory of the pair, for every record of a batch.
const pack = (stamp: Stamp): string => (isFixedWidth(stamp.instant) ? stamp.instant : stamp.text);
const unpack = (packed: string): Stamp => {
  const instant = canonicalInstant(packed)!;
  return { instant, text: packed };
};
