import { describe, expect, it } from 'vitest';
import { StampRuns } from '../../src/sync/stamp-runs.js';

const at = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, '0')}:00.000000Z`;
const rec = (id: string, minute: number) => ({ id: id.padEnd(18, 'x'), updated_at: at(minute) });
const edges = (runs: StampRuns) => {
  const found = runs.edgeStamps();
  return found && Object.fromEntries([...found].map(([stamp, ids]) => [stamp.slice(14, 16), ids]));
};

describe('StampRuns: the stamps a pass was given whole, read from where their runs lay in its pages', () => {
  it('holds a stamp whole in a page that has another stamp on each side of its run, and keeps the runs at page edges', () => {
    const runs = new StampRuns({ listStart: false });
    runs.observe([rec('a', 1), rec('b', 2), rec('c', 2), rec('d', 3)], false);
    // 1 may have begun before the page, 3 go on after it; 2 lies between them.
    expect(edges(runs)).toEqual({ '01': 1, '03': 1 });
  });

  it('takes the start of the list a pass asked for, and the end of the list, as bounds', () => {
    const runs = new StampRuns({ listStart: true });
    runs.observe([rec('a', 1), rec('b', 2)], false);
    runs.observe([rec('c', 3), rec('d', 4)], true);
    // Only 2 and 3 meet at the boundary; a cursor after the first page begins no list.
    expect(edges(runs)).toEqual({ '02': 1, '03': 1 });
    const resumed = new StampRuns({ listStart: false });
    resumed.observe([rec('a', 1), rec('b', 2)], true);
    expect(edges(resumed)).toEqual({ '01': 1 });
  });

  it('counts the ids an edge stamp was given across the boundary, and leaves it once a later page holds it whole', () => {
    const runs = new StampRuns({ listStart: true });
    runs.observe([rec('a', 1), rec('b', 5), rec('c', 5)], false);
    runs.observe([rec('c', 5), rec('d', 5), rec('e', 6)], false);
    expect(edges(runs)).toEqual({ '05': 3, '06': 1 });
    // A page that backs up past 6 holds it between 5 and 7.
    runs.observe([rec('d', 5), rec('e', 6), rec('f', 7)], true);
    expect(edges(runs)).toEqual({ '05': 3 });
  });

  it('does not take a stamp the page before held whole for an edge when the next page begins with it', () => {
    const runs = new StampRuns({ listStart: true });
    runs.observe([rec('a', 1), rec('b', 2), rec('c', 3)], false);
    runs.observe([rec('b', 2), rec('c', 3), rec('d', 4)], true);
    // 2 begins the second page, which holds 3 between 2 and 4.
    expect(edges(runs)).toEqual({});
  });

  it('reads nothing from a page out of updated_at order, one with a record without a stamp, a rejected record, or an edge of more ids than a page could hold', () => {
    const unordered = new StampRuns({ listStart: true });
    unordered.observe([rec('a', 2), rec('b', 1)], true);
    expect(unordered.edgeStamps()).toBeNull();
    const unstamped = new StampRuns({ listStart: true });
    unstamped.observe([{ id: 'a'.padEnd(18, 'x'), updated_at: 'yesterday' }], true);
    expect(unstamped.edgeStamps()).toBeNull();
    const rejected = new StampRuns({ listStart: true });
    rejected.observe([rec('a', 1)], true);
    rejected.spoil();
    expect(rejected.edgeStamps()).toBeNull();
    const large = new StampRuns({ listStart: true, maxEdgeIds: 2 });
    large.observe([rec('a', 1), rec('b', 5), rec('c', 5)], false);
    expect(edges(large)).toEqual({ '05': 2 });
    large.observe([rec('d', 5), rec('e', 6)], true);
    expect(large.edgeStamps()).toBeNull();
  });

  it('with stamps to watch, tells which of them a page held whole', () => {
    const runs = new StampRuns({ listStart: true, watch: new Set([at(5), at(6)]) });
    runs.observe([rec('a', 5), rec('b', 5), rec('c', 6)], false);
    runs.observe([rec('d', 6), rec('e', 7)], false);
    expect([...runs.watchedWhole]).toEqual([at(5)]);
  });
});
