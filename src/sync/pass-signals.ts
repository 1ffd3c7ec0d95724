import { canonicalInstant, compareInstants, microsToIso, parseInstantMicros } from '../core/time.js';
import type { ServiceRecord } from '../core/types.js';
import { IdHashSet } from './id-set.js';

/**
 * What one pass over a list saw that says the list may have moved under it. The spec fixes neither the order of a
 * list nor what a cursor is: over a list ordered by `updated_at` with offset cursors, a record changed behind the
 * cursor moves to the end and the unchanged records after it shift one place back, so the walk steps over one.
 * Such a pass is not clean, and the watermark may not move on it.
 */
export type DirtyReason = 'changed_during_pass' | 'id_repeated' | 'cursor_repeated' | 'before_resume' | 'detail_missing';

/** A pass's observations, as committed with its checkpoints. */
export interface PassState {
  dirty: DirtyReason | null;
  /** Largest `updated_at` received in this pass (canonical ISO), or null. */
  maxUpdatedAt: string | null;
}

/**
 * Tracks one pass. `seen` ids are kept as 48-bit hashes in flat tables (`IdHashSet`, about 5–10 bytes per id), not as
 * strings or boxed numbers; a collision only costs one more pass, whose set hashes with another seed. `known` carries the records the previous pass already
 * saw at or after its own start, with their `updated_at`: seen again unchanged they are no news, so a `Date`
 * header behind the records' clock costs one extra pass, not every pass.
 *
 * A resumed pass carries what its checkpoint recorded (dirty or not, the largest `updated_at`), but not the ids it
 * saw before the interruption: an id seen on both sides of a crash is not caught by `id_repeated` (a changed
 * record still is, by its `updated_at`). Marking every resumed pass dirty would walk a whole window again after
 * each interruption.
 */
export class PassSignals {
  private readonly seen = new IdHashSet();
  /** Records received with `updated_at` at or after the pass's start: what the next pass may see again. */
  readonly recent = new Map<string, string>();
  private state: PassState;

  private readonly passStart: string;

  constructor(
    passStartedAt: string,
    private readonly known: ReadonlyMap<string, string> = new Map(),
    carried: { dirty: boolean; maxUpdatedAt: string | null } | null = null,
  ) {
    // A `Date` header has whole seconds: a record updated within that second may predate the pass. Such a change
    // behind the cursor still shows, as an id received twice.
    this.passStart = nextWholeSecond(passStartedAt);
    this.state = { dirty: carried?.dirty ? 'before_resume' : null, maxUpdatedAt: null };
    if (carried?.maxUpdatedAt) this.observeMax(carried.maxUpdatedAt);
  }

  observe(records: readonly Pick<ServiceRecord, 'id' | 'updated_at'>[], cursorRepeated = false): void {
    if (cursorRepeated) this.mark('cursor_repeated');
    for (const record of records) {
      if (!this.seen.add(record.id)) this.mark('id_repeated');
      // Canonical forms (UTC, fixed width) compare as text: one conversion per record on the hot path.
      const updatedAt = canonicalInstant(record.updated_at);
      if (updatedAt === null) continue;
      if (this.state.maxUpdatedAt === null || updatedAt > this.state.maxUpdatedAt) this.state.maxUpdatedAt = updatedAt;
      if (updatedAt >= this.passStart) {
        this.recent.set(record.id, record.updated_at);
        const before = this.known.get(record.id);
        if (before === undefined || compareInstants(before, record.updated_at) !== 0) this.mark('changed_during_pass');
      }
    }
  }

  /**
   * A listed record's single view answered `not_found`, or showed an older version than the list: the record was
   * deleted, or the single view lags the list (the spec promises no consistency between them). Left out of the
   * batch either way, so the pass has not seen its whole window: another pass lists it again.
   */
  detailMissing(): void {
    this.mark('detail_missing');
  }

  private observeMax(updatedAt: string): void {
    const canonical = canonicalInstant(updatedAt);
    if (canonical !== null && (this.state.maxUpdatedAt === null || canonical > this.state.maxUpdatedAt))
      this.state.maxUpdatedAt = canonical;
  }

  /** A copy of what the pass saw so far: taken when a batch is handed to its commit. */
  snapshot(): PassState {
    return { ...this.state };
  }

  private mark(reason: DirtyReason): void {
    this.state.dirty ??= reason;
  }
}

/** The first instant after the whole second `iso` falls in (canonical), or `iso` itself when it is unreadable. */
function nextWholeSecond(iso: string): string {
  const micros = parseInstantMicros(iso);
  if (micros === null) return iso;
  return microsToIso(micros - (((micros % 1_000_000n) + 1_000_000n) % 1_000_000n) + 1_000_000n);
}
