import { DEFAULT_PAGE_SIZE } from '../api/index.js';
import { canonicalInstant, compareInstants, nextWholeSecond } from '../core/time.js';
import type { ServiceRecord } from '../core/types.js';
import { IdHashSet } from './id-set.js';
import { EVERY_HABIT, MAX_OVERLAP, TIES, habitsAllowedBy, overlapBounds } from './page-habits.js';
import type { PassUnion } from './pass-union.js';
import { StampRuns } from './stamp-runs.js';
import type { TieRange } from './tie-passes.js';

/**
 * What one pass over a list saw that says the list may have moved under it. The spec fixes neither the order of a
 * list nor what a cursor is: over a list ordered by `updated_at` with offset cursors, a record changed behind the
 * cursor moves to the end and the unchanged records after it shift one place back, so the walk steps over one.
 * Such a pass is not clean, and the watermark may not move on it.
 */
export type DirtyReason = 'changed_during_pass' | 'id_repeated' | 'cursor_repeated' | 'before_resume' | 'detail_missing';

/**
 * How a pass's pages overlapped, at every one of its `boundaries`: each began with the last `records` records of the
 * page before (null when they did not all begin with as many), and, when `ties`, with every record of the page before
 * that shares its last `updated_at` (a cursor on `updated_at >=` alone). Handed to the next pass of the walk
 * (`PassSignals.pageOverlap`).
 */
