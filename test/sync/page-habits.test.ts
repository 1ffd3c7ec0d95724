import { describe, expect, it } from 'vitest';
import { EVERY_HABIT, TIES, habitsAllowedBy, overlapBounds } from '../../src/sync/page-habits.js';

const rec = (n: number, minute: number) => ({
  id: `r${String(n).padStart(17, '0')}`,
  updated_at: `2026-03-01T10:${String(minute).padStart(2, '0')}:00Z`,
});
const fixed = (k: number) => 1 << k;

describe('habitsAllowedBy', () => {
  it('where no record near the boundary ties, allows only the overlap the ids showed (and the tie habit when it is the same)', () => {
    const tail = [rec(1, 1), rec(2, 2), rec(3, 3)];
    expect(habitsAllowedBy({ tail, tailTies: 1, tailOneStamp: false, page: [rec(3, 3), rec(4, 4)], head: 1 })).toBe(fixed(1) | TIES);
    expect(habitsAllowedBy({ tail, tailTies: 1, tailOneStamp: false, page: [rec(2, 2), rec(3, 3), rec(4, 4)], head: 2 })).toBe(fixed(2));
    expect(habitsAllowedBy({ tail, tailTies: 1, tailOneStamp: false, page: [rec(4, 4)], head: 0 })).toBe(fixed(0));
  });

  it('where the page before ended inside a tie the page orders anew, allows every overlap the stamps agree with, whatever ids the page began with', () => {
    // Records 3 to 8 share minute 3: the page before gave 3 and 4 of them, the next page begins with 6 (not 4).
    const tail = [rec(1, 1), rec(2, 2), rec(3, 3), rec(4, 3)];
    const page = [rec(6, 3), rec(5, 3), rec(7, 3), rec(8, 3), rec(9, 9)];
    const allowed = habitsAllowedBy({ tail, tailTies: 2, tailOneStamp: false, page, head: 0 });
    // Three or four would need the page to begin with minutes 1 and 2; the tie habit (two) is stamped alike.
    expect(allowed).toBe(fixed(0) | fixed(1) | fixed(2) | TIES);
  });

  it('where the page begins with the tie the page before ended with, in another order, allows every overlap the stamps agree with: a larger tie may put the same records there by chance', () => {
    const tail = [rec(1, 1), rec(2, 3), rec(3, 3), rec(4, 3)];
    const page = [rec(4, 3), rec(2, 3), rec(3, 3), rec(5, 5)];
    expect(habitsAllowedBy({ tail, tailTies: 3, tailOneStamp: false, page, head: 0 })).toBe(
      fixed(0) | fixed(1) | fixed(2) | fixed(3) | TIES,
    );
  });

  it('after a page of one stamp, the tie habit begins with none of it', () => {
    const tail = [rec(1, 3), rec(2, 3), rec(3, 3)];
    const page = [rec(4, 3), rec(5, 6)];
    expect(habitsAllowedBy({ tail, tailTies: 3, tailOneStamp: true, page, head: 0 }) & TIES).toBe(TIES);
  });
});

describe('overlapBounds', () => {
  it('counts the overlaps of the habits that give the fewest and the most: a pass counts by the fewest, so a union of passes can never settle short', () => {
    expect(overlapBounds(fixed(1) | TIES, 3, 101)).toEqual({ least: 3, most: 101 });
    expect(overlapBounds(fixed(3) | TIES, 3, 4)).toEqual({ least: 4, most: 9 });
    expect(overlapBounds(fixed(0), 3, 0)).toEqual({ least: 0, most: 0 });
    expect(overlapBounds(EVERY_HABIT, 3, 0)).toEqual({ least: 0, most: 12 });
    expect(overlapBounds(0, 3, 0)).toBeNull();
  });
});
