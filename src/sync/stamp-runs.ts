import { canonicalInstant } from '../core/time.js';
import type { ServiceRecord } from '../core/types.js';

/**
 * Which stamps a pass was given whole, read from where their runs lay in its pages. A list in `updated_at` order
 * gives the records of one stamp positions of their own, in whatever order it gives a tie: a page that holds a
 * stamp's run with another stamp on each side (or, on that side, the start of the list the pass asked for, or its
 * end) holds every record of that stamp, whatever habit its boundaries have. A run at a page's edge may lack records
 * that another order put across the boundary: such a stamp is an edge until a page holds it whole.
 */
export class StampRuns {
  /** Stamps seen only at a page's edge so far, with the ids given there (at most `maxEdgeIds` each). */
  private readonly edges = new Map<string, Set<string>>();
  /** Stamps the page before held whole: a page that backs up into one begins with it at its edge. */
  private wholeBefore = new Set<string>();
  /** Stamps of `watch` held whole by a page. */
  readonly watchedWhole = new Set<string>();
  private pages = 0;
  /** A page out of `updated_at` order, a record without a stamp, or an edge of more ids than `maxEdgeIds`. */
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

  /** A page's records, in the order given; `last` when no page follows it (the list's end). */
  observe(records: readonly Pick<ServiceRecord, 'id' | 'updated_at'>[], last: boolean): void {
    if (this.unreadable) return;
    const runs: { at: string; ids: string[] }[] = [];
    for (const record of records) {
      const at = canonicalInstant(record.updated_at);
      const run = runs.at(-1);
      if (at === null || (run !== undefined && at < run.at)) {
        this.unreadable = true;
        return;
      }
      if (run?.at === at) run.ids.push(record.id);
      else runs.push({ at, ids: [record.id] });
    }
    const first = this.pages++ === 0;
    const whole = new Set<string>();
    for (const [j, { at, ids }] of runs.entries()) {
      const bounded = (j > 0 || (first && this.options.listStart)) && (j < runs.length - 1 || last);
      if (bounded) {
        whole.add(at);
        this.edges.delete(at);
        if (this.options.watch?.has(at)) this.watchedWhole.add(at);
      } else if (this.options.watch === undefined && !this.wholeBefore.has(at) && !whole.has(at)) {
        const given = this.edges.get(at) ?? new Set<string>();
        for (const id of ids) given.add(id);
        this.edges.set(at, given);
        if (given.size > (this.options.maxEdgeIds ?? Infinity)) this.unreadable = true;
      }
    }
    this.wholeBefore = whole;
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
