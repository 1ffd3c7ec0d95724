import { DEFAULT_PAGE_SIZE } from '../api/index.js';
import { canonicalInstant } from '../core/time.js';
import type { ServiceRecord } from '../core/types.js';
import { mayNameMore } from './give-up-odds.js';
import { IdHashSet } from './id-set.js';
import { StampRuns } from './stamp-runs.js';

/** The `updated_at` stamps (canonical instants, both included) between which every record a pass missed lies. */
export interface TieRange {
  from: string;
  to: string;
  /** Places the pass of the window had in the range: every pass over it must have as many. */
  places: number;
  /**
   * Records each page after the first began with from the page before, however ties are ordered: those a pass
   * over the range is given there are no places of their own. @defaultValue 0
   */
  overlap?: number;
  /**
   * Stamps the window's pass held only at a page's edge, where the habits its boundaries left possible would count
   * its places otherwise (`StampRuns`): then the passes over the range are done once a page of theirs held each of
   * these whole, whatever their places. @defaultValue none: by places
   */
  edges?: ReadonlySet<string>;
}

/** The whole-window pass the passes over a tie stand on: it received every record of its window outside their range. */
export interface TieBase {
  /** The service's time it started, and the largest `updated_at` it received (the watermark's terms). */
  passStartedAt: string;
  maxUpdatedAt: string | null;
  /** Pages it was given: the next incremental walk lists the window again when more than one (`nextConfirmFrom`). */
  pages: number;
}

/**
 * How many times `SALESYNC_MAX_PASSES` a walk may take while passes over a tie alone keep naming ids none named
 * before. Each such pass leaves out about e⁻¹ of a tie larger than a page (every page takes its records in an order
 * of its own), so the passes together leave out n·e⁻ᵏ after k of them: 24 passes at the default name a tie of ten
 * million, and each lists the tie alone, not the window.
 */
export const TIE_PASS_FACTOR = 8;

/**
 * The passes over a tie (or a few) of one walk, taken together. An offset list ordered by `updated_at` that orders a
 * tie anew on each page lists some of it twice and some never wherever a page boundary falls inside it, and nowhere
 * else: stamps that tie no other hold their places. So once a pass over a still window was unclean only by ids it
 * was given twice, every record it missed shares an `updated_at` with one it was given twice (`PassSignals.tieRange`),
 * and passes that ask for `updated_after` the range's start and stop past its end list that range alone: a tie of
 * thousands costs pages of the tie, not passes of the window, and such passes together name it all.
 *
 * The range stood still while each pass had as many places in it as the window's pass: a record leaving it (a
 * change, which stamps it later; a deletion) leaves one place fewer, and no record joins a range that lies in the
 * past. A record leaving it after the last pass counted it is the next walk's (stamped after the window's pass began).
 */
export class TiePasses {
  /** Ids in the range the passes received. Hashes: a collision counts one id fewer, so it can only delay the union. */
  private readonly ids = new IdHashSet();
  private held = 0;
  private idle = 0;
  private made = 0;
  /** The share of the range's records the first pass left out: how likely a pass is to leave out any one record. */
  private leftOut = 0;
  /** The range's edge stamps no pass over it has held whole yet (`TieRange.edges`). */
  private readonly open: Set<string>;

  constructor(
    readonly range: TieRange,
    readonly base: TieBase,
  ) {
    this.open = new Set(range.edges);
  }

  /** The next pass over the range. */
  next(): TiePass {
    this.made += 1;
    if (!this.range.edges) return new TiePass(this.range, this.ids);
    // Past the last edge still open, the pass has seen every page that could hold one whole.
    const until = this.openBounds()?.last ?? this.range.to;
    return new TiePass(this.range, this.ids, { stamps: new StampRuns({ listStart: true, watch: this.open }), until });
  }

  /**
   * The `updated_after` the next pass asks for: the range's start, or over edges the first one not yet held whole,
   * which the pass's first page then begins with (and holds whole, when a page has room for it).
   */
  get from(): string {
    return this.range.edges ? (this.openBounds()?.first ?? this.range.from) : this.range.from;
  }

  /** The first and last edge stamps not yet held whole, or null when none is left. */
  private openBounds(): { first: string; last: string } | null {
    let bounds: { first: string; last: string } | null = null;
    for (const at of this.open) {
      if (bounds === null) bounds = { first: at, last: at };
      else if (at < bounds.first) bounds.first = at;
      else if (at > bounds.last) bounds.last = at;
    }
    return bounds;
  }

