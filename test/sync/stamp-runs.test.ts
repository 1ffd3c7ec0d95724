import { describe, expect, it } from 'vitest';
import { canonicalInstant } from '../../src/core/time.js';
import { StampRuns } from '../../src/sync/stamp-runs.js';

const at = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, '0')}:00.000000Z`;
const rec = (id: string, minute: number) => ({ id: id.padEnd(18, 'x'), updated_at: at(minute) });
/** A page as a pass hands it over: the records and their canonical stamps. */
const page = (runs: StampRuns, records: { id: string; updated_at: string }[], last: boolean) =>
  runs.observe(
    records,
    records.map((r) => canonicalInstant(r.updated_at)),
    last,
  );
const edges = (runs: StampRuns) => {
  const found = runs.edgeStamps();
  return found && Object.fromEntries([...found].map(([stamp, ids]) => [stamp.slice(14, 16), ids]));
};

describe('StampRuns: the stamps a pass was given whole, read from where their runs lay in its pages', () => {
  it('holds a stamp whole in a page that has another stamp on each side of its run, and keeps the runs at page edges', () => {
    const runs = new StampRuns({ listStart: false });
    page(runs, [rec('a', 1), rec('b', 2), rec('c', 2), rec('d', 3)], false);
    // 1 may have begun before the page, 3 go on after it; 2 lies between them.
    expect(edges(runs)).toEqual({ '01': 1, '03': 1 });
  });

  it('takes the start of the list a pass asked for, and the end of the list, as bounds', () => {
    const runs = new StampRuns({ listStart: true });
    page(runs, [rec('a', 1), rec('b', 2)], false);
    page(runs, [rec('c', 3), rec('d', 4)], true);
    // Only 2 and 3 meet at the boundary; a cursor after the first page begins no list.
    expect(edges(runs)).toEqual({ '02': 1, '03': 1 });
    const resumed = new StampRuns({ listStart: false });
    page(resumed, [rec('a', 1), rec('b', 2)], true);
    expect(edges(resumed)).toEqual({ '01': 1 });
  });

  it('counts the ids an edge stamp was given across the boundary, and leaves it once a later page holds it whole', () => {
    const runs = new StampRuns({ listStart: true });
    page(runs, [rec('a', 1), rec('b', 5), rec('c', 5)], false);
    page(runs, [rec('c', 5), rec('d', 5), rec('e', 6)], false);
    expect(edges(runs)).toEqual({ '05': 3, '06': 1 });
    // A page that backs up past 6 holds it between 5 and 7.
    page(runs, [rec('d', 5), rec('e', 6), rec('f', 7)], true);
    expect(edges(runs)).toEqual({ '05': 3 });
  });

  it('does not take a stamp the page before held whole for an edge when the next page begins with it', () => {
    const runs = new StampRuns({ listStart: true });
    page(runs, [rec('a', 1), rec('b', 2), rec('c', 3)], false);
    page(runs, [rec('b', 2), rec('c', 3), rec('d', 4)], true);
    // 2 begins the second page, which holds 3 between 2 and 4.
    expect(edges(runs)).toEqual({});
  });

  it('reads nothing from a page out of updated_at order, one with a record without a stamp, a rejected record, or an edge of more ids than a page could hold', () => {
    const unordered = new StampRuns({ listStart: true });
    page(unordered, [rec('a', 2), rec('b', 1)], true);
    expect(unordered.edgeStamps()).toBeNull();
    const unstamped = new StampRuns({ listStart: true });
    page(unstamped, [{ id: 'a'.padEnd(18, 'x'), updated_at: 'yesterday' }], true);
    expect(unstamped.edgeStamps()).toBeNull();
    const rejected = new StampRuns({ listStart: true });
    page(rejected, [rec('a', 1)], true);
    rejected.spoil();
    expect(rejected.edgeStamps()).toBeNull();
    const large = new StampRuns({ listStart: true, maxEdgeIds: 2 });
    page(large, [rec('a', 1), rec('b', 5), rec('c', 5)], false);
    expect(edges(large)).toEqual({ '05': 2 });
    page(large, [rec('d', 5), rec('e', 6)], true);
    expect(large.edgeStamps()).toBeNull();
  });

  it('reads nothing from a pass with a page of one stamp that another page followed: that stamp fills a page, and no page holds it whole', () => {
    const runs = new StampRuns({ listStart: true });
    page(runs, [rec('a', 1), rec('b', 5)], false);
    expect(edges(runs)).toEqual({ '05': 1 });
    page(runs, [rec('c', 5), rec('d', 5)], false);
    page(runs, [rec('e', 5), rec('f', 6)], true);
    expect(runs.edgeStamps()).toBeNull();
    // The list's last page may be one stamp: it ends the stamp's run.
    const ending = new StampRuns({ listStart: false });
    page(ending, [rec('a', 1), rec('b', 5)], false);
    page(ending, [rec('c', 5), rec('d', 5)], true);
    expect(edges(ending)).toEqual({ '01': 1, '05': 3 });
  });

  it('with stamps to watch, tells which of them a page held whole, and whether one filled a page another followed', () => {
    const runs = new StampRuns({ listStart: true, watch: new Set([at(5), at(6)]) });
    page(runs, [rec('a', 5), rec('b', 5), rec('c', 6)], false);
    page(runs, [rec('d', 6), rec('e', 7)], false);
    expect([...runs.watchedWhole]).toEqual([at(5)]);
    expect(runs.unholdable).toBe(false);
    page(runs, [rec('f', 7), rec('g', 7)], false);
    expect(runs.unholdable).toBe(false);
    page(runs, [rec('h', 7), rec('i', 8)], false);
    const filled = new StampRuns({ listStart: true, watch: new Set([at(6)]) });
    page(filled, [rec('a', 5), rec('c', 6)], false);
    page(filled, [rec('d', 6), rec('e', 6)], false);
    expect(filled.unholdable).toBe(true);
  });
});
