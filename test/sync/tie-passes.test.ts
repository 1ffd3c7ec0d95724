import { describe, expect, it } from 'vitest';
import { PassSignals } from '../../src/sync/pass-signals.js';
import { TiePasses, tiePassPageSize } from '../../src/sync/tie-passes.js';

const start = '2026-03-01T11:00:00Z';
const at = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, '0')}:00.000000Z`;
const rec = (id: string, minute: number) => ({ id: id.padEnd(18, 'x'), updated_at: at(minute) });
const base = { passStartedAt: start, maxUpdatedAt: at(50), pages: 4 };

describe('PassSignals.tieRange: where a pass unclean only by ids given twice missed what it missed', () => {
  it('is the stamps of the ids given twice across pages, over a list in updated_at order', () => {
    const signals = new PassSignals(start);
    signals.observe([rec('a', 1), rec('b', 5), rec('c', 5)]);
    signals.observe([rec('b', 5), rec('d', 9), rec('e', 9)]);
    signals.observe([rec('f', 9), rec('d', 9), rec('g', 12)]);
    // A boundary no tie touches shows that pages do not overlap: every record given is a place.
    signals.observe([rec('h', 13), rec('i', 14)]);
    // b c b d e f d: the places of the runs of 5 and 9, which hold the ids given twice.
    expect(signals.tieRange()).toEqual({ from: at(5), to: at(9), places: 7 });
  });

  it('while every boundary lies in a tie (each page may as well have begun with the last record of the one before, and the places are unknown), is the range of the stamps no page held whole, by stamps', () => {
    // Read as overlapping by one, b and d were each given at the boundary again, and nothing is missing.
    const signals = new PassSignals(start);
    signals.observe([rec('a', 1), rec('b', 5), rec('c', 5)]);
    signals.observe([rec('b', 5), rec('d', 9), rec('e', 9)]);
    signals.observe([rec('f', 9), rec('d', 9), rec('g', 12)], false, true);
    expect(signals.coverage()).toEqual({ positions: 9, onlyRepeats: true });
    // 1 begins the list and 12 ends it; 5 and 9 lie only where pages meet.
    expect(signals.tieRange()).toEqual({ from: at(5), to: at(9), places: 0, edges: new Set([at(5), at(9)]) });
    // A page of passes over the range could not hold a stamp given as often as it holds records, with one on each side.
    expect(signals.tieRange(7)).toBeNull();
  });

  it('over pages that each begin with the last record of the one before, leaves those records out of the places, however the tie was ordered there', () => {
    // Seven records (A to G) share minute 5 at places 2 to 8; pages of four, each ordering the tie its own way.
    const signals = new PassSignals(start);
    signals.observe([rec('r0', 0), rec('r1', 1), rec('A', 5), rec('B', 5)]);
    signals.observe([rec('D', 5), rec('A', 5), rec('E', 5), rec('B', 5)]);
    signals.observe([rec('E', 5), rec('F', 5), rec('G', 5), rec('r9', 9)]);
    signals.observe([rec('r9', 9), rec('r10', 10), rec('r11', 11), rec('s11', 11)]);
    // Until a page that ended with two of one stamp is followed by one that begins with one of them, pages beginning
    // with every record of the page before that shares its stamp would fit as well: no range by places yet, and none by
    // the stamps no page held whole (minute 5 filled the second page: no page holds it whole).
    expect(signals.tieRange()).toBeNull();
    signals.observe([rec('s11', 11), rec('r12', 12)]);
    // Nine records given in the tie, two of them where a page began: seven places.
    expect(signals.tieRange()).toEqual({ from: at(5), to: at(5), places: 7, overlap: 1 });
  });

  it('is null for a clean pass, one whose records changed during it, one out of updated_at order, and one whose pages overlap by habit', () => {
    const clean = new PassSignals(start);
    clean.observe([rec('a', 1), rec('b', 2)]);
    clean.observe([rec('c', 3)]);
    expect(clean.tieRange()).toBeNull();

    const changed = new PassSignals(start);
    changed.observe([rec('a', 1), rec('b', 2)]);
    changed.observe([rec('b', 2), { id: 'c'.padEnd(18, 'x'), updated_at: '2026-03-01T11:30:00Z' }]);
    expect(changed.tieRange()).toBeNull();

    // An id given twice with an earlier stamp than the record before it: not a tie's doing.
    const unordered = new PassSignals(start);
    unordered.observe([rec('a', 1), rec('b', 7)]);
    unordered.observe([rec('c', 8), rec('a', 1)]);
    expect(unordered.tieRange()).toBeNull();
  });

  it('over pages that overlap by habit, where a tie splits a boundary too, is by stamps: a pass over the range by places would count the heads twice', () => {
    const overlapping = new PassSignals(start);
    overlapping.observe([rec('a', 1), rec('b', 4), rec('c', 4)]);
    overlapping.observe([rec('c', 4), rec('b', 4), rec('d', 6)]);
    overlapping.observe([rec('d', 6), rec('e', 8)], false, true);
    expect(overlapping.coverage().onlyRepeats).toBe(true);
    expect(overlapping.tieRange()).toEqual({ from: at(4), to: at(6), places: 0, edges: new Set([at(4), at(6)]) });
  });

  it('by stamps is null when a page held a rejected record: the stamps of its runs cannot be read', () => {
    const signals = new PassSignals(start);
    signals.observe([rec('a', 1), rec('b', 5), rec('c', 5)]);
    signals.observeRejects([]);
    signals.observe([rec('b', 5), rec('d', 9), rec('e', 9)]);
    signals.observeRejects([{ id: 'z'.padEnd(18, 'x') }]);
    signals.observe([rec('f', 9), rec('d', 9), rec('g', 12)], false, true);
    signals.observeRejects([]);
    expect(signals.tieRange()).toBeNull();
  });

  it('is null when an id comes twice under another stamp than its first time (it changed in between: a Date ahead of the records hides that), or in another run of its stamp', () => {
    const changed = new PassSignals(start);
    changed.observe([rec('a', 1), rec('b', 5), rec('c', 5)]);
    changed.observe([rec('d', 5), rec('e', 7), rec('a', 9)]);
    expect(changed.coverage().onlyRepeats).toBe(true);
    expect(changed.tieRange()).toBeNull();

    const tie = new PassSignals(start);
    tie.observe([rec('a', 1), rec('b', 5), rec('c', 5)]);
    tie.observe([rec('d', 5), rec('b', 5), rec('e', 7)]);
    tie.observe([rec('f', 8), rec('g', 9)]);
    expect(tie.tieRange()).toEqual({ from: at(5), to: at(5), places: 4 });
  });

  it('tells whether it received a record stamped since it began that the pass before did not see so', () => {
    // Stamped within the second both passes' Date headers name: the second pass has seen it before.
    const since = { id: 'b'.padEnd(18, 'x'), updated_at: '2026-03-01T11:00:00.500000Z' };
    const before = new PassSignals(start);
    before.observe([rec('a', 1), since]);
    expect(before.receivedNewSinceStart).toBe(true);
    const quiet = new PassSignals(start, before.recent);
    quiet.observe([rec('a', 1), since]);
    expect(quiet.receivedNewSinceStart).toBe(false);
    const moved = new PassSignals(start);
    moved.observe([rec('a', 1), since]);
    // Within the second the pass's start names: no sign on its own that the list moved.
    expect(moved.snapshot().dirty).toBeNull();
  });

  it('takes in the records pages began with from the page before where the boundaries overlapped unlike each other', () => {
    const signals = new PassSignals(start);
    signals.observe([rec('a', 1), rec('b', 3)]);
    signals.observe([rec('c', 5), rec('d', 5)]); // no overlap
    signals.observe([rec('d', 5), rec('e', 7)]); // begins with the end of the page before, by chance
    signals.observe([rec('f', 9), rec('e', 7)]); // out of order: no range at all
    expect(signals.tieRange()).toBeNull();

    const byChance = new PassSignals(start);
    byChance.observe([rec('a', 1), rec('b', 3)]);
    byChance.observe([rec('c', 5), rec('d', 5)]);
    byChance.observe([rec('d', 5), rec('e', 7)]);
    byChance.observe([rec('f', 9), rec('g', 9)]);
    byChance.observe([rec('g', 9), rec('h', 11)]);
    // c d d e f g g: the heads are places of their own.
    expect(byChance.tieRange()).toEqual({ from: at(5), to: at(9), places: 7 });
  });
});

describe('TiePasses: passes over ties alone, taken together', () => {
  it('covers the range with one pass that gave each record of it once, whatever it gave before and after the range', () => {
    const ties = new TiePasses({ from: at(5), to: at(5), places: 4 }, base);
    const pass = ties.next();
    pass.observe([rec('z', 4), rec('a', 5), rec('b', 5), rec('c', 5)]);
    expect(pass.pastRange).toBe(false);
    pass.observe([rec('d', 5), rec('y', 6), rec('w', 7)]);
    expect(pass.pastRange).toBe(true);
    expect(pass.positions).toBe(4);
    expect(ties.after(pass)).toBe('covered');
  });

  it('over pages that each begin with the last record of the one before, counts no place for it, whichever record of the tie it is', () => {
    const passes = new TiePasses({ from: at(5), to: at(5), places: 7, overlap: 1 }, base);
    const pass = passes.next();
    pass.observe([rec('A', 5), rec('B', 5), rec('C', 5), rec('D', 5)]);
    pass.observe([rec('C', 5), rec('E', 5), rec('F', 5), rec('G', 5), rec('r9', 9)]);
    expect(passes.after(pass)).toBe('covered');
  });

  it('counts a record given twice in one page (a join repeating a row) as one place', () => {
    const ties = new TiePasses({ from: at(5), to: at(5), places: 3 }, base);
    const pass = ties.next();
    pass.observe([rec('a', 5), rec('b', 5), rec('b', 5)]);
    pass.observe([rec('c', 5), rec('e', 6)]);
    expect(pass.positions).toBe(3);
    expect(ties.after(pass)).toBe('covered');
  });

  it('covers the range once the passes together named as many ids as each had places', () => {
    const ties = new TiePasses({ from: at(5), to: at(5), places: 4 }, base);
    const first = ties.next();
    first.observe([rec('a', 5), rec('b', 5)]);
    first.observe([rec('b', 5), rec('d', 5), rec('e', 6)]);
    expect(ties.after(first)).toBe('open');
    const second = ties.next();
    second.observe([rec('a', 5), rec('c', 5), rec('b', 5)]);
    second.observe([rec('b', 5), rec('e', 6)]);
    expect(ties.after(second)).toBe('covered');
    expect(ties.passes).toBe(2);
  });

  it('breaks when a pass has another number of places in the range than the pass of the window (a record left it: changed or deleted), or saw what it cannot count', () => {
    // A record left the range before the first pass over it: its three places name three ids, one of them missed.
    const left = new TiePasses({ from: at(5), to: at(5), places: 4 }, base);
    const alone = left.next();
    alone.observe([rec('a', 5), rec('b', 5), rec('c', 5), rec('e', 6)]);
    expect(left.after(alone)).toBe('broken');

    const ties = new TiePasses({ from: at(5), to: at(5), places: 3 }, base);
    const first = ties.next();
    first.observe([rec('a', 5)]);
    first.observe([rec('a', 5), rec('c', 5)]);
    expect(ties.after(first)).toBe('open');
    const shrunk = ties.next();
    shrunk.observe([rec('a', 5), rec('b', 5), rec('e', 6)]);
    expect(ties.after(shrunk)).toBe('broken');

    const unordered = new TiePasses({ from: at(5), to: at(5), places: 2 }, base);
    const pass = unordered.next();
    pass.observe([rec('a', 5), rec('b', 6), rec('c', 5)]);
    expect(unordered.after(pass)).toBe('broken');

    const rejected = new TiePasses({ from: at(5), to: at(5), places: 1 }, base);
    const withReject = rejected.next();
    withReject.observe([rec('a', 5)]);
    withReject.spoil();
    expect(rejected.after(withReject)).toBe('broken');
  });

  it('stops gaining once the passes in a row that named no new id would rarely all have left out what is missing by chance', () => {
    // The first pass names 3 of 4 and one record stays missing: a pass is taken to leave out at least 37 % of what it
    // could, and 0.37^k, for k passes in a row that named nothing new, falls below 0.001 at k = 7.
    const one = new TiePasses({ from: at(5), to: at(5), places: 4 }, base);
    const idle: boolean[] = [];
    for (let k = 0; k < 8; k++) {
      const pass = one.next();
      pass.observe([rec('a', 5)]);
      pass.observe([rec('a', 5), rec('b', 5), rec('c', 5)]);
      expect(one.after(pass)).toBe('open');
      idle.push(one.gaining);
    }
    expect(idle).toEqual([true, true, true, true, true, true, true, false]);

    // A range of 100 places whose first pass left out one record (a tie split by a boundary, among records none
    // splits): its own share, a hundredth, would give up after two idle passes (0.01^2); the least share goes on.
    const diluted = new TiePasses({ from: at(5), to: at(5), places: 100 }, base);
    const records = Array.from({ length: 99 }, (_, n) => rec(`r${n}`, 5));
    for (let k = 0; k < 3; k++) {
      const pass = diluted.next();
      pass.observe(records);
      pass.observe([records[0]!]);
      expect(diluted.after(pass)).toBe('open');
    }
    expect(diluted.gaining).toBe(true);

    // Half a tie of ten missing (the first pass left out half): after one idle pass 0.5^5 is 0.03, worth another;
    // after two, 0.5^10 is not.
    const half = new TiePasses({ from: at(5), to: at(5), places: 10 }, base);
    const given = ['a', 'b', 'c', 'd', 'e'].map((id) => rec(id, 5));
    for (const expected of [true, true, false]) {
      const pass = half.next();
      // Each record on two pages.
      pass.observe(given);
      pass.observe(given);
      half.after(pass);
      expect(half.gaining).toBe(expected);
    }
  });

  it('asks each pass for one record fewer a page, from the largest page the service serves', () => {
    expect(tiePassPageSize(1)).toBe(199);
    expect(tiePassPageSize(3)).toBe(197);
    expect(tiePassPageSize(2, 100)).toBe(98);
    expect(tiePassPageSize(500, 100)).toBe(1);
  });
});

describe('TiePasses by stamps: passes over the stamps no page of the window held whole', () => {
  const edges = (...minutes: number[]) => new Set(minutes.map(at));

  it('begin at the first stamp still open, are covered once a page of theirs held each whole, and stop past the last one open', () => {
    const ties = new TiePasses({ from: at(5), to: at(9), places: 0, edges: edges(5, 9) }, base);
    expect(ties.from).toBe(at(5));
    const first = ties.next();
    // The list begins with 5 and a page ends inside 9: 5 is held whole, 9 not yet.
    first.observe([rec('a', 5), rec('b', 5), rec('c', 7), rec('d', 9)]);
    first.observe([rec('e', 9), rec('f', 10)]);
    expect(first.pastRange).toBe(true);
    expect(ties.after(first)).toBe('open');
    expect(ties.from).toBe(at(9));
    const second = ties.next();
    second.observe([rec('d', 9), rec('e', 9), rec('f', 10)]);
    expect(ties.after(second)).toBe('covered');
  });

  it('are covered by one page that held the stamp between others, however the page ordered its records', () => {
    const ties = new TiePasses({ from: at(5), to: at(5), places: 0, edges: edges(5) }, base);
    const pass = ties.next();
    pass.observe([rec('z', 4), rec('c', 5), rec('a', 5), rec('b', 5), rec('y', 6)]);
    expect(ties.after(pass)).toBe('covered');
  });

  it('stop gaining after two passes that held no stamp whole more (a list that began before the stamp asked for), and break on a page out of order', () => {
    const ties = new TiePasses({ from: at(5), to: at(5), places: 0, edges: edges(5) }, base);
    for (let k = 0; k < 2; k++) {
      expect(ties.gaining).toBe(true);
      const pass = ties.next();
      pass.observe([rec('x', 4), rec('a', 5), rec('b', 5)]);
      pass.observe([rec('c', 5), rec('y', 6)]);
      expect(ties.after(pass)).toBe('open');
    }
    expect(ties.gaining).toBe(false);

    const unordered = new TiePasses({ from: at(5), to: at(5), places: 0, edges: edges(5) }, base);
    const pass = unordered.next();
    pass.observe([rec('a', 5), rec('y', 6), rec('b', 5)]);
    expect(unordered.after(pass)).toBe('broken');
  });

  it('break at once on a page of one open stamp that another page follows: that stamp fills a page, and none holds it whole', () => {
    const ties = new TiePasses({ from: at(5), to: at(7), places: 0, edges: edges(5, 7) }, base);
    const pass = ties.next();
    pass.observe([rec('a', 5), rec('b', 5)]);
    pass.observe([rec('c', 5), rec('y', 6), rec('d', 7)]);
    pass.observe([rec('e', 7), rec('z', 8)]);
    expect(ties.after(pass)).toBe('broken');
    // A page of one stamp that no edge is, or the list's last page, says nothing of the edges.
    const others = new TiePasses({ from: at(5), to: at(7), places: 0, edges: edges(5, 7) }, base);
    const through = others.next();
    through.observe([rec('a', 5), rec('y', 6)]);
    through.observe([rec('w', 6), rec('x', 6)]);
    through.observe([rec('v', 6), rec('d', 7), rec('z', 8)]);
    expect(others.after(through)).toBe('covered');
    const ending = new TiePasses({ from: at(5), to: at(5), places: 0, edges: edges(5) }, base);
    const last = ending.next();
    last.observe([rec('a', 5), rec('b', 5)], true);
    expect(ending.after(last)).toBe('covered');
  });
});