  /** Passes over the range made so far. */
  get passes(): number {
    return this.made;
  }

  /**
   * After a pass: `covered` when the passes together received every record of the range, `open` when another pass
   * may name the rest, `broken` when the range moved (or a pass saw what it cannot count, or an edge no page can
   * hold whole): no more passes over it.
   */
  after(pass: TiePass): 'covered' | 'open' | 'broken' {
    if (pass.stamps) {
      // An edge that fills a page is never held whole: the window goes back to passes of its own.
      if (pass.spoiled || pass.stamps.unholdable) return 'broken';
      const before = this.open.size;
      for (const at of pass.stamps.watchedWhole) this.open.delete(at);
      this.idle = this.open.size < before ? 0 : this.idle + 1;
      return this.open.size === 0 ? 'covered' : 'open';
    }
    if (pass.spoiled || pass.positions !== this.range.places) return 'broken';
    if (this.made === 1) this.leftOut = 1 - this.ids.size / Math.max(1, this.range.places);
    this.idle = this.ids.size > this.held ? 0 : this.idle + 1;
    this.held = this.ids.size;
    return this.ids.size === pass.positions ? 'covered' : 'open';
  }

  /**
   * Whether another pass may name the rest (`mayNameMore`); over edges, whether the last two held any whole: each
   * pass asks for a page one record smaller, so its boundaries fall elsewhere.
   */
  get gaining(): boolean {
    if (this.range.edges) return this.idle < 2;
    return mayNameMore(this.idle, this.range.places - this.held, this.leftOut);
  }
}

/** One pass over a tie's range: its places there, the ids into the union, where it may stop. */
export class TiePass {
  /** Records the pass received in the range, each place counted (an id given twice, twice). */
  positions = 0;
  /** The pass saw what a place count cannot vouch for: a list out of `updated_at` order, a reject, a missing detail. */
  spoiled = false;
  private past = false;
  private last: string | null = null;
  private pages = 0;

  /** Over edge stamps (`TieRange.edges`): which of them its pages held whole. */
  readonly stamps: StampRuns | null;
  /** The last stamp the pass must see past (`pastRange`): the range's end, or the last edge still open. */
  private readonly until: string;

  constructor(
    private readonly range: TieRange,
    private readonly ids: IdHashSet,
    edges: { stamps: StampRuns; until: string } | null = null,
  ) {
    this.stamps = edges?.stamps ?? null;
    this.until = edges?.until ?? range.to;
  }

  /** A page's records, in the order given; `last` when no page follows it. */
  observe(records: readonly Pick<ServiceRecord, 'id' | 'updated_at'>[], last = false): void {
    // The same record twice in one answer is the service repeating a row (a join), not a place (`PassSignals`).
    const inPage = new Set<string>();
    const overlap = this.pages++ === 0 ? 0 : (this.range.overlap ?? 0);
    const stamps = new Array<string | null>(records.length);
    for (const [i, record] of records.entries()) {
      const at = canonicalInstant(record.updated_at);
      stamps[i] = at;
      if (at === null || (this.last !== null && at < this.last)) {
        this.spoiled = true;
        continue;
      }
      this.last = at;
      if (at > this.until) this.past = true;
      else if (at >= this.range.from && !inPage.has(record.id)) {
        inPage.add(record.id);
        if (i >= overlap) this.positions += 1;
        this.ids.add(record.id);
      }
    }
    this.stamps?.observe(records, stamps, last);
  }

  /** Rejected records (no `updated_at` to place them by), or listed records left out of the batch. */
  spoil(): void {
    this.spoiled = true;
  }

  /** A record stamped past the range came: in `updated_at` order, every place of the range came before it. */
  get pastRange(): boolean {
    return this.past;
  }
}

/**
 * The page size the `k`th pass over a tie asks for: one less each time, from the largest the service serves
 * (`served`, see `passPageSize`). A list ordering a tie by the page asked for orders it anew for each size. Pure.
 */
export function tiePassPageSize(k: number, served: number | null = null): number {
  const base = served === null ? DEFAULT_PAGE_SIZE : Math.min(served, DEFAULT_PAGE_SIZE);
  return Math.max(1, base - k);
}