export interface PageOverlap {
  records: number | null;
  ties?: boolean;
  boundaries: number;
  /** The habits (`page-habits`) every boundary of the walk's passes so far left possible. @defaultValue every one */
  habits?: number;
}

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
  /** The last records of the page before (id and `updated_at`), to find a page that begins where it ended. */
  private tail: ReadonlyArray<Pick<ServiceRecord, 'id' | 'updated_at'>> = [];
  /** How many records at the end of `tail` share its last `updated_at`, and whether every record of its page did. */
  private tailTies = 0;
  private tailOneStamp = false;
  /** How many records the pass's pages begin with from the end of the page before, once a boundary showed it. */
  private overlap: number | null = null;
  /** Boundaries between pages this pass has seen; whether any overlapped otherwise than the first (`fixedBroken`),
   * and whether any began otherwise than with the tie at the end of the page before (`tiesBroken`). */
  private boundaries = 0;
  private fixedBroken = false;
  private tiesBroken = false;
  /** Records received with `updated_at` at or after the pass's start: what the next pass may see again. */
  readonly recent = new Map<string, string>();
  private state: PassState;
  /** Places the pass's pages had (`PassUnion`), and whether every mark so far was an id listed twice. */
  private positions = 0;
  /** Records pages began with from the end of the page before (`boundaryOverlap`): places too, when no habit. */
  private headPlaces = 0;
  /**
   * The habits the walk's boundaries left possible, however the service orders a tie (`habitsAllowedBy`), and the
   * records the pages would have begun with under `TIES`: what the pass's places are counted by where ties ordered
   * anew by each page broke the habit its boundaries showed record by record.
   */
  private habits: number;
  private tiesOverlaps = 0;
  private onlyRepeats = true;
  /**
   * The records given, in runs of one `updated_at` (`place`), for `tieRange`: whether the pass looked as a still list
   * in that order does (`tieShaped`), the ids of the current run once it holds two, and the runs holding records
   * given twice: counting what pages began with from the page before as given twice, and not (`pastOverlaps`); with
   * the stamp of the first record of each page after the first.
   */
  private tieShaped = true;
  private given = 0;
  private runStamp: string | null = null;
  private runFirst = '';
  private readonly runIds = new Set<string>();
  private runStart = 0;
  private readonly repeats = new RepeatedRuns();
  private readonly pastOverlaps = new RepeatedRuns();
  private readonly pageStarts: (string | null)[] = [];
  /** Which stamps a page held whole, and which only at its edges (`tieRange` where habits leave places unsure). */
  private readonly stampRuns: StampRuns;
  /** A record stamped at or after the pass's start that the pass before did not see so: maybe changed during it. */
  private newSinceStart = false;

  private readonly passStart: string;
  private readonly startedAt: string;

  constructor(
    passStartedAt: string,
    private readonly known: ReadonlyMap<string, string> = new Map(),
    carried: { dirty: boolean; maxUpdatedAt: string | null } | null = null,
    /** The previous pass's `pageOverlap()`: a boundary it showed confirms this pass's. */
    private readonly overlapBefore: PageOverlap | null = null,
    /** The walk's passes together, given every id this pass receives. */
    private readonly union: PassUnion | null = null,
  ) {
    // A `Date` header has whole seconds: a record updated within that second may predate the pass. Such a change
    // behind the cursor still shows, as an id received twice.
    this.passStart = nextWholeSecond(passStartedAt);
    this.startedAt = canonicalInstant(passStartedAt) ?? passStartedAt;
    this.state = { dirty: carried?.dirty ? 'before_resume' : null, maxUpdatedAt: null };
    this.habits = overlapBefore?.habits ?? EVERY_HABIT;
    this.stampRuns = new StampRuns({ listStart: carried === null, maxEdgeIds: DEFAULT_PAGE_SIZE });
    if (carried?.maxUpdatedAt) this.observeMax(carried.maxUpdatedAt);
  }

  /** A page's records, in the order given; `last` when no page follows it. */
  observe(records: readonly Pick<ServiceRecord, 'id' | 'updated_at'>[], cursorRepeated = false, last = false): void {
    if (cursorRepeated) this.mark('cursor_repeated');
    const head = this.boundaryOverlap(records);
    this.headPlaces += head;
    const stamps = new Array<string | null>(records.length);
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      // Canonical forms (UTC, fixed width) compare as text: one conversion per record on the hot path.
      const updatedAt = canonicalInstant(record.updated_at);
      stamps[i] = updatedAt;
      // The page before ended with it, as given: the service's pages overlap (its cursor is inclusive).
      if (i < head) {
        this.place(updatedAt, record.id, true, true);
        continue;
      }
      const repeated = !this.seen.add(record.id);
      if (repeated) {
        // The same version twice in one answer is the service repeating a row (a join), not a list moving, nor a place.
        if (repeatedInPage(records, i)) continue;
        this.mark('id_repeated', true);
      }
      this.place(updatedAt, record.id, repeated);
      this.positions += 1;
      this.union?.add(record.id);
      if (updatedAt === null) continue;
      if (this.union !== null && updatedAt >= this.union.since) this.union.stamped(record.id, record.updated_at);
      if (this.state.maxUpdatedAt === null || updatedAt > this.state.maxUpdatedAt) this.state.maxUpdatedAt = updatedAt;
      if (updatedAt >= this.startedAt) {
        this.recent.set(record.id, record.updated_at);
        const before = this.known.get(record.id);
        const news = before === undefined || compareInstants(before, record.updated_at) !== 0;
        if (news) this.newSinceStart = true;
        if (news && updatedAt >= this.passStart) this.mark('changed_during_pass');
      }
    }
    this.stampRuns.observe(records, stamps, last);
  }

  /**
   * How many records `page` begins with that the page before ended with, the same versions in the same order. The
   * spec does not say a next page begins after the last record given: a service whose cursor is inclusive repeats
   * it at every boundary, and such repeats are no sign of a moving list. A list that moves shows as a boundary
   * unlike the others: a record inserted behind an offset cursor repeats one more, a deletion behind it one fewer
   * (or, where pages do not overlap, one where none do), and either makes the pass unclean. One boundary alone
   * cannot tell an inclusive cursor from a record inserted behind an offset cursor: an overlap counts as the
   * service's habit once two boundaries showed it, in this pass or the one before (see `snapshot`). Pages of a
   * pass resumed after a crash are compared from its first page on.
   *
   * A cursor on `updated_at >=` alone repeats not one record but every record sharing the last one's `updated_at`:
   * the overlap varies with the tie at each boundary. Pages that each begin with exactly that tie are that habit,
   * as steady as a fixed overlap; a page after one whose records all share a stamp begins with none of them.
   */
  private boundaryOverlap(page: readonly Pick<ServiceRecord, 'id' | 'updated_at'>[]): number {
    if (page.length === 0) return 0;
    let head = 0;
    if (this.tail.length > 0) {
      for (let k = Math.min(Math.max(MAX_OVERLAP, this.tailTies), this.tail.length, page.length); k >= 1 && head === 0; k--) {
        if (endsWith(this.tail, page, k)) head = k;
      }
      this.boundaries += 1;
      if (this.tieShaped) this.pageStarts.push(canonicalInstant(page[0]!.updated_at));
      this.habits &= habitsAllowedBy({ tail: this.tail, tailTies: this.tailTies, tailOneStamp: this.tailOneStamp, page, head });
      this.tiesOverlaps += this.tailOneStamp ? 0 : this.tailTies;
      if (this.overlap === null) this.overlap = head;
      else if (head !== this.overlap) this.fixedBroken = true;
      // After a page of one stamp, such a cursor cannot begin with the page again (it would never end): it leads on.
      if (head !== this.tailTies && !(this.tailOneStamp && head === 0)) this.tiesBroken = true;
      // Boundaries unlike each other: no habit of the service's, so a page that began with the end of the one before
      // listed those records twice, as a tie ordered anew by each page does by chance (what a union may mend).
      if (this.fixedBroken && this.tiesBroken) this.mark('id_repeated', true);
    }
    this.tailTies = trailingTies(page);
    this.tailOneStamp = this.tailTies === page.length;
    this.tail = page.slice(-Math.max(MAX_OVERLAP, this.tailTies) - 1).map(({ id, updated_at }) => ({ id, updated_at }));
    return head;
  }

  /** The rejected records of a page (after `observe`): places of the pass too; one without an id leaves the union unsure. */
  observeRejects(rejects: readonly { id: string | null }[]): void {
    if (rejects.length > 0) this.stampRuns.spoil();
    for (const reject of rejects) {
      this.positions += 1;
      if (reject.id === null) this.onlyRepeats = false;
      else this.union?.add(reject.id);
    }
  }

  /** The ids this pass received, for a `PassUnion` to begin with once the pass ended. */
  get ids(): IdHashSet {
    return this.seen;
  }

  /**
   * What the pass tells its union (`PassUnion.after`), once it ended: its places are the records it was given less
   * what its pages began with from the page before (`overlaps`).
   */
  coverage(): { positions: number; onlyRepeats: boolean } {
    const overlaps = this.overlaps();
    const dirty = this.state.dirty ?? (overlaps.byHabits ? 'id_repeated' : null);
    return { positions: this.positions + this.headPlaces - overlaps.count, onlyRepeats: this.onlyRepeats && dirty === 'id_repeated' };
  }

  /**
   * How many records the pass's pages began with from the page before, in all, as its places are counted: what the
   * boundaries showed record by record while they kept to one habit (one the walk's boundaries left possible).
   * Where a tie ordered anew by each page broke that, the fewest any habit still possible gives (`byHabits`: the
   * pass is then taken as unclean by ids given twice, which a union of passes mends), or none when none is left.
   * `sure` when every habit still possible gives as many: a boundary inside a tie says little of the habit.
   */
  private overlaps(): { count: number; byHabits: boolean; sure: boolean } {
    if (this.overlap === null) return { count: 0, byHabits: false, sure: true };
    const bounds = overlapBounds(this.habits, this.boundaries, this.tiesOverlaps);
    const sure = bounds !== null && bounds.least === bounds.most;
    const shown = !this.fixedBroken || !this.tiesBroken;
    const allowed =
      (!this.fixedBroken && this.overlap <= MAX_OVERLAP && (this.habits & (1 << this.overlap)) !== 0) ||
      (!this.tiesBroken && (this.habits & TIES) !== 0);
    if (shown && allowed) return { count: this.headPlaces, byHabits: false, sure };
    return { count: bounds?.least ?? 0, byHabits: true, sure };
  }

  /**
   * Record `id` given with canonical stamp `at`, given before in this pass when `repeat`, at the head of a page that
   * began with the end of the one before when `head` (see `tieRange`).
   */
  private place(at: string | null, id: string, repeat: boolean, head = false): void {
    if (!this.tieShaped) return;
    if (at === null || (this.runStamp !== null && at < this.runStamp)) return this.notTieShaped();
    if (at !== this.runStamp) {
      // Given twice, the first time under another stamp: the record changed in between (a `Date` ahead of the
      // records' clock hides such a change from the pass's start), which no tie does.
      if (repeat) return this.notTieShaped();
      this.repeats.endRun(this.given);
      this.pastOverlaps.endRun(this.given);
      this.runStamp = at;
      this.runStart = this.given;
      this.runFirst = id;
      this.runIds.clear();
    } else {
      if (this.runIds.size === 0) this.runIds.add(this.runFirst);
      if (repeat && !this.runIds.has(id)) return this.notTieShaped();
      // A tie too large to hold the ids of is left to the passes of the window (`PassUnion`).
      if (this.runIds.size >= MAX_RUN_IDS) return this.notTieShaped();
      this.runIds.add(id);
    }
    this.given += 1;
    if (!repeat) return;
    this.repeats.repeated(at, this.runStart);
    if (!head) this.pastOverlaps.repeated(at, this.runStart);
  }

  /**
   * Where every record this pass missed lies, once it ended unclean only by ids given twice (`TiePasses`): between
   * the stamps of those ids, with the places the pass had there. Only over a list in `updated_at` order whose pages
   * do not overlap by habit (every record given is a place; where they overlapped unlike each other, what they
   * began with from the page before was given twice too), and only when no habit still possible would count its
   * places otherwise (the passes over a tie must have as many). Where habits still possible would count them
   * otherwise, between the stamps no page held whole (`StampRuns`), to be held whole by the passes over the range
   * in pages of at most `pageSize`. Null otherwise.
   */
  tieRange(pageSize = DEFAULT_PAGE_SIZE): TieRange | null {
    if (!this.coverage().onlyRepeats || !this.tieShaped) return null;
    const overlap = this.sureOverlap();
    if (overlap === null) return this.edgeRange(pageSize);
    // Where each page began with the last record of the one before, those records are no places of their own.
    const runs = (overlap === 0 ? this.repeats : this.pastOverlaps).range(this.given);
    if (runs === null) return null;
    const { from, to } = runs;
    const overlapped = overlap === 0 ? 0 : this.pageStarts.filter((at) => at !== null && at >= from && at <= to).length;
    return { from, to, places: runs.places - overlapped, ...(overlap > 0 ? { overlap } : {}) };
  }

  /**
   * The range of the stamps no page held whole, when each may be: a page of the passes over it (one record fewer
   * each, `tiePassPageSize`) must hold the stamp's records with a record of another stamp on each side.
   */
  private edgeRange(pageSize: number): TieRange | null {
    const edges = this.stampRuns.edgeStamps();
    if (edges === null || edges.size === 0) return null;
    const stamps = [...edges.keys()].sort();
    if ([...edges.values()].some((ids) => ids + EDGE_ROOM > pageSize)) return null;
    return { from: stamps[0]!, to: stamps.at(-1)!, places: 0, edges: new Set(stamps) };
  }

  /**
   * How many records each page began with from the page before, where every habit still possible agrees and that
   * is none, or one record however ties are ordered (`TiePass` counts it so); null otherwise. One only when no other
   * habit is possible: the tie's habit may give as many in all, but not one at each boundary.
   */
  private sureOverlap(): number | null {
    const overlaps = this.overlaps();
    if (!overlaps.sure) return null;
    if (!overlaps.byHabits) return this.overlapping() ? null : 0;
    if (overlaps.count === 0) return 0;
    return this.habits === 1 << 1 ? 1 : null;
  }

  private notTieShaped(): void {
    this.tieShaped = false;
    this.runIds.clear();
  }

  /**
   * Whether the pass received a record stamped at or after its start that the pass before did not receive so: one
   * changed while it walked, maybe within the second its start names, behind the cursor (its own pass signals cannot
   * tell, see the constructor). Records the pass before saw are no such sign.
   */
  get receivedNewSinceStart(): boolean {
    return this.newSinceStart;
  }

  /** Whether the pass's pages overlap by habit: by a fixed number of records, or (that broken) by the tie at each boundary. */
  private overlapping(): boolean {
    const overlaps = this.overlaps();
    if (overlaps.byHabits) return overlaps.count > 0;
    return this.fixedBroken ? !this.tiesBroken : (this.overlap ?? 0) > 0;
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

  /**
   * A copy of what the pass saw so far: taken when a batch is handed to its commit. Pages that overlapped at fewer
   * than two boundaries (counting the pass before, when its pages overlapped alike) leave the pass unclean: that
   * could have been a record inserted behind the cursor.
   */
  snapshot(): PassState {
    const state = { ...this.state };
    if (state.dirty === null && this.overlaps().byHabits) state.dirty = 'id_repeated';
    if (state.dirty === null && this.overlapping()) {
      const b = this.overlapBefore;
      const confirms = b !== null && ((!this.fixedBroken && b.records === this.overlap) || (!this.tiesBroken && b.ties === true));
      if (this.boundaries + (confirms ? b.boundaries : 0) < 2) state.dirty = 'id_repeated';
    }
    return state;
  }

  /**
   * How this pass's pages overlapped, for the next pass: what its boundaries showed record by record (none when they
   * overlapped unlike each other) and the habits they left possible; null when that says nothing.
   */
  pageOverlap(): PageOverlap | null {
    // Boundaries that left no habit possible: the list moved, and the next pass learns afresh.
    const habits = this.habits === 0 ? EVERY_HABIT : this.habits;
    if (this.overlap === null || (this.fixedBroken && this.tiesBroken))
      return habits === EVERY_HABIT ? null : { records: null, ties: false, boundaries: 0, habits };
    return { records: this.fixedBroken ? null : this.overlap, ties: !this.tiesBroken, boundaries: this.boundaries, habits };
  }

  /** `repeat`: an id received twice, which a `PassUnion` may mend; any other mark leaves it unsure. */
  private mark(reason: DirtyReason, repeat = false): void {
    if (!repeat) this.onlyRepeats = false;
    this.state.dirty ??= reason;
  }
}

