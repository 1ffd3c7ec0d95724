import type { ServiceRecord } from '../core/types.js';

/** The first and last runs of one page: their stamps, and whether the list's start or end bounds them too. */
interface PageEnds {
  first: string;
  last: string;
  firstWhole: boolean;
  lastWhole: boolean;
}

/**
 * Which stamps a pass was given whole, read from where their runs lay in its pages. A list in `updated_at` order
 * gives the records of one stamp positions of their own, in whatever order it gives a tie: a page that holds a
 * stamp's run with another stamp on each side (or, on that side, the start of the list the pass asked for, or its
 * end) holds every record of that stamp, whatever habit its boundaries have. A run at a page's edge may lack records
 * that another order put across the boundary: such a stamp is an edge until a page holds it whole.
 *
 * Pages are contiguous: every stamp strictly between a page's first and last exists only in that page, so only the
 * two runs at its edges are read record by record.
 */
export class StampRuns {
  /** Stamps seen only at a page's edge so far, with the ids given there (at most `maxEdgeIds` each). */
  private readonly edges = new Map<string, Set<string>>();
  /** Stamps of `watch` held whole by a page. */
  readonly watchedWhole = new Set<string>();
  /** A stamp of `watch` filled a page that another followed: no page of that size or less can hold it whole. */
  unholdable = false;
  private before: PageEnds | null = null;
  private pages = 0;
  /**
   * A page out of `updated_at` order, a record without a stamp, an edge of more ids than `maxEdgeIds`, or a page of
   * one stamp that another followed (that stamp's records fill a page: none holds them whole).
   */
  private unreadable = false;

  constructor(
    private readonly options: {
      /** The pass's first page begins its list (no cursor): its first run is bounded on that side. */
      listStart: boolean;
      /** Stamps whose proof is wanted (`watchedWhole`); edges are then not kept. @defaultValue none */
      watch?: ReadonlySet<string>;
      /** An edge holding more ids than this cannot be held whole by one page. @defaultValue no limit */
      maxEdgeIds?: number;
    },
  ) {}

  /**
   * A page's records, in the order given, with their canonical `updated_at` (`stamps`, null where a record has
   * none); `last` when no page follows it (the list's end).
   */
  observe(records: readonly Pick<ServiceRecord, 'id'>[], stamps: readonly (string | null)[], last: boolean): void {
    const listStart = this.pages++ === 0 && this.options.listStart;
    if (this.unreadable || records.length === 0) return;
    for (let i = 0; i < stamps.length; i++) {
      const at = stamps[i];
      if (at === null || at === undefined || (i > 0 && at < stamps[i - 1]!)) {
        this.unreadable = true;
        return;
      }
    }
    const first = stamps[0]!;
    const final = stamps[stamps.length - 1]!;
    const oneStamp = first === final;
    const ends: PageEnds = {
      first,
      last: final,
      firstWhole: listStart && (!oneStamp || last),
      lastWhole: last && (!oneStamp || listStart),
    };
    const { watch } = this.options;
    if (oneStamp && !last) {
      // However the boundaries overlap, this stamp has at least a page of records: no page holds them whole.
      if (!watch) {
        this.unreadable = true;
        return;
      }
      if (watch.has(first)) this.unholdable = true;
    }
    if (watch) {
      for (let i = 0; i < stamps.length; i++) {
        const at = stamps[i]!;
        if (i > 0 && at === stamps[i - 1]) continue;
        if (isWhole(ends, at) && watch.has(at)) this.watchedWhole.add(at);
      }
    } else {
      // The page before's edges that this page holds between others (it began before them).
      for (const at of this.before ? [this.before.first, this.before.last] : []) if (isWhole(ends, at)) this.edges.delete(at);
      this.edge(records, stamps, ends, first, true);
      if (!oneStamp) this.edge(records, stamps, ends, final, false);
    }
    this.before = ends;
  }

  /** The run of `at` at one edge of the page: kept as an edge unless this page or the one before held it whole. */
  private edge(
    records: readonly Pick<ServiceRecord, 'id'>[],
    stamps: readonly (string | null)[],
    ends: PageEnds,
    at: string,
    leading: boolean,
  ): void {
    if (isWhole(ends, at)) {
      this.edges.delete(at);
      return;
    }
    if (this.before !== null && isWhole(this.before, at)) return;
    const given = this.edges.get(at) ?? new Set<string>();
    if (leading) for (let i = 0; i < stamps.length && stamps[i] === at; i++) given.add(records[i]!.id);
    else for (let i = stamps.length - 1; i >= 0 && stamps[i] === at; i--) given.add(records[i]!.id);
    this.edges.set(at, given);
    if (given.size > (this.options.maxEdgeIds ?? Infinity)) this.unreadable = true;
  }

  /** A page held records the pass cannot place by stamp (rejected ones): no stamp's run can be read from it. */
  spoil(): void {
    this.unreadable = true;
  }

  /** Stamps no page of the pass held whole, with the ids given of each, or null when its pages could not be read so. */
  edgeStamps(): ReadonlyMap<string, number> | null {
    return this.unreadable ? null : new Map([...this.edges].map(([at, ids]) => [at, ids.size]));
  }
}

/** Whether a page with these ends held every record stamped `at`. */
function isWhole(ends: PageEnds, at: string): boolean {
  if (at === ends.first) return ends.firstWhole;
  if (at === ends.last) return ends.lastWhole;
  return at > ends.first && at < ends.last;
}
