import { describe, expect, it } from 'vitest';
import { laneCeiling } from '../../devtools/walk-schedule.js';

describe('laneCeiling', () => {
  it('is 1 when the walks fill every lane to the same length', () => {
    expect(laneCeiling([100, 100, 100], 3)).toBe(1);
    expect(laneCeiling([60, 40, 100, 60, 40], 3)).toBe(1);
  });

  it('is the share of the lanes one long walk leaves idle while it runs on alone', () => {
    expect(laneCeiling([300], 3)).toBeCloseTo(1 / 3);
    // The e2e mix: deals and contacts (1,750 pages) outlast companies, meeting logs, contact activities and users.
    expect(laneCeiling([1750, 750, 1750, 1, 750, 1], 3)).toBeCloseTo(5002 / (3 * 1750));
  });

  it('starts each walk on the first lane to come free, in the order given', () => {
    // Lanes after [10, 1, 1]: 10, 1, 1; then 9 goes to a lane at 1 (10), then 9 to the other (10).
    expect(laneCeiling([10, 1, 1, 9, 9], 3)).toBe(1);
    // In the other order the two 9s take two lanes first and the 10 a third: still 1 lane-length of 10.
    expect(laneCeiling([9, 9, 10, 1, 1], 3)).toBe(1);
    expect(laneCeiling([10, 10, 1, 1, 1, 1], 2)).toBe(1);
    expect(laneCeiling([1, 1, 10, 10, 1], 2)).toBeCloseTo(23 / (2 * 12));
  });
});