/** The runs of one stamp holding records given twice, in records given (`PassSignals.place`). */
class RepeatedRuns {
  private from: string | null = null;
  private to = '';
  private start: number | null = null;
  private end = 0;
  private inRun = false;

  /** A record of the current run (begun after `runStart` records) was given twice. */
  repeated(at: string, runStart: number): void {
    this.inRun = true;
    this.from ??= at;
    this.to = at;
    this.start ??= runStart;
  }

  /** A new run begins after `given` records. */
  endRun(given: number): void {
    if (this.inRun) this.end = given;
    this.inRun = false;
  }

  /** The stamps of the first and last runs holding a record given twice, and the records given between them. */
  range(given: number): { from: string; to: string; places: number } | null {
    if (this.from === null) return null;
    return { from: this.from, to: this.to, places: (this.inRun ? given : this.end) - (this.start ?? 0) };
  }
}

/** The most ids of one run of a stamp `tieRange` holds to check its repeats against (about 15 MB). */
const MAX_RUN_IDS = 250_000;

/** Records a page of a pass over ties needs beside an edge's ids: one of another stamp on each side, and a few passes' shrinking. */
const EDGE_ROOM = 5;

/**
 * Whether `tail` ends with the first `k` records of `page`, the same ids with the same `updated_at` (as instants:
 * the spec fixes no offset, so one record may be rendered `Z` on one page and `+09:00` on the next).
 */
