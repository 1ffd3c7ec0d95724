import { canonicalInstant, compareInstants } from '../core/time.js';
import { mayNameMore } from './give-up-odds.js';
import { IdHashSet } from './id-set.js';

/**
 * How many times `SALESYNC_MAX_PASSES` a walk may take while its passes together keep naming ids none named before:
 * a tie of 350 records ordered anew by each page of 200 leaves about a quarter of it out of each pass, and six passes
 * together name it all.
 */
export const UNION_PASS_FACTOR = 3;

/** What a pass that ended tells its union (`PassSignals.coverage` with the pass's largest `updated_at`). */
export interface PassCoverage {
  /** Places the pass's pages had: records and rejects past each page's overlap with the one before. */
  positions: number;
  /** The pass was unclean only because ids came twice: nothing changed, no cursor repeated, every reject had an id. */
  onlyRepeats: boolean;
  /**
   * It received a record stamped at or after its start that the pass before did not receive so
   * (`PassSignals.receivedNewSinceStart`): changed while it walked, maybe behind its cursor within the second its
   * start names, which shows only as an id given twice.
   */
  newSinceStart: boolean;
  maxUpdatedAt: string | null;
}

/**
 * The passes of one walk over a list that stood still, taken together. An offset list ordering a tie of `updated_at`
 * by the page asked for lists one of its records twice and another never at each boundary the tie straddles; a tie
 * larger than a page straddles one whatever the page size, so no single pass is clean, run after run. But a still
 * list has as many records as a pass had places, and each pass places them differently: once the passes together
 * named as many ids as each pass had places, every record of the window was received (and written by its pass).
 *
 * The list stood still while the union's passes received no record stamped at or after the first one's start that
 * the first one did not receive as it was, none received one stamped since its own start that the pass before it did
 * not (a change, a creation), and each had as many places (a deletion has one fewer). Any pass that breaks either starts the union afresh. Records the first pass received so are no such sign:
 * a `Date` header behind the records' clock stamps changes made before the union began after its start. Ids are kept
 * as 48-bit hashes: a collision counts one id fewer, so it can only delay the union.
 */
export class PassUnion {
  private positions: number | null = null;
  private max: string | null = null;
  /** Ids the union held after the pass before, and how many passes in a row since named none new. */
  private held = 0;
  private idle = 0;
  /** The share of its places the first pass named no id for: how likely a pass is to leave out any one record. */
  private leftOut = 0;
  /** A pass received a record stamped at or after `since` that the first pass did not receive so. */
  private moved = false;
  /** `startedAt` as a canonical instant, for `PassSignals` to compare stamps with. */
  readonly since: string;

  constructor(
    /** The service's time the union's first pass started. */
    readonly startedAt: string,
    /** The ids the first pass received (its own set, taken over once it ended: a clean pass never needs one more). */
    private readonly ids: IdHashSet = new IdHashSet(),
    /** The records the first pass received stamped at or after its start, with their `updated_at` (`PassSignals.recent`). */
    private readonly firstRecent: ReadonlyMap<string, string> = new Map(),
  ) {
    this.since = canonicalInstant(startedAt) ?? startedAt;
  }

  /** Records received by the current pass: ids into the union. */
  add(id: string): void {
    this.ids.add(id);
  }

  /** A record the current pass received stamped at or after `since`. */
  stamped(id: string, updatedAt: string): void {
    const first = this.firstRecent.get(id);
    if (first === undefined || compareInstants(first, updatedAt) !== 0) this.moved = true;
  }

  /**
   * After a pass that was not clean on its own: `covered` when the union's passes, this one included, received every
   * record of the window; `open` when they may with another pass; `broken` when this pass shows the list moved, or a
   * flaw the union cannot mend, and the union must start again with the next pass.
   */
  after(pass: PassCoverage): 'covered' | 'open' | 'broken' {
    if (!pass.onlyRepeats || (this.positions !== null && this.positions !== pass.positions)) return 'broken';
    // Even one stamped within the second the union began: a change behind the cursor then shows only as an id given
    // twice (`PassSignals`), which is all the union would mend. The run after it, a second later, settles it.
    if (this.moved || pass.newSinceStart) return 'broken';
    if (this.positions === null) this.leftOut = 1 - this.ids.size / Math.max(1, pass.positions);
    this.positions = pass.positions;
    this.idle = this.ids.size > this.held ? 0 : this.idle + 1;
    this.held = this.ids.size;
    if (pass.maxUpdatedAt !== null && (this.max === null || compareInstants(pass.maxUpdatedAt, this.max) > 0)) this.max = pass.maxUpdatedAt;
    return this.ids.size === pass.positions ? 'covered' : 'open';
  }

  /**
   * Whether another pass may name the rest (`mayNameMore`): a tie split in two by a boundary leaves any one record
   * out of about a quarter of the passes, so two passes in a row that named nothing new say little.
   */
  get gaining(): boolean {
    return this.positions === null || mayNameMore(this.idle, this.positions - this.held, this.leftOut);
  }

  /** The largest `updated_at` the union's passes received. */
  get maxUpdatedAt(): string | null {
    return this.max;
  }
}
