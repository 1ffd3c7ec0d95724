import { describe, expect, it } from 'vitest';
import { laneCeiling, walkLength, type LaneWalk } from '../../devtools/walk-schedule.js';

/** Walks of list pages only: as long as they have requests. */
const chains = (...requests: number[]): LaneWalk[] => requests.map((r) => ({ requests: r, length: r }));

describe('laneCeiling', () => {
  it('is 1 when the walks fill every lane to the same length', () => {
    expect(laneCeiling(chains(100, 100, 100), 3)).toBe(1);
    expect(laneCeiling(chains(60, 40, 100, 60, 40), 3)).toBe(1);
  });

  it('is the share of the lanes one long walk leaves idle while it runs on alone', () => {
    expect(laneCeiling(chains(300), 3)).toBeCloseTo(1 / 3);
    // The e2e mix: deals and contacts (1,750 pages) outlast companies, meeting logs, contact activities and users.
    expect(laneCeiling(chains(1750, 750, 1750, 1, 750, 1), 3)).toBeCloseTo(5002 / (3 * 1750));
  });

  it('starts each walk on the first lane to come free, in the order given', () => {
    // Lanes after [10, 1, 1]: 10, 1, 1; then 9 goes to a lane at 1 (10), then 9 to the other (10).
    expect(laneCeiling(chains(10, 1, 1, 9, 9), 3)).toBe(1);
    expect(laneCeiling(chains(9, 9, 10, 1, 1), 3)).toBe(1);
    expect(laneCeiling(chains(10, 10, 1, 1, 1, 1), 2)).toBe(1);
    expect(laneCeiling(chains(1, 1, 10, 10, 1), 2)).toBeCloseTo(23 / (2 * 12));
  });

  it('counts every request of a walk whose single-record GETs run several at once, over its shorter length', () => {
    // Meeting logs: 1 list page and 200 GETs eight at a time hold a lane for 26 request times, not 201.
    const logs = { requests: 201, length: walkLength(201, 1, 8) };
    expect(logs.length).toBe(26);
    expect(laneCeiling([...chains(100, 74), logs], 3)).toBeCloseTo((100 + 74 + 201) / (3 * 100));
  });
});

describe('walkLength', () => {
  it('chains the list pages and spreads the rest over the requests in flight', () => {
    expect(walkLength(50, 50, 8)).toBe(50);
    expect(walkLength(59, 50, 8)).toBe(52);
    expect(walkLength(10, 2, 1)).toBe(10);
  });
});