function endsWith(
  tail: ReadonlyArray<Pick<ServiceRecord, 'id' | 'updated_at'>>,
  page: readonly Pick<ServiceRecord, 'id' | 'updated_at'>[],
  k: number,
): boolean {
  for (let i = 0; i < k; i++) {
    const before = tail[tail.length - k + i]!;
    const now = page[i]!;
    if (before.id !== now.id || !sameStamp(before.updated_at, now.updated_at)) return false;
  }
  return true;
}

/** How many records at the end of `page` share its last record's `updated_at`. */
function trailingTies(page: readonly Pick<ServiceRecord, 'id' | 'updated_at'>[]): number {
  const last = page[page.length - 1]!.updated_at;
  let ties = 1;
  while (ties < page.length && sameStamp(page[page.length - 1 - ties]!.updated_at, last)) ties += 1;
  return ties;
}

/** Whether `page[at]` repeats a record given earlier in the same page, the overlap too: the same id and `updated_at`. */
function repeatedInPage(page: readonly Pick<ServiceRecord, 'id' | 'updated_at'>[], at: number): boolean {
  const record = page[at]!;
  for (let i = 0; i < at; i++) if (page[i]!.id === record.id && sameStamp(page[i]!.updated_at, record.updated_at)) return true;
  return false;
}

function sameStamp(a: string, b: string): boolean {
  if (a === b) return true;
  const instant = canonicalInstant(a);
  return instant !== null && instant === canonicalInstant(b);
}
